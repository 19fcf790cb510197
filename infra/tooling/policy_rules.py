"""The guardrails as plain functions: (resource type, properties) -> what is wrong and how to fix it.

The CrossGuard pack in ``policy/`` wraps each rule in a ResourceValidationPolicy;
the offline preview runs the same functions over what it captured. Properties are
Pulumi's (camelCase) inputs, which for Kubernetes resources are the manifest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from infra.tooling.agents import landings
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement, PlacementError
from infra.workloads.scheduling import gpu_limit, match_expression, tolerates

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
AWS_EKS_CLUSTER = "aws:eks/cluster:Cluster"
"""pulumi-aws's plain cluster (``aws.eks.Cluster``): secrets encryption is ``encryptionConfig``."""
PULUMI_EKS_CLUSTER = "eks:index:Cluster"
"""pulumi-eks's component: secrets encryption is ``encryptionConfigKeyArn``."""
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
    """A GPU instance type or a GPU AMI type.

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


def gpu_agents_on_gpu_pools(resources: Resources, placement: Placement) -> list[tuple[str, str]]:
    """Mandatory: every agent meant for GPU nodes lands on every GPU pool, and on no other node group.

    A stack rule: it needs the node groups and the agents together. It sees inside
    Helm releases and add-ons through their inputs (the release's ``values``, the
    add-on's ``configurationValues``) and the chart models of ``infra.tooling.agents``.
    """
    return [
        (landing.agent.resource, f"{landing.agent.name} {problem}")
        for landing in landings(resources, placement)
        for problem in landing.problems
    ]


def agent_placement_unknown(resources: Resources, placement: Placement) -> list[tuple[str, str]]:
    """Advisory: an agent whose placement cannot be determined offline, or a node agent missing a group."""
    return [
        (landing.agent.resource, f"{landing.agent.name} {advice}")
        for landing in landings(resources, placement)
        for advice in landing.advice
    ]


@dataclass(frozen=True)
class RuleSpec:
    name: str
    rule: Rule | StackRule
    default_level: str  # "mandatory" | "advisory" | "disabled"
    stack: bool = False
    """True: the rule takes the whole stack (a StackValidationPolicy in the pack)."""


RULES = (
    RuleSpec("gpu-workload-placement", gpu_workload_placement, "mandatory"),
    RuleSpec("gpu-toleration-without-gpu", gpu_toleration_without_gpu, "advisory"),
    RuleSpec("gpu-node-group-contract", gpu_node_group_contract, "mandatory"),
    RuleSpec("security-baseline", security_baseline, "mandatory"),
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


def placement_from_config(policy: str, config: Mapping[str, Any] | None) -> Placement:
    """The placement a policy checks against: its pack config's ``placement`` (key/value), else the default.

    CrossGuard hands each policy its own config, so the error names the policy; a
    contract the platform itself would refuse is refused here too.
    """
    raw = (config or {}).get("placement")
    if raw is None:
        return DEFAULT_PLACEMENT
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
class Violation:
    rule: str
    level: str
    resource: str
    message: str


def check(
    resources: list[tuple[str, str, Mapping[str, Any]]],
    placement: Placement,
    config: Mapping[str, Any] | None = None,
) -> list[Violation]:
    """Run every enabled rule over (type, name, props) triples."""
    enforcement = levels(config)
    found = []
    for spec in RULES:
        if enforcement[spec.name] == "disabled":
            continue
        if spec.stack:
            for resource, message in spec.rule(resources, placement):  # type: ignore[call-arg]
                found.append(Violation(spec.name, enforcement[spec.name], resource, message))
            continue
        for typ, name, props in resources:
            for message in spec.rule(typ, props, placement):
                found.append(Violation(spec.name, enforcement[spec.name], f"{typ} {name}", message))
    return found
