"""GpuDeployment: exactly what Kubernetes receives, under Pulumi's mock engine."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

from infra import GpuDeployment, GpuDeploymentArgs, Placement, PodSpecError
from infra.tooling.manifests import ManifestError, manifest_of, validate_manifest
from infra.workloads.gpu_deployment import TYPE_TOKEN
from infra.workloads.placement import DEFAULT_PLACEMENT
from infra.workloads.scheduling import placeable_on
from tests.conftest import KUBERNETES_VERSION, deployment_spec, gpu_node, system_node

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
NODES = [
    gpu_node(**{"topology.kubernetes.io/zone": "us-west-2a"}),
    system_node(**{"topology.kubernetes.io/zone": "us-west-2a"}),
]


def _pod(run_result) -> dict:
    return run_result.one(DEPLOYMENT).inputs["spec"]["template"]["spec"]


def test_declares_one_child_deployment_parented_to_the_component(run) -> None:
    result = run(lambda: GpuDeployment("infer", spec=deployment_spec()))
    component = result.one(TYPE_TOKEN, "infer")
    child = result.one(DEPLOYMENT, "infer")
    assert child.parent == component.urn
    assert [r.type for r in result.children_of(component)] == [DEPLOYMENT]


def test_child_pod_spec_is_exactly_the_placed_spec(run) -> None:
    pod = _pod(run(lambda: GpuDeployment("infer", spec=deployment_spec())))
    assert pod == {
        "containers": [
            {
                "name": "model",
                "image": "nvcr.io/nvidia/tritonserver:24.08-py3",
                "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}},
                # baseline: the (root) Triton image still starts
                "securityContext": {"allowPrivilegeEscalation": False},
            }
        ],
        "automountServiceAccountToken": False,
        "nodeSelector": {"GPU": "true"},
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "tolerations": [{"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
    }


def _consumer_spec(image: pulumi.Input[str]) -> k8s.apps.v1.DeploymentSpecArgs:
    """What a user would write: typed Args, own selectors and tolerations, sidecar, Outputs."""
    return k8s.apps.v1.DeploymentSpecArgs(
        replicas=2,
        selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"app": "llm"}),
        template=k8s.core.v1.PodTemplateSpecArgs(
            metadata=k8s.meta.v1.ObjectMetaArgs(labels={"app": "llm"}),
            spec=k8s.core.v1.PodSpecArgs(
                node_selector={"topology.kubernetes.io/zone": "us-west-2a"},
                tolerations=[
                    k8s.core.v1.TolerationArgs(key="team", operator="Equal", value="ml", effect="NoSchedule")
                ],
                containers=[
                    k8s.core.v1.ContainerArgs(name="proxy", image="envoyproxy/envoy:v1.31.0"),
                    k8s.core.v1.ContainerArgs(
                        name="model",
                        image=image,
                        resources=k8s.core.v1.ResourceRequirementsArgs(
                            limits={"nvidia.com/gpu": "1", "memory": "12Gi"}
                        ),
                    ),
                ],
            ),
        ),
    )


def test_typed_args_with_outputs_are_merged_keeping_every_user_entry(run) -> None:
    result = run(lambda: GpuDeployment("llm", spec=_consumer_spec(pulumi.Output.from_input("repo/llm:1"))))
    pod = _pod(result)
    assert pod["nodeSelector"] == {"topology.kubernetes.io/zone": "us-west-2a", "GPU": "true"}
    assert pod["tolerations"] == [
        {"key": "team", "operator": "Equal", "value": "ml", "effect": "NoSchedule"},
        DEFAULT_PLACEMENT.toleration(),
    ]
    proxy, model = pod["containers"]
    assert "resources" not in proxy
    assert model["image"] == "repo/llm:1"
    assert model["resources"] == {
        "limits": {"nvidia.com/gpu": "1", "memory": "12Gi"},
        "requests": {"nvidia.com/gpu": "1"},
    }
    assert placeable_on(pod, NODES) == ["gpu"]


def test_snake_case_dicts_mean_the_same_as_camel_case(run) -> None:
    snake = {
        "selector": {"match_labels": {"app": "a"}},
        "template": {
            "metadata": {"labels": {"app": "a"}},
            "spec": {"containers": [{"name": "m"}], "node_selector": {"disk_type": "ssd"}},
        },
    }
    pod = _pod(run(lambda: GpuDeployment("a", spec=snake)))
    assert pod["nodeSelector"] == {"disk_type": "ssd", "GPU": "true"}  # user keys are not renamed


def test_every_emitted_object_is_valid_for_the_clusters_kubernetes_version(run) -> None:
    result = run(
        lambda: GpuDeployment("llm", spec=_consumer_spec("repo/llm:1"), metadata={"namespace": "ml"})
    )
    kinds = []
    for r in result.resources:
        if r.type.startswith("kubernetes:"):
            validate_manifest(manifest_of(r.type, r.name, r.inputs), KUBERNETES_VERSION)
            kinds.append(r.inputs["kind"])
    assert kinds == ["Deployment", "PodDisruptionBudget"]


def test_schema_check_catches_a_broken_manifest() -> None:
    broken = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {"replica": 1},
    }
    with pytest.raises(ManifestError, match="Deployment/x is not valid"):
        validate_manifest(broken, KUBERNETES_VERSION)


def test_pdb_only_when_more_than_one_replica(run) -> None:
    result = run(lambda: GpuDeployment("llm", spec=_consumer_spec("i")))
    pdb = result.one("kubernetes:policy/v1:PodDisruptionBudget")
    assert pdb.inputs["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "llm"}}}
    single = run(lambda: GpuDeployment("one", spec=deployment_spec()))
    assert single.of_type("kubernetes:policy/v1:PodDisruptionBudget") == []
    opted_out = run(
        lambda: GpuDeployment("llm", GpuDeploymentArgs(spec=_consumer_spec("i"), pod_disruption_budget=False))
    )
    assert opted_out.of_type("kubernetes:policy/v1:PodDisruptionBudget") == []


def test_explicit_provider_reaches_the_child(run) -> None:
    def program() -> None:
        provider = k8s.Provider("gpu-cluster", kubeconfig="{}")
        GpuDeployment("infer", spec=deployment_spec(), opts=pulumi.ResourceOptions(provider=provider))

    result = run(program)
    provider = result.one("pulumi:providers:kubernetes", "gpu-cluster")
    assert result.one(DEPLOYMENT).provider.startswith(provider.urn)


def test_name_and_namespace_are_outputs(run) -> None:
    def program() -> None:
        d = GpuDeployment("infer", spec=deployment_spec(), metadata={"name": "triton", "namespace": "ml"})
        pulumi.export("name", d.name)
        pulumi.export("namespace", d.namespace)

    assert run(program).stack_outputs == {"name": "triton", "namespace": "ml"}


def test_placement_read_back_from_a_stack_output_is_applied(run) -> None:
    exported = pulumi.Output.from_input({"key": "accelerator", "value": "t4g"})
    pod = _pod(run(lambda: GpuDeployment("x", spec=deployment_spec(), placement=exported)))
    assert pod["nodeSelector"] == {"accelerator": "t4g"}
    assert pod["tolerations"] == [Placement("accelerator", "t4g").toleration()]


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (
            {"spec": deployment_spec(nodeSelector={"GPU": "false"})},
            PodSpecError,
            "contradicts the GPU placement contract",
        ),
        ({"spec": deployment_spec(), "gpus": 0}, PodSpecError, "gpus must be a whole number >= 1"),
        ({"spec": deployment_spec(), "gpus": "2"}, PodSpecError, "gpus must be a whole number >= 1"),
        ({"spec": {"serviceName": "x", **deployment_spec()}}, PodSpecError, "not a Deployment spec"),
        ({"spec": deployment_spec(), "placement": {"key": "kubernetes.io/gpu"}}, ValueError, "EKS refuses"),
        ({"spec": deployment_spec(), "replicas": 3}, TypeError, "unexpected keyword argument 'replicas'"),
    ],
)
def test_bad_input_is_refused_before_anything_is_declared(
    run, kwargs: dict, error: type, message: str
) -> None:
    declared = []

    def program() -> None:
        try:
            GpuDeployment("bad", **kwargs)
        except error as caught:
            declared.append(caught)

    result = run(program)
    assert result.resources == []
    assert declared and message in str(declared[0])
    assert "GpuDeployment('bad')" in str(declared[0])


def test_a_contradiction_hidden_behind_an_output_is_still_caught_in_known_parts(run) -> None:
    spec = deployment_spec(nodeSelector={"GPU": "false", "zone": pulumi.Output.from_input("a")})
    with pytest.raises(PodSpecError, match="contradicts"):
        run(lambda: GpuDeployment("bad", spec=spec))


def test_an_awaitable_in_the_spec_is_awaited_by_the_engine_not_consumed_by_the_check(run) -> None:
    async def image() -> str:
        return "repo/llm:2"

    spec = deployment_spec(containers=[{"name": "m", "image": image()}])
    assert _pod(run(lambda: GpuDeployment("a", spec=spec)))["containers"][0]["image"] == "repo/llm:2"


# --- progressDeadlineSeconds: as long as Pulumi waits, so kubectl rollout status agrees with it ---


def test_the_progress_deadline_defaults_to_the_rollout_budget(run) -> None:
    from infra.workloads.component import DEPLOYMENT_TIMEOUT
    from infra.workloads.deployment import PROGRESS_DEADLINE_SECONDS

    # pulumi-kubernetes does not fail on ProgressDeadlineExceeded (await/deployment.go logs it and
    # waits on); kubectl rollout status and GitOps health do. Kubernetes' 600 s would have them call
    # a scale-up from zero failed while Pulumi still waits: the deadline is the same 30 minutes.
    assert 60 * int(DEPLOYMENT_TIMEOUT.removesuffix("m")) == PROGRESS_DEADLINE_SECONDS
    spec = run(lambda: GpuDeployment("llm", spec=deployment_spec())).one(DEPLOYMENT).inputs["spec"]
    assert spec["progressDeadlineSeconds"] == 1800


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"progressDeadlineSeconds": 300}, 300),  # yours wins
        ({"minReadySeconds": 60}, 1800),
        # the API wants deadline > minReady and would default it to 600: above minReadySeconds instead
        ({"minReadySeconds": 1800}, 1860),
        ({"minReadySeconds": 600}, 1800),
        ({"progressDeadlineSeconds": pulumi.Output.from_input(900)}, 900),
    ],
)
def test_a_progress_deadline_of_yours_or_a_long_min_ready_is_respected(run, given: dict, expected) -> None:
    spec = (
        run(lambda: GpuDeployment("llm", spec={**deployment_spec(), **given})).one(DEPLOYMENT).inputs["spec"]
    )
    assert spec.get("progressDeadlineSeconds") == expected


def test_longer_timeouts_give_a_longer_progress_deadline(run) -> None:
    def deadline(**kwargs) -> int:
        result = run(lambda: GpuDeployment("llm", spec=deployment_spec(), **kwargs))
        return result.one(DEPLOYMENT).inputs["spec"]["progressDeadlineSeconds"]

    assert deadline(update_timeout="2h") == 7200
    assert deadline(create_timeout="1h30m") == 5400
    opts = pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="45m"))
    assert deadline(opts=opts) == 2700


def test_a_min_ready_at_or_above_the_wait_gets_a_deadline_the_api_accepts(run) -> None:
    # Without a deadline the API defaults it to 600 and refuses 600 <= minReadySeconds
    # (pkg/apis/apps/validation ValidateDeploymentSpec); a short wait must not leave it to that.
    spec = {**deployment_spec(), "minReadySeconds": 600}
    result = run(lambda: GpuDeployment("llm", spec=spec, create_timeout="5m", update_timeout="5m"))
    assert result.one(DEPLOYMENT).inputs["spec"]["progressDeadlineSeconds"] == 660


PDB = "kubernetes:policy/v1:PodDisruptionBudget"


def test_autoscaled_leaves_replicas_to_the_autoscaler_after_the_create(run) -> None:
    # The engine fills an ignored path from the old inputs (step_generator.go
    # processIgnoreChanges) and pulumi-kubernetes' server-side apply drops a field another
    # field manager owns (await.go handleSSAIgnoreFields): the HPA's count stays.
    result = run(lambda: GpuDeployment("llm", spec={**deployment_spec(), "replicas": 2}, autoscaled=True))
    deployment = result.one(DEPLOYMENT)
    assert deployment.ignore_changes == ["spec.replicas"]
    assert deployment.inputs["spec"]["replicas"] == 2  # the count at create
    assert result.one(PDB).inputs["spec"]["maxUnavailable"] == 1
    fixed = run(lambda: GpuDeployment("llm", spec={**deployment_spec(), "replicas": 2}))
    assert fixed.one(DEPLOYMENT).ignore_changes == []


def test_autoscaled_keeps_the_pdb_even_from_one_replica_or_none_given(run) -> None:
    """The autoscaler may scale out: one GPU pod at a time goes in a drain whatever the count is now."""
    for spec in ({**deployment_spec(), "replicas": 1}, deployment_spec()):
        result = run(lambda s=spec: GpuDeployment("llm", spec=s, autoscaled=True))
        assert len(result.of_type(PDB)) == 1
        assert result.one(DEPLOYMENT).ignore_changes == ["spec.replicas"]
    opted_out = run(
        lambda: GpuDeployment("llm", spec=deployment_spec(), autoscaled=True, pod_disruption_budget=False)
    )
    assert opted_out.of_type(PDB) == []


def test_autoscaled_with_ignore_changes_of_yours_keeps_both(run) -> None:
    opts = pulumi.ResourceOptions(ignore_changes=["metadata.labels", "spec.replicas"])
    result = run(lambda: GpuDeployment("llm", spec=deployment_spec(), autoscaled=True, opts=opts))
    assert result.one(DEPLOYMENT).ignore_changes == ["metadata.labels", "spec.replicas"]


def test_autoscaled_must_be_a_boolean(run) -> None:
    with pytest.raises(PodSpecError, match=r"autoscaled must be true or false, got 'yes'"):
        run(lambda: GpuDeployment("llm", spec=deployment_spec(), autoscaled="yes"))
