"""Every agent, every pool: on which node groups does each DaemonSet the stack installs land?

Pure: reads (type, name, props) triples, what both the offline preview and the
CrossGuard pack see. Node groups become scheduling nodes (one per instance type,
with the group's labels and taints); the agents come from

- Kubernetes ``DaemonSet`` resources (their pod spec as declared),
- the NVIDIA device plugin's ``helm.v3.Release`` (its ``values`` input through the
  chart model in ``infra.platform.device_plugin``),
- the ``amazon-cloudwatch-observability`` and ``eks-node-monitoring-agent`` add-ons
  (their ``configurationValues`` through the chart models in
  :mod:`infra.tooling.chart_models`),
- the EKS-managed DaemonSets (``aws-node``, ``kube-proxy``, ``eks-pod-identity-agent``).

A Helm release of any other chart, a chart or add-on version whose defaults were
not read (``chart_models.MODELLED_VERSIONS``), or configuration values that are not
known yet, give an agent whose placement is **unknown**: reported as such, never as
fine.

Not known yet: in a CrossGuard stack policy the properties are resource *outputs*
with unknowns kept, and an add-on's ``configurationValues`` is computed (unknown
during a create that does not set it). The pack turns every unknown into ``None``;
here a property that is present but ``None`` means "not known yet", while an absent
one means "not set" (chart defaults). ``configurationValues`` is read only for the
add-ons whose configuration is modelled, so an unknown one elsewhere changes nothing.

Rules: an agent meant for GPU nodes must land on every GPU pool and on no other
group (the device plugin on a system node would crash-loop; a pool without it has
no ``nvidia.com/gpu``); an agent meant for every node that misses a group is
advisory (metrics or health missing there).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from infra.platform.addons import CLOUDWATCH_ADDON, NODE_MONITORING_ADDON
from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM
from infra.platform.node_pools import SYSTEM_LABELS
from infra.tooling import chart_models
from infra.workloads.placement import POOL_LABEL, Placement
from infra.workloads.scheduling import Node, fits, gpu_limit, tolerates

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ADDON = "aws:eks/addon:Addon"
HELM_RELEASE = "kubernetes:helm.sh/v3:Release"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
CLUSTER = "eks:index:Cluster"
INTENT_ANNOTATION = "eks-gpu/runs-on"
"""Optional DaemonSet annotation stating where it is meant to run: ``gpu-nodes``, ``all-nodes`` or ``none``."""
GPU_INSTANCE_PREFIXES = ("g", "p")  # EC2's GPU families
# Helm charts known to install no DaemonSet (their workloads are Deployments).
NO_DAEMONSET_CHARTS = frozenset({"cluster-autoscaler"})

GPU, ALL, NONE = "gpu-nodes", "all-nodes", "none"
# The add-ons infra.platform.observability declares (named here so the policy pack need not import pulumi_aws).
NOT_KNOWN_YET = "configurationValues not known yet"


@dataclass(frozen=True)
class Group:
    """A node group as the scheduler will see its nodes: one node per instance type."""

    name: str
    gpu: bool
    nodes: tuple[Node, ...]


@dataclass(frozen=True)
class Agent:
    name: str
    intent: str
    """``gpu-nodes``, ``all-nodes`` or ``none`` (expected to run nowhere here, e.g. Neuron or amd64-only)."""
    source: str
    pod: Mapping[str, Any] | None
    """Scheduling fields of the pod; None when they cannot be known offline."""
    resource: str = ""
    device_plugin: bool = False


@dataclass(frozen=True)
class Landing:
    agent: Agent
    where: Mapping[str, str]
    """group name -> ``yes`` | ``partial`` (some of its instance types) | ``-`` | ``unknown``."""
    problems: tuple[str, ...]
    advice: tuple[str, ...]


def _is_gpu_group(props: Mapping[str, Any], placement: Placement) -> bool:
    return (
        str(props.get("amiType", "")).endswith("_NVIDIA")
        or (props.get("labels") or {}).get(placement.key) == placement.value
        or any(
            str(t).split(".")[0].startswith(GPU_INSTANCE_PREFIXES) for t in props.get("instanceTypes") or []
        )
    )


def _arch(instance_type: str) -> str:
    return "arm64" if instance_type in ARM_NVIDIA or instance_type in ARM_SYSTEM else "amd64"


def groups_of(resources: Iterable[tuple[str, str, Mapping[str, Any]]], placement: Placement) -> list[Group]:
    """The stack's node groups as nodes carrying exactly the declared labels and taints."""
    groups = []
    for typ, name, props in resources:
        if typ != NODE_GROUP:
            continue
        nodes = tuple(
            Node.from_node_group(
                f"{name}/{instance_type}",
                labels=props.get("labels") or {},
                eks_taints=props.get("taints") or [],
                instance_type=instance_type,
                arch=_arch(instance_type),
                gpus=ARM_NVIDIA[instance_type].gpus if instance_type in ARM_NVIDIA else 0,
            )
            for instance_type in props.get("instanceTypes") or []
        )
        groups.append(Group(name=name, gpu=_is_gpu_group(props, placement), nodes=nodes))
    return sorted(groups, key=lambda g: g.name)


def contract_groups(placement: Placement) -> list[Group]:
    """Stand-in groups for a stack that declares none (a consumer stack): the contract's GPU nodes and a system node."""
    gpu = tuple(
        Node.from_node_group(
            f"gpu (contract)/{t}",
            labels=placement.node_labels(),
            eks_taints=[placement.eks_taint()],
            instance_type=t,
            arch="arm64",
            gpus=ARM_NVIDIA[t].gpus,
        )
        for t in ARM_NVIDIA
    )
    system = (
        Node.from_node_group(
            "system/t4g.large", labels=dict(SYSTEM_LABELS), instance_type="t4g.large", arch="arm64"
        ),
    )
    return [Group("gpu (contract)", True, gpu), Group("system", False, system)]


def _json(props: Mapping[str, Any], key: str = "configurationValues") -> Mapping[str, Any] | None:
    """Parsed configurationValues; ``{}`` when not set; None when not known (unknown, or not a JSON object)."""
    if key not in props or props[key] == "":
        return {}
    value = props[key]
    if isinstance(value, Mapping):
        return value
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, Mapping) else None


SCHEDULING_FIELDS = ("nodeSelector", "affinity", "tolerations")


def _contains_none(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, Mapping):
        return any(_contains_none(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_contains_none(v) for v in value)
    return False


def _unknown_scheduling(pod: Mapping[str, Any]) -> bool:
    """A scheduling field that is present but holds None somewhere: an unknown the policy pack turned into None.

    Kubernetes has no null in these fields (and Pulumi drops None inputs), so None
    here means "not known yet", not "not set". Containers count for their GPU requests.
    """
    if any(key in pod and _contains_none(pod[key]) for key in SCHEDULING_FIELDS):
        return True
    for key in ("containers", "initContainers"):
        if key not in pod:
            continue
        containers = pod[key]
        if not isinstance(containers, (list, tuple)):
            return True
        for container in containers:
            if not isinstance(container, Mapping) or any(
                field in container and _contains_none(container[field])
                for field in ("resources", "restartPolicy")
            ):
                return True
    return False


def _unmodelled(name: str, version: Any) -> str:
    known = ", ".join(f"{v}*" if v.endswith("-") else v for v in chart_models.MODELLED_VERSIONS[name])
    shown = "not known yet" if version is None else repr(version)
    return f"{name} version {shown} is not one the chart model was read from ({known})"


def _selects_gpu_nodes(pod: Mapping[str, Any], placement: Placement) -> bool:
    selector = pod.get("nodeSelector") or {}
    if selector.get(placement.key) == placement.value or POOL_LABEL in selector:
        return True
    if str(selector.get("node.kubernetes.io/instance-type", "")).startswith(GPU_INSTANCE_PREFIXES):
        return True
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    for term in required.get("nodeSelectorTerms") or []:
        for expression in term.get("matchExpressions") or []:
            key, values = expression.get("key"), expression.get("values") or []
            if expression.get("operator") != "In":
                continue
            if key in (placement.key, POOL_LABEL):
                return True
            if (
                key == "node.kubernetes.io/instance-type"
                and values
                and all(str(v).startswith(GPU_INSTANCE_PREFIXES) for v in values)
            ):
                return True
    return False


def daemonset_intent(props: Mapping[str, Any], pod: Mapping[str, Any], placement: Placement) -> str:
    """Where a DaemonSet is meant to run: its annotation, else inferred from what it asks for.

    Asking for GPUs, selecting GPU nodes (contract label, pool label, GPU instance
    types) or tolerating the GPU taint means GPU nodes; anything else, every node.
    """
    annotated = ((props.get("metadata") or {}).get("annotations") or {}).get(INTENT_ANNOTATION)
    if annotated in (GPU, ALL, NONE):
        return annotated
    if (
        gpu_limit(pod) > 0
        or _selects_gpu_nodes(pod, placement)
        or any(tolerates(t, placement.node_taint()) and t.get("key") for t in pod.get("tolerations") or [])
    ):
        return GPU
    return ALL


def _modelled_addon_agents(addon: str, props: Mapping[str, Any], resource: str) -> list[Agent]:
    """The DaemonSets of the CloudWatch or node monitoring add-on, or one unknown agent if they cannot be known."""
    version = props.get("addonVersion")
    source = f"add-on {addon} {version or ''}".strip()
    if not chart_models.modelled(addon, version):
        return [Agent(source, ALL, _unmodelled(addon, version), None, resource)]
    # Read only here, for the add-ons whose configuration is modelled: configurationValues is a
    # computed output, unknown in a stack policy for every add-on created without it.
    configuration = _json(props)
    if configuration is None:
        return [Agent(source, ALL, NOT_KNOWN_YET, None, resource)]
    if addon == CLOUDWATCH_ADDON:
        intents = {"cloudwatch-agent": ALL, "dcgm-exporter": GPU, "fluent-bit": ALL, "neuron-monitor": NONE}
        return [
            Agent(f"{ds} ({addon})", intents[ds], "configurationValues + chart 6.4.0 defaults", pod, resource)
            for ds, pod in chart_models.cloudwatch_pods(configuration).items()
        ]
    pods = chart_models.node_monitoring_pods(configuration)
    return [
        Agent(
            f"eks-node-monitoring-agent ({addon})",
            ALL,
            "configurationValues + chart 1.7.0 defaults",
            pods["eks-node-monitoring-agent"],
            resource,
        ),
        Agent(
            f"dcgm-server ({addon}, amd64 only)",
            NONE,
            "chart 1.7.0: arch In [amd64]; DCGM checks are off on arm64, NCCL dmesg checks still run "
            "(monitors/nvidia/monitor.go)",
            pods["dcgm-server (node monitoring)"],
            resource,
        ),
    ]


def agents_of(resources: Sequence[tuple[str, str, Mapping[str, Any]]], placement: Placement) -> list[Agent]:
    """Every DaemonSet the resources install, with where it is meant to run and its scheduling fields."""
    found: list[Agent] = []
    addons = set()
    for typ, name, props in resources:
        resource = f"{typ} {name}"
        if typ == DAEMONSET:
            pod = ((props.get("spec") or {}).get("template") or {}).get("spec") or {}
            ds = (props.get("metadata") or {}).get("name") or name
            if _unknown_scheduling(pod):
                annotated = ((props.get("metadata") or {}).get("annotations") or {}).get(INTENT_ANNOTATION)
                intent = annotated if annotated in (GPU, ALL, NONE) else ALL
                found.append(
                    Agent(f"DaemonSet/{ds}", intent, "scheduling fields not known yet", None, resource)
                )
                continue
            found.append(
                Agent(
                    f"DaemonSet/{ds}", daemonset_intent(props, pod, placement), "as declared", pod, resource
                )
            )
        elif typ == HELM_RELEASE:
            chart = props.get("chart")
            version = props.get("version")
            if chart == chart_models.DEVICE_PLUGIN_CHART:
                label = f"nvidia-device-plugin (helm {version})"
                if not chart_models.modelled(chart, version):
                    found.append(
                        Agent(label, GPU, _unmodelled(chart, version), None, resource, device_plugin=True)
                    )
                    continue
                values = props.get("values")
                if "values" in props and not isinstance(values, Mapping):
                    found.append(
                        Agent(label, GPU, "Release values not known yet", None, resource, device_plugin=True)
                    )
                    continue
                source = f"Release values through the chart model (chart {chart_models.DEVICE_PLUGIN_VERSION} defaults)"
                found.append(
                    Agent(
                        label,
                        GPU,
                        source,
                        chart_models.device_plugin_pod(values or {}),
                        resource,
                        device_plugin=True,
                    )
                )
                found.append(
                    Agent(
                        f"nvidia-device-plugin-mps-control-daemon (helm {version})",
                        NONE,
                        f"{source}: nodeSelector nvidia.com/mps.capable=true, set only where MPS sharing is configured",
                        chart_models.mps_control_daemon_pod(values or {}),
                        resource,
                    )
                )
            elif chart not in NO_DAEMONSET_CHARTS:
                found.append(
                    Agent(
                        f"helm chart {chart} (release {props.get('name', name)})",
                        ALL,
                        "no model of this chart: its DaemonSets cannot be seen offline",
                        None,
                        resource,
                    )
                )
        elif typ == ADDON:
            addon = props.get("addonName")
            addons.add(addon)
            version = props.get("addonVersion")
            source = f"add-on {addon} {version or ''}".strip()
            if addon in (CLOUDWATCH_ADDON, NODE_MONITORING_ADDON):
                found.extend(_modelled_addon_agents(addon, props, resource))
            elif addon in chart_models.EKS_MANAGED:
                found.append(
                    Agent(
                        f"{addon} (EKS add-on)",
                        ALL,
                        chart_models.EKS_MANAGED[addon][1],
                        chart_models.eks_managed_pod(addon),
                        resource,
                    )
                )
    if any(typ == CLUSTER for typ, _, _ in resources):
        # pulumi-eks installs the VPC CNI and kube-proxy itself (not as resources we declare).
        for ds in ("aws-node", "kube-proxy"):
            if ds not in addons and not (ds == "aws-node" and "vpc-cni" in addons):
                found.append(
                    Agent(
                        f"{ds} (EKS-managed)",
                        ALL,
                        chart_models.EKS_MANAGED[ds][1],
                        chart_models.eks_managed_pod(ds),
                        "eks:index:Cluster",
                    )
                )
    return sorted(found, key=lambda a: a.name)


def land(agent: Agent, groups: Sequence[Group], placement: Placement) -> Landing:
    """Where the agent's pods go, and what is wrong with that."""
    if agent.pod is None:
        return Landing(
            agent,
            {g.name: "unknown" for g in groups},
            (),
            (f"placement unknown ({agent.source}): check it on the cluster with kubectl get ds -A -o wide",),
        )
    where = {}
    for group in groups:
        fitting = sum(1 for node in group.nodes if fits(agent.pod, node).fits)
        where[group.name] = (
            "yes" if fitting == len(group.nodes) and fitting else ("partial" if fitting else "-")
        )
    problems: list[str] = []
    advice: list[str] = []
    gpu_groups = [g for g in groups if g.gpu]
    missed = [g.name for g in gpu_groups if where[g.name] != "yes"]
    if agent.intent == GPU:
        if missed:
            reasons = sorted(
                {
                    r
                    for g in gpu_groups
                    if g.name in missed
                    for n in g.nodes
                    for r in fits(agent.pod, n).reasons
                }
            )
            problems.append(
                f"is meant for GPU nodes but misses GPU pool(s) {missed} ({'; '.join(reasons)}): "
                f"add the toleration {placement.toleration()} and select GPU nodes (nodeSelector "
                f"{placement.node_selector()})"
            )
        stray = [g.name for g in groups if not g.gpu and where[g.name] != "-"]
        if stray:
            what = "the device plugin" if agent.device_plugin else "a GPU agent"
            problems.append(f"is {what} but lands on non-GPU group(s) {stray}: select GPU nodes only")
    elif agent.intent == ALL:
        partial = [g.name for g in groups if where[g.name] != "yes"]
        if partial:
            advice.append(f"runs on every node but misses group(s) {partial}: tolerate their taints")
    return Landing(agent, where, tuple(problems), tuple(advice))


def landings(resources: Sequence[tuple[str, str, Mapping[str, Any]]], placement: Placement) -> list[Landing]:
    """Every agent against the stack's node groups (or the contract's stand-ins if it declares none)."""
    groups = groups_of(resources, placement) or contract_groups(placement)
    return [land(agent, groups, placement) for agent in agents_of(resources, placement)]


def table(found: Sequence[Landing]) -> list[str]:
    """One row per agent: where it lands per node group, and the verdict."""
    if not found:
        return []
    groups = list(found[0].where)
    rows = [["agent (DaemonSet)", "meant for", *groups, "verdict"]]
    for landing in found:
        verdict = (
            "VIOLATION"
            if landing.problems
            else ("unknown" if landing.agent.pod is None else ("check" if landing.advice else "ok"))
        )
        rows.append([landing.agent.name, landing.agent.intent, *(landing.where[g] for g in groups), verdict])
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return ["  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]


__all__ = [
    "Agent",
    "Group",
    "Landing",
    "agents_of",
    "contract_groups",
    "daemonset_intent",
    "groups_of",
    "land",
    "landings",
    "table",
]
