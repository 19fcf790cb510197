"""Every agent, every pool: on which node groups does each DaemonSet the stack installs land?"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from infra.platform.addons import CLOUDWATCH_ADDON
from infra.platform.allocatable import ENI_LIMITS, allocatable
from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM
from infra.platform.node_pools import SYSTEM_LABELS
from infra.tooling import chart_models, node_group_props, pod_props
from infra.tooling.manifests import HELM_RELEASE_TYPE as HELM_RELEASE
from infra.tooling.resource_keys import resource_key
from infra.workloads.placement import GPU_RESOURCE, POOL_LABEL, Placement
from infra.workloads.pools import required_terms
from infra.workloads.quantity import whole_count
from infra.workloads.scheduling import Node, fits, gpu_limit, tolerates

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ADDON = "aws:eks/addon:Addon"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
NODEPOOL = "kubernetes:karpenter.sh/v1:NodePool"
NODE_OVERLAY = "kubernetes:karpenter.sh/v1alpha1:NodeOverlay"
CLUSTER = "eks:index:Cluster"
Props = Mapping[str, Any]
"""A resource's properties (Pulumi's camelCase ones; a Kubernetes object's are its manifest)."""
Resources = Sequence[tuple[str, str, Props]]
"""The stack's resources as the rules and the preview read them: (type, name, properties)."""
INTENT_ANNOTATION = "eks-gpu/runs-on"
"""Optional DaemonSet annotation stating where it is meant to run: ``gpu-nodes``, ``all-nodes`` or ``none``."""
GPU, ALL, NONE = "gpu-nodes", "all-nodes", "none"
GPU_INSTANCE_PREFIXES = ("g", "p")  # EC2's GPU families: g4dn, g5, g5g, g6, p4d, p5 ...
GPU_AMI_WORDS = frozenset({"NVIDIA", "GPU"})
"""Words of an EKS ``amiType`` (enum ``AMITypes``) that mean a GPU AMI: every ``*_NVIDIA`` (FIPS too) and
``AL2_x86_64_GPU``; not ``*_NEURON`` (``aws.amazon.com/neuron``). A test checks it against botocore's enum."""
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
# Charts whose workloads are Deployments only (Karpenter's: infra/platform/karpenter.py; its test renders the chart).
NO_DAEMONSET_CHARTS = frozenset(
    {
        "cluster-autoscaler",
        "oci://public.ecr.aws/karpenter/karpenter",
        "oci://public.ecr.aws/karpenter/karpenter-crd",
        "oci://registry.k8s.io/kueue/charts/kueue",  # infra/platform/kueue.py; test_kueue_objects renders it
    }
)
NOT_KNOWN_YET = "configurationValues not known yet"
DEVICE_PLUGIN = chart_models.DEVICE_PLUGIN_CHART
DCGM_SERVER_ON_ARM = (
    "chart 1.7.0: arch In [amd64]; DCGM checks are off on arm64, NCCL dmesg checks still run "
    "(monitors/nvidia/monitor.go)"
)
SCHEDULING_FIELDS = ("nodeSelector", "affinity", "tolerations")
CLOUDWATCH_INTENTS = {
    "cloudwatch-agent": ALL,
    "dcgm-exporter": GPU,
    "fluent-bit": ALL,
    "neuron-monitor": NONE,
}


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


@dataclass(frozen=True)
class Landing:
    agent: Agent
    where: Mapping[str, str]
    """group name -> ``yes`` | ``partial`` (some of its instance types) | ``-`` | ``unknown``."""
    problems: tuple[str, ...]
    advice: tuple[str, ...]


def is_gpu_instance_type(instance_type: Any) -> bool:
    return str(instance_type).startswith(GPU_INSTANCE_PREFIXES)


def nodepool_requirement(props: Mapping[str, Any], key: str) -> list[Any]:
    """The values a Karpenter NodePool's template allows for ``key`` (its ``In`` requirements)."""
    spec = ((props.get("spec") or {}).get("template") or {}).get("spec") or {}
    requirements = spec.get("requirements") or []
    return [
        v
        for r in requirements
        if r.get("key") == key and r.get("operator") == "In"
        for v in r.get("values") or []
    ]


def nodepool_template(props: Mapping[str, Any]) -> tuple[dict[str, str], list[Any], list[str]]:
    """A Karpenter NodePool's node labels, taints and instance types (its ``In`` requirement), as declared."""
    template = (props.get("spec") or {}).get("template") or {}
    taints = list((template.get("spec") or {}).get("taints") or [])
    types = nodepool_requirement(props, "node.kubernetes.io/instance-type")
    return dict((template.get("metadata") or {}).get("labels") or {}), taints, types


def is_gpu_nodepool(props: Mapping[str, Any]) -> bool:
    """A NodePool that may launch a GPU instance type, or that counts GPUs in its limits."""
    limits = (props.get("spec") or {}).get("limits") or {}
    return GPU_RESOURCE in limits or any(is_gpu_instance_type(t) for t in nodepool_template(props)[2])


def is_gpu_node_group(props: Mapping[str, Any]) -> bool:
    """A GPU instance type or a GPU ``amiType``: each is enough evidence on its own."""
    if any(is_gpu_instance_type(t) for t in node_group_props.instance_types(props)):
        return True
    ami_type = props.get("amiType")
    return isinstance(ami_type, str) and bool(GPU_AMI_WORDS & set(ami_type.upper().split("_")))


def _type_node(name: str, t: str, labels: Mapping[str, str], gpus: int | None, eks_taints: Any = ()) -> Node:
    """A node of instance type ``t`` advertising ``gpus`` (default: the type's own), arm64 on Graviton."""
    return Node.from_node_group(
        f"{name}/{t}",
        labels=labels,
        eks_taints=eks_taints,
        instance_type=t,
        arch="arm64" if t in ARM_NVIDIA or t in ARM_SYSTEM else "amd64",
        gpus=gpus if gpus is not None else (ARM_NVIDIA[t].gpus if t in ARM_NVIDIA else 0),
        sized=sized(t),
    )


def group_nodes(name: str, props: Mapping[str, Any]) -> tuple[Node, ...]:
    """A node group's nodes, one per instance type, offering what a real one would."""
    labels, taints = node_group_props.labels(props), node_group_props.taints(props)
    advertised = node_group_props.advertised_gpus(props)
    return tuple(
        _type_node(name, t, labels, advertised, taints) for t in node_group_props.instance_types(props)
    )


def sized(instance_type: Any) -> dict[str, int] | None:
    """What a real AL2023 node of the type offers pods (nodeadm's reserves); None for unlisted types."""
    if instance_type not in ENI_LIMITS:
        return None
    offered = allocatable(instance_type)
    return {"cpu": offered.cpu_millis, "memory": offered.memory_mib}


def nodepool_name(name: str, props: Mapping[str, Any]) -> str:
    return str((props.get("metadata") or {}).get("name") or name)


def overlay_gpus(resources: Resources) -> dict[str, int]:
    """NodePool name -> ``nvidia.com/gpu`` a NodeOverlay tells Karpenter its nodes advertise (time-slicing)."""
    found = {}
    for typ, _, props in resources:
        spec = (props.get("spec") or {}) if typ == NODE_OVERLAY else {}
        gpus = (spec.get("capacity") or {}).get(GPU_RESOURCE)
        for r in spec.get("requirements") or []:
            if gpus is not None and r.get("key") == "karpenter.sh/nodepool" and r.get("operator") == "In":
                found.update({pool: whole_count(gpus) for pool in r.get("values") or []})
    return found


def nodepool_nodes(name: str, props: Mapping[str, Any], gpus: int | None = None) -> tuple[Node, ...]:
    """A Karpenter NodePool's nodes, one per instance type it may launch: its template's labels and taints;
    ``gpus``: what a NodeOverlay says they advertise, else the type's GPUs."""
    labels, taints, types = nodepool_template(props)
    labels = {**labels, "karpenter.sh/nodepool": nodepool_name(name, props)}
    return tuple(dataclasses.replace(_type_node(name, t, labels, gpus), taints=tuple(taints)) for t in types)


def _nodes_of(typ: str, name: str, props: Mapping[str, Any], slots: Mapping[str, int]) -> tuple[Node, ...]:
    if typ == NODEPOOL:
        return nodepool_nodes(name, props, slots.get(nodepool_name(name, props)))
    return group_nodes(name, props) if typ == NODE_GROUP else ()


def declared_nodes(resources: Resources) -> list[Node]:
    """One node per node group or NodePool and instance type, offering what a real one would."""
    slots = overlay_gpus(resources)
    return [node for typ, name, props in resources for node in _nodes_of(typ, name, props, slots)]


def groups_of(resources: Resources, placement: Placement) -> list[Group]:
    """The stack's node groups and Karpenter NodePools as nodes carrying exactly the declared labels and taints."""
    slots = overlay_gpus(resources)
    gpu = {
        NODE_GROUP: lambda p: (
            is_gpu_node_group(p) or node_group_props.labels(p).get(placement.key) == placement.value
        ),
        NODEPOOL: is_gpu_nodepool,
    }
    groups = [
        Group(name, gpu[typ](props), _nodes_of(typ, name, props, slots))
        for typ, name, props in resources
        if typ in gpu
    ]
    return sorted(groups, key=lambda g: g.name)


def contract_groups(placement: Placement) -> list[Group]:
    """Stand-in groups for a stack that declares none (a consumer stack): the contract's GPU nodes and a system node."""
    gpu = {
        "instanceTypes": list(ARM_NVIDIA),
        "labels": placement.node_labels(),
        "taints": [placement.eks_taint()],
    }
    system = {"instanceTypes": ["t4g.large"], "labels": dict(SYSTEM_LABELS)}
    return [
        Group("gpu (contract)", True, group_nodes("gpu (contract)", gpu)),
        Group("system", False, group_nodes("system", system)),
    ]


def _json(props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """Parsed configurationValues; ``{}`` when not set; None when not known (unknown, or not a JSON object)."""
    value = props.get("configurationValues", "")
    if value == "" or isinstance(value, Mapping):
        return value or {}
    try:
        parsed = json.loads(value) if isinstance(value, str) else None
    except json.JSONDecodeError:
        return None
    return parsed if isinstance(parsed, Mapping) else None


def _contains_none(value: Any) -> bool:
    if isinstance(value, Mapping):
        return any(_contains_none(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_contains_none(v) for v in value)
    return value is None


def _unknown_scheduling(pod: Mapping[str, Any]) -> bool:
    """A scheduling field that is present but holds None somewhere: an unknown the policy pack turned into None."""
    if any(key in pod and _contains_none(pod[key]) for key in SCHEDULING_FIELDS):
        return True
    for key in ("containers", "initContainers"):
        containers = pod.get(key, [])
        if not isinstance(containers, (list, tuple)) or any(
            not isinstance(c, Mapping)
            or any(f in c and _contains_none(c[f]) for f in ("resources", "restartPolicy"))
            for c in containers
        ):
            return True
    return False


def _selects_gpu_nodes(pod: Mapping[str, Any], placement: Placement) -> bool:
    """A nodeSelector or required ``In`` expression on the contract's label, the pool label or GPU instance types."""
    selector = pod.get("nodeSelector") or {}
    if selector.get(placement.key) == placement.value or POOL_LABEL in selector:
        return True
    if is_gpu_instance_type(selector.get(INSTANCE_TYPE_LABEL, "")):
        return True
    for term in required_terms(pod) or []:
        for e in term.get("matchExpressions") or []:
            types = e.get("key") == INSTANCE_TYPE_LABEL and all(
                map(is_gpu_instance_type, e.get("values") or [""])
            )
            if e.get("operator") == "In" and (e.get("key") in (placement.key, POOL_LABEL) or types):
                return True
    return False


def _annotated(props: Mapping[str, Any]) -> str | None:
    annotated = ((props.get("metadata") or {}).get("annotations") or {}).get(INTENT_ANNOTATION)
    return annotated if annotated in (GPU, ALL, NONE) else None


def daemonset_intent(props: Mapping[str, Any], pod: Mapping[str, Any], placement: Placement) -> str:
    """Where a DaemonSet is meant to run: its annotation, else inferred from what it asks for."""
    if (annotated := _annotated(props)) is not None:
        return annotated
    gpu_toleration = any(
        tolerates(t, placement.node_taint()) and t.get("key") for t in pod.get("tolerations") or []
    )
    return GPU if gpu_limit(pod) > 0 or _selects_gpu_nodes(pod, placement) or gpu_toleration else ALL


def _daemonset_agent(name: str, props: Mapping[str, Any], resource: str, placement: Placement) -> Agent:
    pod = pod_props.workload_pod(props)  # its well-formed parts: the pack names the rest
    metadata = props.get("metadata")
    label = f"DaemonSet/{(metadata.get('name') if isinstance(metadata, Mapping) else None) or name}"
    if _unknown_scheduling(pod):
        return Agent(label, _annotated(props) or ALL, "scheduling fields not known yet", None, resource)
    return Agent(label, daemonset_intent(props, pod, placement), "as declared", pod, resource)


def device_plugin_daemonsets(name: str, props: Props) -> tuple[dict[str, dict[str, Any]] | None, str]:
    """The DaemonSets (name -> pod spec) the pinned chart renders for a device plugin Release, and how
    they were found; None, with the reason, when the version is not the pinned one or inputs are unknown.
    ``ChartUnavailable`` when the chart cannot be rendered here."""
    version, values = props.get("version"), props.get("values", {})
    pinned = chart_models.device_plugin_version()
    if version != pinned:
        shown = "not known yet" if version is None else repr(version)
        return None, f"{DEVICE_PLUGIN} version {shown} is not the one pinned and rendered here ({pinned})"
    if not isinstance(values, Mapping) or _contains_none(values) or props.get("namespace", "") is None:
        return None, "Release values or namespace not known yet"
    release, namespace = props.get("name") or name, props.get("namespace") or "default"
    rendered = chart_models.device_plugin_daemonsets(values, release, namespace)
    return rendered, f"Release values rendered by helm (chart {pinned})"


def _device_plugin_agents(name: str, props: Props, resource: str, placement: Placement) -> list[Agent]:
    """Every DaemonSet the pinned chart renders with the Release's values (the plugin, the MPS control
    daemon, GFD if enabled); one unknown agent when they cannot be rendered, saying why."""
    version = props.get("version")
    try:
        rendered, source = device_plugin_daemonsets(name, props)
    except chart_models.ChartUnavailable as error:
        rendered, source = None, f"the pinned chart cannot be rendered: {error}"
    if rendered is None:
        return [Agent(f"{DEVICE_PLUGIN} (helm {version})", GPU, source, None, resource)]
    agents = []
    for ds, pod in rendered.items():
        # The MPS control daemon selects nvidia.com/mps.capable=true, set only where MPS sharing is configured.
        mps = ds.endswith("-mps-control-daemon")
        plugin = chart_models.is_device_plugin(pod)
        intent = GPU if plugin else NONE if mps else daemonset_intent({}, pod, placement)
        agents.append(Agent(f"{ds} (helm {version})", intent, source, pod, resource))
    return agents


def _addon_agents(props: Mapping[str, Any], resource: str) -> list[Agent]:
    """The DaemonSets of a modelled or EKS-managed add-on, or one unknown agent if they cannot be known."""
    addon, version = props.get("addonName"), props.get("addonVersion")
    if addon in chart_models.EKS_MANAGED:
        pod = chart_models.EKS_MANAGED_POD
        return [Agent(f"{addon} (EKS add-on)", ALL, chart_models.EKS_MANAGED[addon], pod, resource)]
    if addon not in chart_models.MODELLED_VERSIONS:
        return []
    source = f"add-on {addon} {version or ''}".strip()
    if not chart_models.modelled(addon, version):
        read = ", ".join(f"{v}*" for v in chart_models.MODELLED_VERSIONS[addon])
        shown = "not known yet" if version is None else repr(version)
        why = f"{addon} version {shown} is not one the chart model was read from ({read})"
        return [Agent(source, ALL, why, None, resource)]
    configuration = _json(props)  # read only here: a computed output, unknown on create
    if configuration is None:
        return [Agent(source, ALL, NOT_KNOWN_YET, None, resource)]
    known = f"configurationValues + chart {chart_models.MODELLED_VERSIONS[addon][0][1:-1]} defaults"
    if addon == CLOUDWATCH_ADDON:
        pods = chart_models.cloudwatch_pods(configuration)
        return [
            Agent(f"{ds} ({addon})", CLOUDWATCH_INTENTS[ds], known, pod, resource) for ds, pod in pods.items()
        ]
    pods = chart_models.node_monitoring_pods(configuration)
    agent, dcgm = pods["eks-node-monitoring-agent"], pods["dcgm-server (node monitoring)"]
    return [
        Agent(f"eks-node-monitoring-agent ({addon})", ALL, known, agent, resource),
        Agent(f"dcgm-server ({addon}, amd64 only)", NONE, DCGM_SERVER_ON_ARM, dcgm, resource),
    ]


def agents_of(resources: Resources, placement: Placement) -> list[Agent]:
    """Every DaemonSet the resources install, with where it is meant to run and its scheduling fields."""
    found: list[Agent] = []
    for typ, name, props in resources:
        resource = resource_key(typ, name)
        if typ == DAEMONSET:
            found.append(_daemonset_agent(name, props, resource, placement))
        elif typ == HELM_RELEASE and props.get("chart") == DEVICE_PLUGIN:
            found += _device_plugin_agents(name, props, resource, placement)
        elif typ == HELM_RELEASE and props.get("chart") not in NO_DAEMONSET_CHARTS:
            release = f"helm chart {props.get('chart')} (release {props.get('name', name)})"
            why = "no model of this chart: its DaemonSets cannot be seen offline"
            found.append(Agent(release, ALL, why, None, resource))
        elif typ == ADDON:
            found += _addon_agents(props, resource)
    addons = {props.get("addonName") for typ, _, props in resources if typ == ADDON}
    if any(typ == CLUSTER for typ, _, _ in resources):
        # pulumi-eks installs the VPC CNI and kube-proxy itself (not as resources we declare).
        for ds, addon in (("aws-node", "vpc-cni"), ("kube-proxy", "kube-proxy")):
            if not {ds, addon} & addons:
                source = chart_models.EKS_MANAGED[ds]
                found.append(Agent(f"{ds} (EKS-managed)", ALL, source, chart_models.EKS_MANAGED_POD, CLUSTER))
    return sorted(found, key=lambda a: a.name)


def land(agent: Agent, groups: Sequence[Group], placement: Placement) -> Landing:
    """Where the agent's pods go, and what is wrong with that."""
    if agent.pod is None:
        advice = f"placement unknown ({agent.source}): check it on the cluster with kubectl get ds -A -o wide"
        return Landing(agent, {g.name: "unknown" for g in groups}, (), (advice,))
    where = {}
    for group in groups:
        fitting = sum(fits(agent.pod, node).fits for node in group.nodes)
        where[group.name] = "-" if not fitting else "yes" if fitting == len(group.nodes) else "partial"
    problems: list[str] = []
    missed = [g for g in groups if g.gpu and where[g.name] != "yes"]
    stray = [g.name for g in groups if not g.gpu and where[g.name] != "-"]
    if agent.intent == GPU and missed:
        reasons = sorted({r for g in missed for n in g.nodes for r in fits(agent.pod, n).reasons})
        wanted = placement.agent_tolerations()
        tolerations = f"the toleration {wanted[0]}" if len(wanted) == 1 else f"the tolerations {wanted}"
        problems.append(
            f"is meant for GPU nodes but misses GPU pool(s) {[g.name for g in missed]} ({'; '.join(reasons)}): "
            f"add {tolerations} and select GPU nodes (nodeSelector "
            f"{placement.node_selector()})"
        )
    if agent.intent == GPU and stray:
        what = "the device plugin" if chart_models.is_device_plugin(agent.pod) else "a GPU agent"
        problems.append(f"is {what} but lands on non-GPU group(s) {stray}: select GPU nodes only")
    partial = [g.name for g in groups if where[g.name] != "yes"]
    advice = f"runs on every node but misses group(s) {partial}: tolerate their taints"
    return Landing(agent, where, tuple(problems), (advice,) if agent.intent == ALL and partial else ())


def landings(resources: Resources, placement: Placement) -> list[Landing]:
    """Every agent against the stack's node groups (or the contract's stand-ins if it declares none)."""
    groups = groups_of(resources, placement) or contract_groups(placement)
    return [land(agent, groups, placement) for agent in agents_of(resources, placement)]


def aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as text columns, each indented two spaces: the preview's tables."""
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]


def table(found: Sequence[Landing]) -> list[str]:
    """One row per agent: where it lands per node group, and the verdict."""
    if not found:
        return []
    groups = list(found[0].where)
    rows = [["agent (DaemonSet)", "meant for", *groups, "verdict"]]
    for landing in found:
        unknown = landing.agent.pod is None
        verdict = (
            "VIOLATION" if landing.problems else "unknown" if unknown else "check" if landing.advice else "ok"
        )
        rows.append([landing.agent.name, landing.agent.intent, *(landing.where[g] for g in groups), verdict])
    return aligned(rows)
