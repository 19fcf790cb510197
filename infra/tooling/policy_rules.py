"""The guardrails as plain functions: (resource type, properties) -> what is wrong and how to fix it.

The CrossGuard pack in ``policy/`` serves each rule; the offline preview runs the same
functions over what it captured. Properties are Pulumi's (camelCase) ones, which for
Kubernetes resources are the manifest. Each stack is judged by the contract it declares
(:func:`declared_contracts`): docs/decisions/0034-policy-pack-stack-contract.md.
"""

from __future__ import annotations

import inspect
from collections import ChainMap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infra.tooling import pod_props
from infra.tooling.agents import CLUSTER as PULUMI_EKS_CLUSTER
from infra.tooling.agents import (
    NODE_GROUP,
    NODEPOOL,
    Props,
    Resources,
    is_gpu_node_group,
    is_gpu_nodepool,
    landings,
    nodepool_template,
)
from infra.tooling.manifests import HELM_RELEASE_TYPE, is_manifest_type
from infra.tooling.node_group_props import labels, problems, taints
from infra.tooling.queue_rules import (
    cluster_queue_scoped,
    flavor_quota_reachable,
    priority_class_declared,
    queued_job_declared_queue,
)
from infra.tooling.resource_keys import resource_key
from infra.workloads import gpu_deployment, gpu_job
from infra.workloads.placement import (
    DEFAULT_PLACEMENT,
    GPU_RESOURCE,
    GPU_TAINT_EFFECT,
    K8S_TO_EKS_EFFECT,
    POOL_LABEL,
    GpuPool,
    Placement,
    PlacementError,
)
from infra.workloads.pools import required_terms
from infra.workloads.scheduling import Node, fits, gpu_limit, match_expression, tolerates, whole_gpus

STACK = "pulumi:pulumi:Stack"
"""The root resource; in ``AnalyzeStack`` its properties are the stack's outputs."""
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_EKS_CLUSTER = "aws:eks/cluster:Cluster"
"""pulumi-aws's plain cluster: secrets encryption is ``encryptionConfig`` (pulumi-eks's: ``encryptionConfigKeyArn``)."""
GPU_COMPONENTS = (gpu_deployment.TYPE_TOKEN, gpu_job.TYPE_TOKEN)
CONTROL_PLANE_LOGS = ("api", "audit", "authenticator")
AGENT_KINDS = ("DaemonSet", "DaemonSetPatch")
"""Node agents: they tolerate every taint on purpose (``gpu-toleration-without-gpu`` leaves them be)."""

Contracts = Placement | tuple[Placement, ...] | None
"""One contract (pack config), the ones :func:`declared_contracts` found, or None: the stack's own."""
Rule = Callable[[str, Props, Placement], list[str]]
StackRule = Callable[[Resources, Placement], list[tuple[str, str]]]
"""Sees every resource of the stack at once; returns (resource, message) pairs."""


def pod_specs_of(resource_type: str, props: Props) -> list[tuple[str, dict[str, Any]]]:
    """(path, well-formed parts) of every pod spec of a Kubernetes object, found by shape
    (:mod:`infra.tooling.pod_props`): ``workload-settings`` names the malformed rest."""
    if not is_manifest_type(resource_type):
        return []
    return [(path, pod_props.pod_spec(pod)) for path, pod in pod_props.pod_specs(props)]


def _selects(pod: Mapping[str, Any], placement: Placement) -> bool:
    """Does the pod refuse every node without the contract's label?"""
    if (pod.get("nodeSelector") or {}).get(placement.key) == placement.value:
        return True
    terms = required_terms(pod) or []
    return bool(terms) and all(
        any(
            e.get("key") == placement.key
            and e.get("operator") is not None  # not known yet: selects nothing until known
            and not match_expression(e, {})
            and match_expression(e, placement.node_labels())
            for e in term.get("matchExpressions") or []
        )
        for term in terms
    )


def _tolerates_gpu_taint(pod: Mapping[str, Any], placement: Placement) -> bool:
    return any(tolerates(t, placement.node_taint()) for t in pod.get("tolerations") or [])


def gpu_workload_placement(resource_type: str, props: Props, placement: Placement) -> list[str]:
    """Every pod spec asking for GPUs, in any Kubernetes object, tolerates the GPU taint and selects GPU nodes."""
    problems = []
    for path, pod in pod_specs_of(resource_type, props):
        if gpu_limit(pod) == 0:
            continue
        if not _tolerates_gpu_taint(pod, placement):
            problems.append(
                f"{path} requests nvidia.com/gpu but does not tolerate the GPU taint: add the toleration "
                f"{placement.toleration()} (or use infra.GpuDeployment / place_pod_spec)"
            )
        if not _selects(pod, placement):
            problems.append(
                f"{path} requests nvidia.com/gpu but does not select GPU nodes: add nodeSelector "
                f"{placement.node_selector()}"
            )
    return problems


def gpu_toleration_without_gpu(resource_type: str, props: Props, placement: Placement) -> list[str]:
    """Tolerating the GPU taint without asking for a GPU squats on GPU nodes (DaemonSets exempt)."""
    if resource_type.rsplit(":", 1)[-1] in AGENT_KINDS:
        return []
    return [
        f"{path} tolerates the GPU taint but requests no nvidia.com/gpu: remove the toleration or request a GPU, "
        "so GPU nodes stay for GPU work"
        for path, pod in pod_specs_of(resource_type, props)
        if gpu_limit(pod) == 0 and _tolerates_gpu_taint(pod, placement)
    ]


def helm_release_unseen(resource_type: str, props: Props, placement: Placement) -> list[str]:
    """A Helm release's objects are not in its inputs, so no rule sees their pod specs."""
    if resource_type != HELM_RELEASE_TYPE:
        return []
    return [
        f"is a Helm release (chart {props.get('chart')!r}): the pack cannot see the objects it installs, so "
        "their pod specs are not judged; use kubernetes.helm.v4.Chart (its objects are judged), or check that "
        f"its values give GPU pods nodeSelector {placement.node_selector()} and the toleration "
        f"{placement.toleration()}"
    ]


def gpus_beyond_a_sliced_pool(resource_type: str, props: Props, placement: Placement) -> list[str]:
    """No container asking for more than one GPU may land on a time-sliced pool, whose
    device plugin refuses it only after the autoscaler paid for a node. The why: docs/operations.md."""
    return [m for _, pod in pod_specs_of(resource_type, props) for m in _beyond_sliced(pod, placement)]


def _pool_node(placement: Placement, pool: GpuPool) -> Node:
    """A node of ``pool`` as the contract states it: its labels, its taints, the GPUs it advertises."""
    taints = tuple(placement.pool_taints(pool.name))
    return Node(pool.name, placement.pool_labels(pool.name), taints, {GPU_RESOURCE: pool.slots_per_node})


def _beyond_sliced(pod: Mapping[str, Any], placement: Placement) -> list[str]:
    containers = [*(pod.get("initContainers") or []), *(pod.get("containers") or [])]
    largest = max((whole_gpus(c) for c in containers), default=0)
    found = []
    for pool in (p for p in placement.pools if p.shared and largest > p.max_gpus_per_container):
        if fits(pod, _pool_node(placement, pool)).fits:
            found.append(
                f"has a container asking for {largest} {GPU_RESOURCE} and can land on pool {pool.name!r}, which "
                f"shares each GPU {pool.time_slicing_replicas} ways: its device plugin refuses any container's "
                f"request above 1. Select another pool (nodeSelector {POOL_LABEL}: <pool>) or ask for 1 per container"
            )
    return found


def karpenter_pool_routing(resource_type: str, props: Props, placement: Placement) -> list[str]:
    """With node-group and Karpenter pools, no GPU pod can land on both kinds (each would
    launch a node for it, one idle and paid), and every GPU NodePool carries the provisioner taint."""
    if not placement.mixed:
        return []
    groups = [p.name for p in placement.pools if not p.karpenter]
    if resource_type == NODEPOOL and is_gpu_nodepool(props):
        if placement.provisioner_taint() in nodepool_template(props)[1]:
            return []
        return [
            f"is a GPU NodePool in a cluster that also has node-group pools {groups}, without the taint "
            f"{placement.provisioner_taint()}: Karpenter would launch a node for every GPU pod that names no pool, "
            "and Cluster Autoscaler another; add it to spec.template.spec.taints"
        ]
    found = []
    for path, pod in pod_specs_of(resource_type, props):
        lands = [p for p in placement.pools if gpu_limit(pod) and fits(pod, _pool_node(placement, p)).fits]
        on_groups = [p.name for p in lands if not p.karpenter]
        on_karpenter = [p.name for p in lands if p.karpenter]
        if on_groups and on_karpenter:
            found.append(
                f"{path} can land on node-group pool(s) {on_groups} and on Karpenter pool(s) {on_karpenter}: "
                "Cluster Autoscaler and Karpenter would each launch a GPU node for it, and one would idle, paid. "
                f"Name one pool (nodeSelector {POOL_LABEL}: <pool>, or pool= in GpuDeployment, GpuJob or "
                f"place_pod_spec); only a pod of a Karpenter pool tolerates {placement.provisioner_toleration()}"
            )
    return found


def gpu_node_group_contract(resource_type: str, props: Props, placement: Placement) -> list[str]:
    """Every GPU node group, and every Karpenter GPU NodePool, carries the contract's taint and
    label (a node group in the EKS spelling, a NodePool in Kubernetes')."""
    if resource_type == NODEPOOL and is_gpu_nodepool(props):
        (node_labels, node_taints, _), taint = nodepool_template(props), placement.node_taint()
        what, where = "GPU NodePool", ("spec.template.metadata.labels", "spec.template.spec.taints")
    elif resource_type == NODE_GROUP and is_gpu_node_group(props):
        node_labels, node_taints = labels(props), [dict(t) for t in taints(props)]
        taint, what, where = placement.eks_taint(), "GPU node group", ("labels", "taints")
    else:
        return []
    found = []
    if node_labels.get(placement.key) != placement.value:
        found.append(f"is a {what} without the label {placement.node_labels()}: add it to {where[0]}")
    if taint not in node_taints:
        found.append(f"is a {what} without the taint {taint}: add it to {where[1]}")
    return found


def node_group_settings(resource_type: str, props: Props, placement: Placement) -> list[str]:
    """A node group's taints, labels, instance types and sizes are written as EKS takes them (NO_SCHEDULE, not NoSchedule)."""
    return problems(props) if resource_type == NODE_GROUP else []


def workload_settings(resource_type: str, props: Props, placement: Placement) -> list[str]:
    """Every pod spec's nodeSelector, tolerations, node affinity and GPU requests are written as Kubernetes takes them."""
    return pod_props.problems(props) if is_manifest_type(resource_type) else []


def _encrypts_secrets(encryption: Any) -> bool:
    """pulumi-aws ``encryptionConfig``: ``{provider: {keyArn}, resources: ["secrets"]}`` (older SDKs: a list of
    one). The key ARN is only looked for, not read: a key created in the same stack is not known during
    preview, and it will be there."""
    configs = [encryption] if isinstance(encryption, Mapping) else list(encryption or [])
    return any(
        isinstance(c, Mapping)
        and "secrets" in list(c.get("resources") or [])
        and "keyArn" in list(c.get("provider") or {})
        for c in configs
    )


def security_baseline(resource_type: str, props: Props, placement: Placement) -> list[str]:
    """Launch templates require IMDSv2; clusters encrypt their secrets and send control-plane logs."""
    if (
        resource_type == LAUNCH_TEMPLATE
        and (props.get("metadataOptions") or {}).get("httpTokens") != "required"
    ):
        return ["does not require IMDSv2: set metadataOptions.httpTokens to 'required'"]
    if resource_type not in (PULUMI_EKS_CLUSTER, AWS_EKS_CLUSTER):
        return []
    problems = []
    if resource_type == PULUMI_EKS_CLUSTER and not props.get("encryptionConfigKeyArn"):
        problems.append("does not encrypt Kubernetes secrets: set encryptionConfigKeyArn to a KMS key")
    if resource_type == AWS_EKS_CLUSTER and not _encrypts_secrets(props.get("encryptionConfig")):
        problems.append(
            "does not encrypt Kubernetes secrets: set encryptionConfig to "
            "{'provider': {'keyArn': <a KMS key ARN>}, 'resources': ['secrets']}"
        )
    missing = set(CONTROL_PLANE_LOGS) - set(props.get("enabledClusterLogTypes") or [])
    if missing:
        problems.append(f"does not log {sorted(missing)}: add them to enabledClusterLogTypes")
    return problems


def _landing_messages(resources: Resources, placement: Placement, kind: str) -> list[tuple[str, str]]:
    found = landings(resources, placement)
    return [(x.agent.resource, f"{x.agent.name} {message}") for x in found for message in getattr(x, kind)]


def gpu_agents_on_gpu_pools(resources: Resources, placement: Placement) -> list[tuple[str, str]]:
    """Every agent meant for GPU nodes lands on every GPU pool and no other group.

    Helm releases and add-ons are seen through their inputs and the chart models (decision 0040)."""
    return _landing_messages(resources, placement, "problems")


def agent_placement_unknown(resources: Resources, placement: Placement) -> list[tuple[str, str]]:
    """Every agent's placement can be determined offline, and every node agent reaches every group it is meant for."""
    return _landing_messages(resources, placement, "advice")


@dataclass(frozen=True)
class RuleSpec:
    name: str
    rule: Rule | StackRule
    default_level: str  # "mandatory" | "advisory" | "disabled"
    stack: bool = False
    """True: the rule takes the whole stack at once (``StackRule``)."""
    contract: bool = True
    """True: its verdict depends on the placement contract, so the pack serves it as a stack policy
    that reads the contract the stack declares first. False: a ResourceValidationPolicy."""

    @property
    def description(self) -> str:
        """The rule docstring's first sentence on one line: what ``pulumi preview`` prints above each of
        the policy's violations (pulumi_policy puts it before the message)."""
        paragraph = " ".join(inspect.cleandoc(self.rule.__doc__ or self.name).split("\n\n")[0].split())
        return paragraph.split(". ", 1)[0].rstrip(".") + "."


RULES = (
    RuleSpec("gpu-workload-placement", gpu_workload_placement, "mandatory"),
    RuleSpec("gpu-toleration-without-gpu", gpu_toleration_without_gpu, "advisory"),
    RuleSpec("helm-release-unseen", helm_release_unseen, "advisory"),
    RuleSpec("gpus-beyond-a-sliced-pool", gpus_beyond_a_sliced_pool, "mandatory"),
    RuleSpec("karpenter-pool-routing", karpenter_pool_routing, "mandatory"),
    RuleSpec("gpu-node-group-contract", gpu_node_group_contract, "mandatory"),
    RuleSpec("node-group-settings", node_group_settings, "mandatory", contract=False),
    RuleSpec("workload-settings", workload_settings, "mandatory", contract=False),
    RuleSpec("security-baseline", security_baseline, "mandatory", contract=False),
    RuleSpec("gpu-agents-on-gpu-pools", gpu_agents_on_gpu_pools, "mandatory", stack=True),
    RuleSpec("agent-placement-unknown", agent_placement_unknown, "advisory", stack=True),
    # Kueue's objects and queued Jobs (infra/tooling/queue_rules.py, decision 0099).
    RuleSpec("queued-job-declared-queue", queued_job_declared_queue, "mandatory", stack=True),
    RuleSpec("cluster-queue-scoped", cluster_queue_scoped, "mandatory", stack=True),
    RuleSpec("flavor-quota-reachable", flavor_quota_reachable, "mandatory", stack=True),
    RuleSpec("priority-class-declared", priority_class_declared, "mandatory", stack=True),
)


def placement_from_config(policy: str, config: Mapping[str, Any] | None) -> Placement | None:
    """A policy's pack config ``placement`` (key/value): an explicit override of the stack's contract, or None.
    CrossGuard hands each policy its own config, so the error names the policy; a contract the platform
    itself would refuse is refused here too."""
    raw = (config or {}).get("placement")
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) != {"key", "value"}:
        raise PlacementError(
            f"policy pack config {policy}.placement must be an object with exactly key and value "
            f"(the platform's placement.key and placement.value), got {raw!r}"
        )
    try:
        return Placement(key=raw["key"], value=raw["value"])
    except PlacementError as error:
        raise PlacementError(f"policy pack config {policy}: {error}") from None


@dataclass(frozen=True)
class Links:
    """The engine's parents (resource -> parent) and dependencies (resource -> those its inputs come
    from, and ``depends_on``) of a stack's resources, named by :func:`resource_key` (their URNs). The pack fills it
    from pulumi_policy's ``PolicyResource``, the offline preview from its registrations."""

    parents: Mapping[str, str] = field(default_factory=dict)
    dependencies: Mapping[str, Sequence[str]] = field(default_factory=dict)


def _launch_template(key: str, props: Props, templates: Mapping[str, Props], links: Links) -> Props:
    """The launch template a node group uses, when the stack shows which one (else ``{}``): by its
    ``launchTemplate.id`` or ``.name`` where known, else (a preview creating both: the id is not known
    yet) by the engine's dependency of the node group on exactly one launch template of the stack."""
    if "launchTemplate" not in props:
        return {}
    ref = props.get("launchTemplate")
    for attribute in ("id", "name") if isinstance(ref, Mapping) else ():
        wanted = ref.get(attribute)
        found = [t for t in templates.values() if wanted and t.get(attribute) == wanted]
        if len(found) == 1:
            return found[0]
    linked = [templates[d] for d in links.dependencies.get(key, ()) if d in templates]
    return linked[0] if len(linked) == 1 else {}


def node_group_overrides(resources: Resources, links: Links | None = None) -> dict[str, dict[str, Any]]:
    """Node groups whose instance type is set only in their launch template: {node group: {"instanceTypes": [it]}},
    as EKS sees them (CreateNodegroup refuses a type in both; the nodes are the template's)."""
    templates = {resource_key(t, n): p for t, n, p in resources if t == LAUNCH_TEMPLATE}
    overrides = {}
    for typ, name, props in resources:
        key = resource_key(typ, name)
        if typ == NODE_GROUP and not props.get("instanceTypes"):
            instance_type = _launch_template(key, props, templates, links or Links()).get("instanceType")
            if isinstance(instance_type, str) and instance_type:
                overrides[key] = {"instanceTypes": [instance_type]}
    return overrides


def _effective(resources: Resources, overrides: Mapping[str, Mapping[str, Any]]) -> Resources:
    """Each resource with its overrides read first and every other key read through pulumi_policy's
    proxy, so a value not known yet still raises when a rule reads it (decision 0034)."""
    return [
        (t, n, ChainMap(overrides[resource_key(t, n)], p) if resource_key(t, n) in overrides else p)
        for t, n, p in resources
    ]


def _distinct(found: Sequence[Placement | None]) -> tuple[Placement, ...]:
    """The contracts found, each ``key=value`` once (the first one)."""
    seen: dict[tuple[str, str], Placement] = {}
    for placement in found:
        if placement is not None:
            seen.setdefault((placement.key, placement.value), placement)
    return tuple(seen.values())


def _contract(make: Callable[..., Placement], *args: Any) -> Placement | None:
    """``make(*args)``, or None for what is no contract: no declaration, and no error that would fail
    the whole analysis (the SDK's AnalyzeStack catches only unknown values)."""
    try:
        return make(*args)
    except PlacementError:
        return None


def _paired(items: Any, labels: Mapping[str, Any], effect: str) -> list[Placement | None]:
    """Each taint or toleration of ``effect`` whose ``key=value`` is also in ``labels``, as a contract."""
    if not isinstance(labels, Mapping):
        return []
    return [
        _contract(Placement, i.get("key"), i.get("value"))
        for i in (items if isinstance(items, Sequence) and not isinstance(items, str) else [])
        if isinstance(i, Mapping)
        and isinstance(i.get("key"), str)
        and i.get("operator", "Equal") == "Equal"
        and i.get("effect") == effect
        and i.get("key") in labels
        and labels[i["key"]] == i.get("value")
    ]


def declared_contracts(resources: Resources, links: Links | None = None) -> tuple[Placement, ...]:
    """The placement contract(s) the stack declares: its ``placement`` output, else the taint and label
    its GPU node groups carry, else the pair its GPU components' pods tolerate and select, else ``GPU=true``;
    every contract of the first level that shows one (properties as plain data; decision 0034)."""
    links = links or Links()
    effective = _effective(resources, node_group_overrides(resources, links))
    exported = [
        _contract(Placement.from_dict, p["placement"])
        for t, _, p in resources
        if t == STACK and p.get("placement") is not None
    ]
    carried = [
        contract
        for t, _, p in effective
        if t == NODE_GROUP and is_gpu_node_group(p)
        for contract in _paired(taints(p), labels(p), K8S_TO_EKS_EFFECT[GPU_TAINT_EFFECT])
    ] + [
        contract
        for t, _, p in effective
        if t == NODEPOOL and is_gpu_nodepool(p)
        for contract in _paired(nodepool_template(p)[1], nodepool_template(p)[0], GPU_TAINT_EFFECT)
    ]
    types = {resource_key(t, n): t for t, n, _ in resources}
    placed = [
        contract
        for t, n, p in resources
        if types.get(links.parents.get(resource_key(t, n), "")) in GPU_COMPONENTS
        for _, pod in pod_specs_of(t, p)
        for contract in _paired(pod.get("tolerations"), pod.get("nodeSelector") or {}, GPU_TAINT_EFFECT)
    ]
    for found in (exported, carried, placed):
        if contracts := _distinct(found):
            return contracts
    return (DEFAULT_PLACEMENT,)


@dataclass(frozen=True)
class StackView:
    """What the contract rules need to know of the whole stack."""

    contracts: tuple[Placement, ...]
    overrides: Mapping[str, Mapping[str, Any]]
    """Node group properties as EKS will see them (:func:`node_group_overrides`)."""


def stack_view(resources: Resources, links: Links | None = None, placement: Contracts = None) -> StackView:
    """``resources`` with plain properties, judged by ``placement`` (:data:`Contracts`)."""
    if isinstance(placement, Placement):
        placement = (placement,)
    contracts = declared_contracts(resources, links) if placement is None else placement
    return StackView(contracts, node_group_overrides(resources, links))


def _under_any(contracts: Sequence[Placement], judge: Callable[[Placement], list[Any]]) -> list[Any]:
    """Nothing when one of the contracts finds nothing wrong; else what the first one found."""
    found = [judge(contract) for contract in contracts]
    return found[0] if found and all(found) else []


def violations(
    spec: RuleSpec, resources: Resources, view: StackView, skip: tuple[type[Exception], ...] = ()
) -> list[tuple[str, str]]:
    """A rule judged by the stack's contract, node groups as EKS will see them: (resource key, message).
    A per-resource rule runs over every resource; ``skip``: errors that leave a resource unjudged (the
    pack's UnknownValueError, decision 0034)."""
    effective = _effective(resources, view.overrides)
    if spec.stack:
        return _under_any(view.contracts, lambda c: spec.rule(effective, c))  # type: ignore[call-arg]
    found = []
    for typ, name, props in effective:
        try:
            messages = _under_any(view.contracts, lambda c: spec.rule(typ, props, c))  # noqa: B023
        except skip:
            continue
        found += [(resource_key(typ, name), message) for message in messages]
    return found


@dataclass(frozen=True)
class Violation:
    rule: str
    level: str
    resource: str
    message: str


def check(resources: Resources, placement: Contracts = None, links: Links | None = None) -> list[Violation]:
    """Run every rule at its default level over (type, name, props) triples, as the pack does
    (``placement``: :data:`Contracts`; the Pulumi CLI overrides levels: ``--policy-pack-config``)."""
    view = stack_view(resources, links, placement)
    return [
        Violation(spec.name, spec.default_level, resource, message)
        for spec in RULES
        for resource, message in violations(spec, resources, view)
    ]
