"""Where each node agent the platform installs would schedule: its DaemonSets' scheduling fields."""

from __future__ import annotations

import copy
import functools
import json
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from infra.platform.addons import CLOUDWATCH_ADDON, NODE_MONITORING_ADDON
from infra.tooling import pinned_chart
from infra.tooling.gomod import GoModuleUnavailable

DEVICE_PLUGIN_CHART = "nvidia-device-plugin"
DEVICE_PLUGIN_CONTAINER = "nvidia-device-plugin-ctr"


class ChartUnavailable(RuntimeError):
    """The pinned chart cannot be rendered here; the message says why and what to do."""


def device_plugin_version() -> str:
    """The device plugin chart version pinned in infra/tooling/chart-pins/go.mod: the one rendered here."""
    try:
        return pinned_chart.version()
    except (OSError, LookupError) as error:
        raise ChartUnavailable(f"no pinned chart version: {error}") from None


@functools.cache
def _rendered(values: str, release: str, namespace: str) -> dict[str, dict[str, Any]]:
    try:
        objects = pinned_chart.render(json.loads(values), release=release, namespace=namespace)
    except (pinned_chart.HelmNotFound, GoModuleUnavailable) as error:
        raise ChartUnavailable(str(error)) from None
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as error:
        late = isinstance(error, subprocess.TimeoutExpired)
        why = f"did not finish in {error.timeout:g} s" if late else f"failed: {error.stderr.strip()}"
        raise ChartUnavailable(f"`{Path(error.cmd[0]).name} {error.cmd[1]}` {why}") from None
    return {o["metadata"]["name"]: o["spec"]["template"]["spec"] for o in objects if o["kind"] == "DaemonSet"}


def device_plugin_daemonsets(
    values: Mapping[str, Any], release: str = DEVICE_PLUGIN_CHART, namespace: str = DEVICE_PLUGIN_CHART
) -> dict[str, dict[str, Any]]:
    """Every DaemonSet the pinned chart renders with ``values``, name -> pod spec; ChartUnavailable if it cannot."""
    return copy.deepcopy(_rendered(json.dumps(values, sort_keys=True), release, namespace))


def is_device_plugin(pod: Mapping[str, Any]) -> bool:
    """The plugin's own DaemonSet (not the chart's MPS control daemon or GPU feature discovery)."""
    return any(c.get("name") == DEVICE_PLUGIN_CONTAINER for c in pod.get("containers") or [])


# --- models of charts not pinned here --------------------------------------------------------

LINUX = {"kubernetes.io/os": "linux"}
TOLERATE_ALL = [{"operator": "Exists"}]
NOT_FARGATE = {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate"]}


def _required(*expressions: dict[str, Any]) -> dict[str, Any]:
    terms = [{"matchExpressions": list(expressions)}]
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}


def _types(names: str) -> tuple[str, ...]:
    return tuple(names.split())


def _instance_types(types: tuple[str, ...]) -> dict[str, Any]:
    return {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": list(types)}


# aws-observability/helm-charts charts/amazon-cloudwatch-observability/values.yaml at 6.4.0
# (commit 93a934e, "release v6.4.0"): dcgmExporter.affinity's and neuronMonitor.affinity's
# instance types. The chart also lists them with an "ml." prefix (SageMaker HyperPod); EC2 nodes
# never carry those names, so they are left out.
DCGM_EXPORTER_INSTANCE_TYPES = _types(
    "g3.4xlarge g3.8xlarge g3.16xlarge g3s.xlarge g4ad.2xlarge g4ad.4xlarge g4ad.8xlarge g4ad.16xlarge "
    "g4ad.xlarge g4dn.2xlarge g4dn.4xlarge g4dn.8xlarge g4dn.12xlarge g4dn.16xlarge g4dn.metal g4dn.xlarge "
    "g5.2xlarge g5.4xlarge g5.8xlarge g5.12xlarge g5.16xlarge g5.24xlarge g5.48xlarge g5.xlarge "
    "g5g.2xlarge g5g.4xlarge g5g.8xlarge g5g.16xlarge g5g.metal g5g.xlarge g6.2xlarge g6.4xlarge "
    "g6.8xlarge g6.12xlarge g6.16xlarge g6.24xlarge g6.48xlarge g6.xlarge g6e.2xlarge g6e.4xlarge "
    "g6e.8xlarge g6e.12xlarge g6e.16xlarge g6e.24xlarge g6e.48xlarge g6e.xlarge gr6.4xlarge gr6.8xlarge "
    "p2.8xlarge p2.16xlarge p2.xlarge p3.2xlarge p3.8xlarge p3.16xlarge p3dn.24xlarge p4d.24xlarge "
    "p4de.24xlarge p5.48xlarge p5e.48xlarge p5en.48xlarge p6-b200.48xlarge p6-b300.48xlarge "
    "p6e-gb200.36xlarge"
)
NEURON_MONITOR_INSTANCE_TYPES = _types(
    "trn1.2xlarge trn1.32xlarge trn1n.32xlarge trn2.3xlarge trn2.48xlarge trn2a.48xlarge trn2n.48xlarge "
    "trn2u.48xlarge inf1.xlarge inf1.2xlarge inf1.6xlarge inf1.24xlarge inf2.xlarge inf2.8xlarge "
    "inf2.24xlarge inf2.48xlarge"
)
CLOUDWATCH_DEFAULTS: dict[str, Any] = {
    # "Provide default tolerations": used by every component that sets none of its own
    # (templates/_helpers.tpl "amazon-cloudwatch-observability.common.tolerations").
    "tolerations": TOLERATE_ALL,
    "agent": {"nodeSelector": LINUX, "affinity": _required(NOT_FARGATE)},
    "dcgmExporter": {
        "enabled": True,
        "nodeSelector": LINUX,
        "affinity": _required(_instance_types(DCGM_EXPORTER_INSTANCE_TYPES), NOT_FARGATE),
    },
    "neuronMonitor": {
        "enabled": True,
        "nodeSelector": LINUX,
        "affinity": _required(_instance_types(NEURON_MONITOR_INSTANCE_TYPES), NOT_FARGATE),
    },
    "containerLogs": {
        "enabled": True,
        "fluentBit": {"nodeSelector": LINUX, "affinity": _required(NOT_FARGATE)},
    },
}
CLOUDWATCH_DAEMONSETS = {  # DaemonSet -> its component's values
    "cloudwatch-agent": ("agent",),
    "dcgm-exporter": ("dcgmExporter",),
    "neuron-monitor": ("neuronMonitor",),
    "fluent-bit": ("containerLogs", "fluentBit"),
}

# aws/eks-node-monitoring-agent charts/eks-node-monitoring-agent (1.7.0): values.yaml and
# templates/daemonset.yaml, dcgm-daemonset.yaml (both add nodeSelector kubernetes.io/os: linux).
_NODE_MONITORING_EXCLUDED = (
    {"key": "eks.amazonaws.com/compute-type", "operator": "NotIn", "values": ["fargate", "auto", "hybrid"]},
    {"key": "sagemaker.amazonaws.com/compute-type", "operator": "NotIn", "values": ["hyperpod"]},
)
NODE_MONITORING_DEFAULTS: dict[str, Any] = {
    "nodeAgent": {
        "tolerations": TOLERATE_ALL,
        "affinity": _required(
            *_NODE_MONITORING_EXCLUDED,
            {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
        ),
    },
    # its instance-type list includes g5g, but the arch term keeps it off every Arm node
    "dcgmAgent": {
        "affinity": _required(
            *_NODE_MONITORING_EXCLUDED, {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
        )
    },
}

# EKS-managed DaemonSets: each tolerates every taint, on Linux amd64/arm64 nodes that are not Fargate.
EKS_MANAGED_POD: dict[str, Any] = {
    "containers": [{"name": "agent"}],
    "tolerations": TOLERATE_ALL,
    "affinity": _required(
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
        NOT_FARGATE,
    ),
}
EKS_MANAGED: dict[str, str] = {  # DaemonSet -> where its scheduling fields were read
    "aws-node": "aws/amazon-vpc-cni-k8s charts/aws-vpc-cni: tolerations [{operator: Exists}] and affinity from "
    "values.yaml, rendered by templates/daemonset.yaml through .Values.tolerations / .Values.affinity",
    "kube-proxy": "EKS's kube-proxy add-on manifest (no public chart): tolerations [{operator: Exists}] as "
    "`kubectl -n kube-system get ds kube-proxy -o yaml` shows on EKS; not read from source",
    "eks-pod-identity-agent": "aws/eks-pod-identity-agent charts/eks-pod-identity-agent/values.yaml: "
    "tolerations [{operator: Exists}]",
}

# The add-on versions whose defaults were read, by prefix (any eksbuild of the same upstream chart).
# A version outside this table may have moved a default, so its placement is reported unknown until
# someone re-reads the chart and adds the version here.
MODELLED_VERSIONS: dict[str, tuple[str, ...]] = {
    CLOUDWATCH_ADDON: ("v6.4.0-",),
    NODE_MONITORING_ADDON: ("v1.7.0-",),
}


def modelled(name: str, version: Any) -> bool:
    """Is ``version`` of add-on ``name`` one whose defaults this module holds?"""
    return isinstance(version, str) and any(version.startswith(k) for k in MODELLED_VERSIONS.get(name, ()))


def helm_merge(base: Any, override: Any) -> Any:
    """Helm's coalescing of user values over chart defaults: maps merge, everything else replaces."""
    if isinstance(base, Mapping) and isinstance(override, Mapping):
        return {**base, **{k: helm_merge(base[k], v) if k in base else v for k, v in override.items()}}
    return override


def _pod(
    component: Mapping[str, Any], tolerations: Any, selector: Mapping[str, str] = LINUX
) -> dict[str, Any]:
    pod = {
        "containers": [{"name": "agent"}],
        "nodeSelector": {**selector, **(component.get("nodeSelector") or {})},
        "affinity": component.get("affinity"),
        "tolerations": tolerations,
    }
    return copy.deepcopy({k: v for k, v in pod.items() if v})


def cloudwatch_pods(configuration: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The DaemonSet pod (scheduling fields only) of each enabled component, by DaemonSet name."""
    values = helm_merge(CLOUDWATCH_DEFAULTS, configuration)
    pods = {}
    for ds, path in CLOUDWATCH_DAEMONSETS.items():
        component = functools.reduce(lambda v, k: v.get(k) or {}, path, values)
        if path[0] == "agent" or values[path[0]].get("enabled"):
            own = component.get("tolerations")
            pods[ds] = _pod(component, values.get("tolerations") if own is None else own, {})
    return pods


def node_monitoring_pods(configuration: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """nodeAgent and dcgmAgent pods; both templates add ``kubernetes.io/os: linux`` to the nodeSelector."""
    values = helm_merge(NODE_MONITORING_DEFAULTS, configuration)
    agents = {"eks-node-monitoring-agent": "nodeAgent", "dcgm-server (node monitoring)": "dcgmAgent"}
    return {ds: _pod(values[key], values[key].get("tolerations")) for ds, key in agents.items()}
