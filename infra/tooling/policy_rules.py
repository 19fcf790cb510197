"""The guardrails as plain functions: (resource type, properties) -> what is wrong and how to fix it.

The CrossGuard pack in ``policy/`` serves each rule; the offline preview runs the same
functions over what it captured. Properties are Pulumi's (camelCase) ones, which for
Kubernetes resources are the manifest. Each stack is judged by the contract it declares
(:func:`declared_contracts`): docs/decisions/0034-policy-pack-stack-contract.md.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infra.tooling.agents import landings
from infra.workloads.placement import (
    DEFAULT_PLACEMENT,
    GPU_TAINT_EFFECT,
    K8S_TO_EKS_EFFECT,
    POOL_LABEL,
    Placement,
    PlacementError,
)
from infra.workloads.scheduling import gpu_limit, match_expression, tolerates

STACK = "pulumi:pulumi:Stack"
"""The root resource; in ``AnalyzeStack`` its properties are the stack's outputs."""
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_EKS_CLUSTER = "aws:eks/cluster:Cluster"
"""pulumi-aws's plain cluster (``aws.eks.Cluster``): secrets encryption is ``encryptionConfig``."""
PULUMI_EKS_CLUSTER = "eks:index:Cluster"
"""pulumi-eks's component: secrets encryption is ``encryptionConfigKeyArn``."""
GPU_COMPONENTS = ("eks-gpu:index:GpuDeployment", "eks-gpu:index:GpuJob")
CONTROL_PLANE_LOGS = ("api", "audit", "authenticator")

WORKLOAD_TYPES = {
    f"kubernetes:{group}:{kind}"
    for group, kind in (
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("apps/v1", "ReplicaSet"),
        ("batch/v1", "Job"),
        ("batch/v1", "CronJob"),
        ("core/v1", "Pod"),
    )
}
GPU_INSTANCE_PREFIXES = ("g", "p")  # EC2's GPU families: g4dn, g5, g5g, g6, p4d, p5 ...
GPU_AMI_WORDS = frozenset({"NVIDIA", "GPU"})
"""Words of an EKS ``amiType`` (EKS API enum ``AMITypes``) that mean a GPU AMI: every ``*_NVIDIA``
variant (FIPS ones too) and AL2's accelerated ``AL2_x86_64_GPU``. ``*_NEURON`` is not one: Inferentia
and Trainium nodes offer ``aws.amazon.com/neuron``, not ``nvidia.com/gpu``. A test checks this against
the whole enum in botocore's EKS model (the pack's environment has no botocore)."""

Rule = Callable[[str, Mapping[str, Any], Placement], list[str]]
Resources = Sequence[tuple[str, str, Mapping[str, Any]]]
StackRule = Callable[[Resources, Placement], list[tuple[str, str]]]
"""Sees every resource of the stack at once; returns (resource, message) pairs."""


def is_gpu_ami_type(ami_type: Any) -> bool:
    """Is ``ami_type`` (a node group's ``amiType``) one of EKS's GPU AMIs? Enough evidence on its own."""
    return isinstance(ami_type, str) and bool(GPU_AMI_WORDS & set(ami_type.upper().split("_")))


def is_gpu_instance_type(instance_type: Any) -> bool:
    return str(instance_type).split(".")[0].startswith(GPU_INSTANCE_PREFIXES)


def is_gpu_node_group(props: Mapping[str, Any]) -> bool:
    """A GPU instance type (the node group's, or its launch template's: see :func:`node_group_overrides`) or a GPU AMI type.

    Instance types first: when they show a GPU, an ``amiType`` not known yet (a custom
    AMI in the launch template leaves it to AWS) does not stop the check.
    """
    return any(is_gpu_instance_type(t) for t in props.get("instanceTypes") or []) or is_gpu_ami_type(
        props.get("amiType")
    )


def pod_spec_of(resource_type: str, props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    spec = props.get("spec") or {}
    if resource_type.endswith(":Pod"):
        return spec
    if resource_type.endswith(":CronJob"):
        return ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template", {}).get("spec") or {}
    return (spec.get("template") or {}).get("spec") or {}


def _selects(pod: Mapping[str, Any], placement: Placement) -> bool:
    """Does the pod refuse every node without the contract's label?"""
    if (pod.get("nodeSelector") or {}).get(placement.key) == placement.value:
        return True
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    terms = (required or {}).get("nodeSelectorTerms") or []
    return bool(terms) and all(
        any(
            e.get("key") == placement.key
            and not match_expression(e, {})
            and match_expression(e, placement.node_labels())
            for e in term.get("matchExpressions") or []
        )
        for term in terms
    )


def gpu_workload_placement(resource_type: str, props: Mapping[str, Any], placement: Placement) -> list[str]:
    """Mandatory: a workload asking for GPUs tolerates the GPU taint and selects GPU nodes."""
    if resource_type not in WORKLOAD_TYPES:
        return []
    pod = pod_spec_of(resource_type, props)
    if not pod or gpu_limit(pod) == 0:
        return []
    problems = []
    if not any(tolerates(t, placement.node_taint()) for t in pod.get("tolerations") or []):
        problems.append(
            f"requests nvidia.com/gpu but does not tolerate the GPU taint: add the toleration {placement.toleration()} (or use infra.GpuDeployment / place_pod_spec)"
        )
    if not _selects(pod, placement):
        problems.append(
            f"requests nvidia.com/gpu but does not select GPU nodes: add nodeSelector {placement.node_selector()}"
        )
    return problems


def gpu_toleration_without_gpu(
    resource_type: str, props: Mapping[str, Any], placement: Placement
) -> list[str]:
    """Advisory: tolerating the GPU taint without asking for a GPU squats on GPU nodes (DaemonSets exempt)."""
    if resource_type not in WORKLOAD_TYPES or resource_type.endswith(":DaemonSet"):
        return []
    pod = pod_spec_of(resource_type, props) or {}
    if gpu_limit(pod) == 0 and any(
        tolerates(t, placement.node_taint()) for t in pod.get("tolerations") or []
    ):
        return [
            "tolerates the GPU taint but requests no nvidia.com/gpu: remove the toleration or request a GPU, so GPU nodes stay for GPU work"
        ]
    return []


def gpu_node_group_contract(resource_type: str, props: Mapping[str, Any], placement: Placement) -> list[str]:
    """Mandatory: every GPU node group carries the contract's taint and label."""
    if resource_type != NODE_GROUP or not is_gpu_node_group(props):
        return []
    problems = []
    if (props.get("labels") or {}).get(placement.key) != placement.value:
        problems.append(f"is a GPU node group without the label {placement.node_labels()}: add it to labels")
    if placement.eks_taint() not in (props.get("taints") or []):
        problems.append(f"is a GPU node group without the taint {placement.eks_taint()}: add it to taints")
    return problems


def _encrypts_secrets(encryption: Any) -> bool:
    """pulumi-aws ``encryptionConfig``: ``{provider: {keyArn}, resources: ["secrets"]}`` (older SDKs: a list of one).

    The key ARN is only looked for, not read: a key created in the same stack is not
    known during preview, and it will be there.
    """
    configs = [encryption] if isinstance(encryption, Mapping) else list(encryption or [])
    return any(
        isinstance(c, Mapping)
        and "secrets" in list(c.get("resources") or [])
        and "keyArn" in list(c.get("provider") or {})
        for c in configs
    )


def security_baseline(resource_type: str, props: Mapping[str, Any], placement: Placement) -> list[str]:
    """Mandatory: IMDSv2 on launch templates; cluster secrets encryption and control-plane logs."""
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
    return [
        (landing.agent.resource, f"{landing.agent.name} {message}")
        for landing in landings(resources, placement)
        for message in getattr(landing, kind)
    ]


def gpu_agents_on_gpu_pools(resources: Resources, placement: Placement) -> list[tuple[str, str]]:
    """Mandatory: every agent meant for GPU nodes lands on every GPU pool, and on no other node group.

    It sees inside Helm releases and add-ons through their inputs (``values``,
    ``configurationValues``) and the chart models of ``infra.tooling.agents``.
    """
    return _landing_messages(resources, placement, "problems")


def agent_placement_unknown(resources: Resources, placement: Placement) -> list[tuple[str, str]]:
    """Advisory: an agent whose placement cannot be determined offline, or a node agent missing a group."""
    return _landing_messages(resources, placement, "advice")


@dataclass(frozen=True)
class RuleSpec:
    name: str
    rule: Rule | StackRule
    default_level: str  # "mandatory" | "advisory" | "disabled"
    stack: bool = False
    """True: the rule takes the whole stack at once (``StackRule``)."""
    contract: bool = True
    """True: its verdict depends on the placement contract, so the pack serves it as a
    StackValidationPolicy that first reads the contract the stack declares; a per-resource
    rule is then applied to every resource. False: a ResourceValidationPolicy."""


RULES = (
    RuleSpec("gpu-workload-placement", gpu_workload_placement, "mandatory"),
    RuleSpec("gpu-toleration-without-gpu", gpu_toleration_without_gpu, "advisory"),
    RuleSpec("gpu-node-group-contract", gpu_node_group_contract, "mandatory"),
    RuleSpec("security-baseline", security_baseline, "mandatory", contract=False),
    RuleSpec("gpu-agents-on-gpu-pools", gpu_agents_on_gpu_pools, "mandatory", stack=True),
    RuleSpec("agent-placement-unknown", agent_placement_unknown, "advisory", stack=True),
)
LEVELS = ("mandatory", "advisory", "disabled")


def levels(config: Mapping[str, Any] | None = None) -> dict[str, str]:
    """Each rule's enforcement level: the defaults, overridden by policy config; bad config refused."""
    result = {r.name: r.default_level for r in RULES}
    for name, level in (config or {}).items():
        if name not in result:
            raise ValueError(f"unknown policy {name!r}; allowed: {', '.join(result)}")
        if level not in LEVELS:
            raise ValueError(f"policy {name}: level must be one of {', '.join(LEVELS)}, got {level!r}")
        result[name] = level
    return result


def placement_from_config(policy: str, config: Mapping[str, Any] | None) -> Placement | None:
    """A policy's pack config ``placement`` (key/value): an explicit override of the stack's contract, or None.

    CrossGuard hands each policy its own config, so the error names the policy; a
    contract the platform itself would refuse is refused here too.
    """
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


def resource_key(resource_type: str, name: str) -> str:
    """How rules name a resource: ``"<type> <name>"``."""
    return f"{resource_type} {name}"


@dataclass(frozen=True)
class Links:
    """What the engine knows about a stack's resources beyond their properties (keys: :func:`resource_key`).

    The pack fills it from pulumi_policy's ``PolicyResource.parent`` and ``.dependencies``,
    the offline preview from its registrations; both are optional.
    """

    parents: Mapping[str, str] = field(default_factory=dict)
    """resource -> its parent."""
    dependencies: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """resource -> the resources it depends on (those its inputs come from, and ``depends_on``)."""


class Overlay(Mapping[str, Any]):
    """``props`` with some keys given other values; every other key is read through.

    Read through, so pulumi_policy's proxy stays in charge of the rest: a value not
    known yet still raises when a rule reads it.
    """

    def __init__(self, props: Mapping[str, Any], overrides: Mapping[str, Any]) -> None:
        self._props, self._overrides = props, overrides

    def __getitem__(self, key: str) -> Any:
        return self._overrides[key] if key in self._overrides else self._props[key]

    def __iter__(self) -> Iterator[str]:
        yield from self._overrides
        yield from (k for k in self._props if k not in self._overrides)

    def __len__(self) -> int:
        return len(set(self._props) | set(self._overrides))


def _launch_template(
    key: str, props: Mapping[str, Any], templates: Mapping[str, Mapping[str, Any]], links: Links
) -> Mapping[str, Any] | None:
    """The launch template a node group uses, when the stack shows which one.

    By the node group's ``launchTemplate.id`` or ``.name`` where those are known; else
    (a preview creating both: the id is not known yet) by the engine's dependency of the
    node group on exactly one launch template of the stack.
    """
    if "launchTemplate" not in props:
        return None
    ref = props.get("launchTemplate")
    if isinstance(ref, Mapping):
        for attribute in ("id", "name"):
            wanted = ref.get(attribute)
            found = [t for t in templates.values() if wanted and t.get(attribute) == wanted]
            if len(found) == 1:
                return found[0]
    linked = [templates[d] for d in links.dependencies.get(key, ()) if d in templates]
    return linked[0] if len(linked) == 1 else None


def node_group_overrides(resources: Resources, links: Links | None = None) -> dict[str, dict[str, Any]]:
    """Node groups whose instance type is set only in their launch template: {node group: {"instanceTypes": [it]}}.

    That is what EKS does: with a launch template that names an instance type the node
    group lists none (CreateNodegroup refuses both), and its nodes are that type.
    """
    links = links or Links()
    templates = {resource_key(t, n): p for t, n, p in resources if t == LAUNCH_TEMPLATE}
    overrides = {}
    for typ, name, props in resources:
        key = resource_key(typ, name)
        if typ != NODE_GROUP or props.get("instanceTypes"):
            continue
        template = _launch_template(key, props, templates, links)
        instance_type = (template or {}).get("instanceType")
        if isinstance(instance_type, str) and instance_type:
            overrides[key] = {"instanceTypes": [instance_type]}
    return overrides


def _effective(
    typ: str, name: str, props: Mapping[str, Any], overrides: Mapping[str, Any]
) -> Mapping[str, Any]:
    key = resource_key(typ, name)
    return Overlay(props, overrides[key]) if key in overrides else props


def _valid(key: Any, value: Any) -> Placement | None:
    try:
        return Placement(key=key, value=value)
    except PlacementError:
        return None


def _distinct(found: list[Placement | None]) -> tuple[Placement, ...]:
    seen: dict[tuple[str, str], Placement] = {}
    for placement in found:
        if placement is not None:
            seen.setdefault((placement.key, placement.value), placement)
    return tuple(seen.values())


def _exported(resources: Resources) -> tuple[Placement, ...]:
    """The stack's own ``placement`` output (the platform exports its contract so)."""
    found = []
    for typ, _, props in resources:
        raw = props.get("placement") if typ == STACK else None
        if raw is None:
            continue
        try:
            found.append(Placement.from_dict(raw))
        except PlacementError:
            # An output of that name that is no contract (a pool name, a string): not a
            # declaration. Raising here would fail the whole analysis (the SDK's AnalyzeStack
            # catches only unknown values), so the stack is judged by its other evidence.
            continue
    return _distinct(found)


def _carried_by_gpu_node_groups(
    resources: Resources, overrides: Mapping[str, Mapping[str, Any]]
) -> tuple[Placement, ...]:
    """Each ``key=value`` a GPU node group is both tainted (NO_SCHEDULE) and labelled with."""
    no_schedule = K8S_TO_EKS_EFFECT[GPU_TAINT_EFFECT]
    found = []
    for typ, name, props in resources:
        if typ != NODE_GROUP or not is_gpu_node_group(_effective(typ, name, props, overrides)):
            continue
        labels = props.get("labels") or {}
        found += [
            _valid(t.get("key"), t.get("value"))
            for t in props.get("taints") or []
            if t.get("effect") == no_schedule
            and t.get("key") in labels
            and labels[t["key"]] == t.get("value")
        ]
    return _distinct(found)


def _placed_by_gpu_components(resources: Resources, links: Links) -> tuple[Placement, ...]:
    """The contract ``GpuDeployment``/``GpuJob`` placed their pods with: a NoSchedule toleration it also selects.

    ``place_pod_spec`` adds exactly that pair, from the ``placement`` the component
    was given (in a consumer, the platform's exported one). The component itself
    registers no inputs the engine could show, so its pods are where the contract is.
    """
    found = []
    for typ, name, props in resources:
        parent = links.parents.get(resource_key(typ, name), "")
        if typ not in WORKLOAD_TYPES or parent.split(" ", 1)[0] not in GPU_COMPONENTS:
            continue
        pod = pod_spec_of(typ, props) or {}
        selector = pod.get("nodeSelector") or {}
        found += [
            _valid(t.get("key"), t.get("value"))
            for t in pod.get("tolerations") or []
            if t.get("operator") == "Equal"
            and t.get("effect") == GPU_TAINT_EFFECT
            and t.get("key") != POOL_LABEL
            and t.get("key") in selector
            and selector[t["key"]] == t.get("value")
        ]
    return _distinct(found)


def declared_contracts(resources: Resources, links: Links | None = None) -> tuple[Placement, ...]:
    """The placement contract(s) the stack declares: its ``placement`` output, else the taint and label
    its GPU node groups carry, else the pair its GPU components' pods tolerate and select, else ``GPU=true``.

    Properties are plain data here (unknowns as None). Every contract of the first level
    that shows one is returned; a resource following one of them follows the stack's.
    """
    links = links or Links()
    for found in (
        _exported(resources),
        _carried_by_gpu_node_groups(resources, node_group_overrides(resources, links)),
        _placed_by_gpu_components(resources, links),
    ):
        if found:
            return found
    return (DEFAULT_PLACEMENT,)


@dataclass(frozen=True)
class StackView:
    """What the contract rules need to know of the whole stack."""

    contracts: tuple[Placement, ...]
    overrides: Mapping[str, Mapping[str, Any]]
    """Node group properties as EKS will see them (:func:`node_group_overrides`)."""


def stack_view(
    resources: Resources, links: Links | None = None, placement: Placement | None = None
) -> StackView:
    """``resources`` with plain properties; ``placement``: an explicit contract (pack config), else the declared one."""
    return StackView(
        contracts=(placement,) if placement is not None else declared_contracts(resources, links),
        overrides=node_group_overrides(resources, links),
    )


def _under_any(contracts: Sequence[Placement], judge: Callable[[Placement], list[Any]]) -> list[Any]:
    """Nothing when one of the contracts finds nothing wrong; else what the first one found."""
    first: list[Any] | None = None
    for contract in contracts:
        found = judge(contract)
        if not found:
            return []
        first = found if first is None else first
    return first or []


def resource_violations(
    spec: RuleSpec, resources: Resources, view: StackView, skip: tuple[type[Exception], ...] = ()
) -> list[tuple[str, str]]:
    """A per-resource rule over every resource, judged by the stack's contract: (resource key, message).

    ``skip``: errors that leave a resource unjudged (the pack passes pulumi_policy's
    UnknownValueError: a field not known during preview is no violation yet).
    """
    found = []
    for typ, name, props in resources:
        effective = _effective(typ, name, props, view.overrides)
        try:
            messages = _under_any(view.contracts, lambda c: spec.rule(typ, effective, c))  # noqa: B023
        except skip:
            continue
        found += [(resource_key(typ, name), message) for message in messages]
    return found


def stack_violations(spec: RuleSpec, resources: Resources, view: StackView) -> list[tuple[str, str]]:
    """A stack rule, judged by the stack's contract, node groups as EKS will see them."""
    effective = [(t, n, _effective(t, n, p, view.overrides)) for t, n, p in resources]
    return _under_any(view.contracts, lambda c: spec.rule(effective, c))  # type: ignore[call-arg]


@dataclass(frozen=True)
class Violation:
    rule: str
    level: str
    resource: str
    message: str


def check(
    resources: list[tuple[str, str, Mapping[str, Any]]],
    placement: Placement | None = None,
    config: Mapping[str, Any] | None = None,
    links: Links | None = None,
) -> list[Violation]:
    """Run every enabled rule over (type, name, props) triples, as the pack does.

    ``placement``: judge by this contract (as pack config would); None: by the one the
    stack declares (:func:`declared_contracts`). ``links``: parents and dependencies.
    """
    enforcement = levels(config)
    view = stack_view(resources, links, placement)
    found = []
    for spec in RULES:
        if enforcement[spec.name] == "disabled":
            continue
        judged = (
            stack_violations(spec, resources, view)
            if spec.stack
            else resource_violations(spec, resources, view)
        )
        found += [
            Violation(spec.name, enforcement[spec.name], resource, message) for resource, message in judged
        ]
    return found
