"""Where each node agent the platform installs would schedule: chart defaults, read from the charts' source.

The agents come as EKS add-ons or Helm releases, so Pulumi (and a policy pack) sees
only their inputs, never the DaemonSets they render. This module holds, per
agent, the scheduling-relevant defaults of the chart behind it (nodeSelector,
affinity, tolerations) and how the chart combines them with user values, so
``infra.tooling.agents`` can evaluate placement offline. Each default names the
file and version it was read from; re-read them when you bump a version.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from infra.platform.addons import CLOUDWATCH_ADDON, NODE_MONITORING_ADDON
from infra.workloads.placement import GPU_RESOURCE

LINUX = {"kubernetes.io/os": "linux"}
TOLERATE_ALL = [{"operator": "Exists"}]


def _required(*expressions: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": list(expressions)}]
            }
        }
    }


NOT_FARGATE = {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate"]}
LINUX_ARM_OR_AMD = (
    {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
)

# aws-observability/helm-charts charts/amazon-cloudwatch-observability/values.yaml at 6.4.0
# (commit 93a934e, "release v6.4.0"): dcgmExporter.affinity's instance types. The chart
# also lists the same families with an "ml." prefix (SageMaker HyperPod); EC2 nodes
# never carry those names, so they are left out.
DCGM_EXPORTER_INSTANCE_TYPES = (
    "g3.4xlarge",
    "g3.8xlarge",
    "g3.16xlarge",
    "g3s.xlarge",
    "g4ad.2xlarge",
    "g4ad.4xlarge",
    "g4ad.8xlarge",
    "g4ad.16xlarge",
    "g4ad.xlarge",
    "g4dn.2xlarge",
    "g4dn.4xlarge",
    "g4dn.8xlarge",
    "g4dn.12xlarge",
    "g4dn.16xlarge",
    "g4dn.metal",
    "g4dn.xlarge",
    "g5.2xlarge",
    "g5.4xlarge",
    "g5.8xlarge",
    "g5.12xlarge",
    "g5.16xlarge",
    "g5.24xlarge",
    "g5.48xlarge",
    "g5.xlarge",
    "g5g.2xlarge",
    "g5g.4xlarge",
    "g5g.8xlarge",
    "g5g.16xlarge",
    "g5g.metal",
    "g5g.xlarge",
    "g6.2xlarge",
    "g6.4xlarge",
    "g6.8xlarge",
    "g6.12xlarge",
    "g6.16xlarge",
    "g6.24xlarge",
    "g6.48xlarge",
    "g6.xlarge",
    "g6e.2xlarge",
    "g6e.4xlarge",
    "g6e.8xlarge",
    "g6e.12xlarge",
    "g6e.16xlarge",
    "g6e.24xlarge",
    "g6e.48xlarge",
    "g6e.xlarge",
    "gr6.4xlarge",
    "gr6.8xlarge",
    "p2.8xlarge",
    "p2.16xlarge",
    "p2.xlarge",
    "p3.2xlarge",
    "p3.8xlarge",
    "p3.16xlarge",
    "p3dn.24xlarge",
    "p4d.24xlarge",
    "p4de.24xlarge",
    "p5.48xlarge",
    "p5e.48xlarge",
    "p5en.48xlarge",
    "p6-b200.48xlarge",
    "p6-b300.48xlarge",
    "p6e-gb200.36xlarge",
)
NEURON_MONITOR_INSTANCE_TYPES = (
    "trn1.2xlarge",
    "trn1.32xlarge",
    "trn1n.32xlarge",
    "trn2.3xlarge",
    "trn2.48xlarge",
    "trn2a.48xlarge",
    "trn2n.48xlarge",
    "trn2u.48xlarge",
    "inf1.xlarge",
    "inf1.2xlarge",
    "inf1.6xlarge",
    "inf1.24xlarge",
    "inf2.xlarge",
    "inf2.8xlarge",
    "inf2.24xlarge",
    "inf2.48xlarge",
)

CLOUDWATCH_DEFAULTS: dict[str, Any] = {
    # "Provide default tolerations": used by every component that sets none of its own
    # (templates/_helpers.tpl "amazon-cloudwatch-observability.common.tolerations").
    "tolerations": TOLERATE_ALL,
    "agent": {"nodeSelector": LINUX, "affinity": _required(NOT_FARGATE)},
    "dcgmExporter": {
        "enabled": True,
        "nodeSelector": LINUX,
        "affinity": _required(
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": list(DCGM_EXPORTER_INSTANCE_TYPES),
            },
            NOT_FARGATE,
        ),
    },
    "neuronMonitor": {
        "enabled": True,
        "nodeSelector": LINUX,
        "affinity": _required(
            {
                "key": "node.kubernetes.io/instance-type",
                "operator": "In",
                "values": list(NEURON_MONITOR_INSTANCE_TYPES),
            },
            NOT_FARGATE,
        ),
    },
    "containerLogs": {
        "enabled": True,
        "fluentBit": {"nodeSelector": LINUX, "affinity": _required(NOT_FARGATE)},
    },
}

# aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent (1.7.0): values.yaml and
# templates/daemonset.yaml, dcgm-daemonset.yaml (both add nodeSelector kubernetes.io/os: linux).
_NODE_MONITORING_EXCLUDED = (
    {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate", "auto", "hybrid"]},
    {"key": "sagemaker.amazonaws.com/compute-type", "operator": "NotIn", "values": ["hyperpod"]},
)
NODE_MONITORING_DEFAULTS: dict[str, Any] = {
    "nodeAgent": {
        "nodeSelector": {},
        "tolerations": TOLERATE_ALL,
        "affinity": _required(
            *_NODE_MONITORING_EXCLUDED,
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
        ),
    },
    "dcgmAgent": {
        "nodeSelector": {},
        "tolerations": [],
        # its instance-type list includes g5g, but the arch term keeps it off every Arm node
        "affinity": _required(
            *_NODE_MONITORING_EXCLUDED, {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
        ),
    },
}

# EKS-managed DaemonSets: each tolerates every taint.
EKS_MANAGED: dict[str, tuple[dict[str, Any], str]] = {
    "aws-node": (
        {
            "nodeSelector": {},
            "tolerations": TOLERATE_ALL,
            "affinity": _required(*LINUX_ARM_OR_AMD, NOT_FARGATE),
        },
        "aws/amazon-vpc-cni-k8s charts/aws-vpc-cni: tolerations [{operator: Exists}] and affinity from "
        "values.yaml, rendered by templates/daemonset.yaml through .Values.tolerations / .Values.affinity",
    ),
    "kube-proxy": (
        {
            "nodeSelector": {},
            "tolerations": TOLERATE_ALL,
            "affinity": _required(*LINUX_ARM_OR_AMD, NOT_FARGATE),
        },
        "EKS's kube-proxy add-on manifest (no public chart): tolerations [{operator: Exists}] as "
        "`kubectl -n kube-system get ds kube-proxy -o yaml` shows on EKS; not read from source",
    ),
    "eks-pod-identity-agent": (
        {
            "nodeSelector": {},
            "tolerations": TOLERATE_ALL,
            "affinity": _required(*LINUX_ARM_OR_AMD, NOT_FARGATE),
        },
        "aws/eks-pod-identity-agent charts/eks-pod-identity-agent/values.yaml: tolerations [{operator: Exists}]",
    ),
}


# NVIDIA/k8s-device-plugin deployments/helm/nvidia-device-plugin/values.yaml at v0.19.3: the same
# scheduling defaults as infra.platform.device_plugin.CHART_DEFAULTS (a test holds them equal). Kept
# here so the policy pack, which installs without the platform extra (no pydantic), can model the chart.
DEVICE_PLUGIN_CHART = "nvidia-device-plugin"
DEVICE_PLUGIN_VERSION = "0.19.3"
# The chart or add-on versions whose defaults this module was read from: chart versions exactly,
# EKS add-on versions by prefix (any eksbuild of the same upstream chart). A version outside this
# table may have moved a default, so its placement is reported unknown until someone re-reads the
# chart and adds the version here.
MODELLED_VERSIONS: dict[str, tuple[str, ...]] = {
    DEVICE_PLUGIN_CHART: (DEVICE_PLUGIN_VERSION,),
    CLOUDWATCH_ADDON: ("v6.4.0-",),
    NODE_MONITORING_ADDON: ("v1.7.0-",),
}


def modelled(name: str, version: Any) -> bool:
    """Is ``version`` of chart or add-on ``name`` one whose defaults this module holds?"""
    if not isinstance(version, str) or not version:
        return False
    return any(
        version == known or (known.endswith("-") and version.startswith(known))
        for known in MODELLED_VERSIONS.get(name, ())
    )


DEVICE_PLUGIN_DEFAULTS: dict[str, Any] = {
    "nodeSelector": {},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": [value]}]}
                    for key, value in (
                        ("feature.node.kubernetes.io/pci-10de.present", "true"),
                        ("feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA"),
                        ("nvidia.com/gpu.present", "true"),
                    )
                ]
            }
        }
    },
    "tolerations": [
        {"key": "CriticalAddonsOnly", "operator": "Exists"},
        {"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"},
    ],
}


def helm_merge(base: Any, override: Any) -> Any:
    """Helm's coalescing of user values over chart defaults: maps merge, everything else replaces."""
    if isinstance(base, Mapping) and isinstance(override, Mapping):
        merged = dict(base)
        for key, item in override.items():
            merged[key] = helm_merge(base.get(key), item) if key in base else copy.deepcopy(item)
        return merged
    return copy.deepcopy(override)


def _pod(
    component: Mapping[str, Any], tolerations: Any, extra_selector: Mapping[str, str] | None = None
) -> dict[str, Any]:
    pod: dict[str, Any] = {"containers": [{"name": "agent"}]}
    selector = {**(extra_selector or {}), **(component.get("nodeSelector") or {})}
    if selector:
        pod["nodeSelector"] = selector
    if component.get("affinity"):
        pod["affinity"] = copy.deepcopy(component["affinity"])
    if tolerations:
        pod["tolerations"] = copy.deepcopy(tolerations)
    return pod


def cloudwatch_pods(configuration: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The DaemonSet pod (scheduling fields only) of each enabled component, by DaemonSet name.

    A component's ``tolerations`` wins when it is set at all (``dig "tolerations" nil``),
    else the root list applies.
    """
    values = helm_merge(CLOUDWATCH_DEFAULTS, configuration)

    def tolerations(component: Mapping[str, Any]) -> Any:
        own = component.get("tolerations")
        return values.get("tolerations") if own is None else own

    pods = {"cloudwatch-agent": _pod(values["agent"], tolerations(values["agent"]))}
    if values["dcgmExporter"].get("enabled"):
        pods["dcgm-exporter"] = _pod(values["dcgmExporter"], tolerations(values["dcgmExporter"]))
    if values["neuronMonitor"].get("enabled"):
        pods["neuron-monitor"] = _pod(values["neuronMonitor"], tolerations(values["neuronMonitor"]))
    if values["containerLogs"].get("enabled"):
        fluent_bit = values["containerLogs"].get("fluentBit") or {}
        pods["fluent-bit"] = _pod(fluent_bit, tolerations(fluent_bit))
    return pods


def node_monitoring_pods(configuration: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """nodeAgent and dcgmAgent pods; both templates add ``kubernetes.io/os: linux`` to the nodeSelector."""
    values = helm_merge(NODE_MONITORING_DEFAULTS, configuration)
    return {
        "eks-node-monitoring-agent": _pod(values["nodeAgent"], values["nodeAgent"].get("tolerations"), LINUX),
        "dcgm-server (node monitoring)": _pod(
            values["dcgmAgent"], values["dcgmAgent"].get("tolerations"), LINUX
        ),
    }


def eks_managed_pod(name: str) -> dict[str, Any]:
    return _pod(EKS_MANAGED[name][0], EKS_MANAGED[name][0]["tolerations"])


def device_plugin_pod(values: Mapping[str, Any]) -> dict[str, Any]:
    """The device plugin pod as the chart renders it: each of the three fields only when non-empty."""
    merged = helm_merge(DEVICE_PLUGIN_DEFAULTS, values)
    pod: dict[str, Any] = {"containers": [{"name": "nvidia-device-plugin-ctr"}]}
    pod.update({key: merged[key] for key in ("nodeSelector", "affinity", "tolerations") if merged.get(key)})
    return pod


MPS_CAPABLE = {"nvidia.com/mps.capable": "true"}


def mps_control_daemon_pod(values: Mapping[str, Any]) -> dict[str, Any]:
    """The chart's MPS control daemon pod (templates/daemonset-mps-control-daemon.yml at v0.19.3).

    Rendered whenever the device plugin is: nodeSelector ``nvidia.com/mps.capable: "true"``
    written into the template plus the values' nodeSelector, and the values' affinity and
    tolerations as for the plugin. Only nodes the plugin labels MPS-capable (MPS sharing
    configured) match, so with whole GPUs or time-slicing it runs nowhere.
    """
    merged = helm_merge(DEVICE_PLUGIN_DEFAULTS, values)
    pod: dict[str, Any] = {
        "containers": [{"name": "mps-control-daemon-ctr"}],
        "nodeSelector": {**MPS_CAPABLE, **(merged.get("nodeSelector") or {})},
    }
    pod.update({key: merged[key] for key in ("affinity", "tolerations") if merged.get(key)})
    return pod
