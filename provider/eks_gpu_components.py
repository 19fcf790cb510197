"""The GPU components as a Pulumi component package, for TypeScript, Go, C#, Java and YAML stacks."""

import importlib
import importlib.metadata
from collections.abc import Mapping
from typing import Any, ClassVar, TypedDict

import pulumi
from typing_extensions import NotRequired

PACKAGE = "eks-gpu"
"""The package name: type tokens are ``eks-gpu:index:<Component>``."""

VERSION = importlib.metadata.version("eks-gpu-infra")
"""The schema's version is this repository's package version (SDK codegen needs one)."""

JsonObject = pulumi.Input[dict[str, pulumi.Input[Any]]]
"""An open object (schema ``type: object`` of ``pulumi.json#/Any``), passed on whole; values may be Outputs."""

Child = pulumi.Output[Any]
"""A child resource as an output: the schema names its Kubernetes resource (``_children``)."""


class _WorkloadArgs(TypedDict):
    """What both components take (``infra.workloads.component.GpuWorkloadArgs``); {placeholders} are each one's words."""

    spec: JsonObject
    """The {kind} spec ({token}Spec, camelCase as in YAML). The GPU nodeSelector, toleration and nvidia.com/gpu limits are merged in{spec_extra}; every field of yours is kept."""
    metadata: NotRequired[JsonObject]
    """The {kind}'s metadata (name, namespace, labels, annotations), as for {token}."""
    gpus: NotRequired[int]
    """GPUs per pod, given to the first container unless a container declares nvidia.com/gpu (default 1)."""
    placement: NotRequired[JsonObject]
    """The placement contract as the platform stack exports it (its `placement` output): {{key, value}} and, where the platform has them, pools. Default {{key: GPU, value: "true"}}."""
    pool: NotRequired[str]
    """Run only on this GPU pool (nodeSelector eks-gpu/pool); it must be one of the pools the placement exports, and the pool must fit the pod's GPUs."""
    security_profile: NotRequired[str]
    """securityContext defaults, your values always winning: "baseline" (default; "restricted" when the spec already runs as non-root), "restricted" or "none"."""
    check_image_architecture: NotRequired[bool]
    """Refuse images without a linux/arm64 build (the GPU nodes are arm64), asked of their registries before anything is declared (default true)."""
    create_timeout: NotRequired[str]
    """How long `pulumi up` waits for {create_wait} on create, as a duration ("90m", "2h"; default {wait_default}). The customTimeouts resource option does the same: give one or the other."""
    update_timeout: NotRequired[str]
    """How long `pulumi up` waits for {update_wait}, as a duration (default {wait_default})."""
    delete_timeout: NotRequired[str]
    """How long `pulumi destroy` waits for the deletion, as a duration (default pulumi-kubernetes' own)."""


class GpuDeploymentArgs(_WorkloadArgs):
    """Inputs of ``eks-gpu:index:GpuDeployment``: ``infra.workloads.GpuDeploymentArgs`` field by field."""

    pod_disruption_budget: NotRequired[bool]
    """Declare a PodDisruptionBudget (maxUnavailable 1) when replicas > 1 or not known yet (default true)."""
    rolling_update_defaults: NotRequired[bool]
    """Default to maxSurge 0 / maxUnavailable 1, so an update needs no spare GPU node (default true)."""
    autoscaled: NotRequired[bool]
    """A HorizontalPodAutoscaler (or KEDA) owns spec.replicas (default false). True: spec.replicas, if given, is the count at create, later `pulumi up`s never send it again (the Deployment ignores changes to it), so the autoscaler's count stays; the PodDisruptionBudget is declared whatever the count."""


class GpuJobArgs(_WorkloadArgs):
    """Inputs of ``eks-gpu:index:GpuJob``: ``infra.workloads.GpuJobArgs`` field by field."""

    wait_for_completion: NotRequired[bool]
    """Wait in `pulumi up` until the Job completes (default true); false adds the annotation pulumi.com/skipAwait: "true"."""
    queue: NotRequired[str]
    """Submit the Job to Kueue through this LocalQueue of its namespace (each team's is "default"; the platform's `teams:`): Kueue admits it when the team's GPU quota allows (label kueue.x-k8s.io/queue-name). Needs metadata.namespace, the team's namespace, when the placement lists the teams' queues. createTimeout/updateTimeout default to 4h while it waits for completion."""
    priority: NotRequired[str]
    """With queue: the Job's Kueue priority class, "low", "normal" or "high" (default the team's); a higher one preempts a lower one of the same team."""
    min_parallelism: NotRequired[int]
    """With queue: Kueue may start the Job with this many pods or more, fewer than its parallelism (partial admission; only for a team with partialAdmission: true)."""
    replace_unready: NotRequired[bool]
    """Run a failed Job again: the next `pulumi up` replaces it (annotation pulumi.com/replaceUnready: "true"; default false: a failed Job stays until its spec changes). pulumi-kubernetes replaces any Job that is not Complete, a running one too, so this needs spec.activeDeadlineSeconds (a plain number), no spec.suspend and waitForCompletion true; `pulumi up` then waits at least the deadline + the pods' grace period + 2 minutes (createTimeout/updateTimeout default to that; shorter ones are refused), so the Job has completed or failed when a later `pulumi up` looks at it."""


class _Served(pulumi.ComponentResource):
    """A served component: its subclass is the schema; constructing it returns the real one of infra.workloads.

    The real one already registers under the same type token, so it is returned, not wrapped;
    its attributes (``name``, ``namespace``, the children) are the outputs.
    Every input is passed on as a dict (snake_case keys), so the component reads it as it reads
    any dict (``component.read_args``) and refuses one it does not take with its own message.
    Only private annotations besides the outputs here: the analyzer reads this class too.
    """

    _real: ClassVar[str]
    """``module:Class`` of the :mod:`infra.workloads` component this one serves, imported when constructed."""
    _kind: ClassVar[str]
    """The Kubernetes resource the component declares, by type token: its spec and the docs' words come from it."""
    _children: ClassVar[dict[str, str]]
    """Each child output (Python name) -> the Kubernetes resource type token it holds."""
    _words: ClassVar[dict[str, str]]
    """What fills the {placeholders} of the shared inputs' and outputs' descriptions."""

    name: pulumi.Output[str]
    """The {kind}'s name (metadata.name, auto-named from the resource name if not given)."""
    namespace: pulumi.Output[str]
    """The {kind}'s namespace."""

    def __new__(
        cls, resource_name: str, args: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None
    ) -> Any:
        from infra.workloads.wire import whole_numbers

        inputs = {key: whole_numbers(value) for key, value in args.items()}
        return served_class(cls)(resource_name, inputs, opts)


class GpuDeployment(_Served):
    """A Kubernetes Deployment whose pods land on the platform's GPU nodes and only there: nodeSelector, toleration and nvidia.com/gpu limits always set."""

    _real = "infra.workloads.gpu_deployment:GpuDeployment"
    _kind = "kubernetes:apps/v1:Deployment"
    _children = {"deployment": _kind, "pod_disruption_budget": "kubernetes:policy/v1:PodDisruptionBudget"}
    _words = {
        "create_wait": "the Deployment's rollout",
        "update_wait": "the rollout on update",
        "spec_extra": "",
        "wait_default": "30m",
    }

    deployment: Child
    """The Deployment itself: depend on it, or read its status as recorded when `pulumi up`'s wait ended (its counts can lag the cluster's; `pulumi refresh` records them)."""
    pod_disruption_budget: Child | None
    """The PodDisruptionBudget, when one is declared (podDisruptionBudget true and replicas > 1, unknown, or autoscaled)."""

    def __init__(
        self, resource_name: str, args: GpuDeploymentArgs, opts: pulumi.ResourceOptions | None = None
    ):
        """Never runs (``__new__`` returns another class); its ``args`` annotation is the analyzer's entry point."""


class GpuJob(_Served):
    """A Kubernetes Job (training, batch inference) whose pods land on the platform's GPU nodes and only there: nodeSelector, toleration and nvidia.com/gpu limits always set."""

    _real = "infra.workloads.gpu_job:GpuJob"
    _kind = "kubernetes:batch/v1:Job"
    _children = {"job": _kind}
    _words = {
        "create_wait": "the Job to complete",
        "update_wait": "a replaced Job to complete",
        "spec_extra": ", restartPolicy defaults to Never",
        "wait_default": "60m",
    }

    job: Child
    """The Job itself: depend on it (e.g. to run after training), or read its status (e.g. status.succeeded)."""

    def __init__(self, resource_name: str, args: GpuJobArgs, opts: pulumi.ResourceOptions | None = None):
        """Never runs (``__new__`` returns another class); its ``args`` annotation is the analyzer's entry point."""


COMPONENTS: list[type[_Served]] = [GpuDeployment, GpuJob]
"""What the package serves, in schema order."""
SHARED_ARGS = [_WorkloadArgs]
"""Where the inputs both components take are declared and described (their args TypedDicts inherit them)."""


def served_class(served: type[_Served]) -> type[pulumi.ComponentResource]:
    """The :mod:`infra.workloads` class ``served`` constructs (importing it, once, on first use)."""
    module, name = served._real.split(":")
    return getattr(importlib.import_module(module), name)
