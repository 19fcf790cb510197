"""GpuDeployment constructed through the package, with inputs exactly as a TypeScript or YAML stack sends them.

Numbers arrive as floats, Kubernetes objects in camelCase, the platform's
placement as an Output (it depends on the StackReference). Whatever the user
passed must reach the Deployment, with the contract merged in.
"""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.runtime import proto

from infra.tooling.offline import Run, platform_outputs
from infra.workloads.placement import POOL_LABEL
from infra.workloads.scheduling import placeable_on
from tests.conftest import gpu_node, system_node
from tests.provider.conftest import declare, dropped

GPU_DEPLOYMENT = "eks-gpu:index:GpuDeployment"
STACK_REFERENCE_URN = "urn:pulumi:dev::gpu-inference::pulumi:pulumi:StackReference::platform"
DEV_PLACEMENT = platform_outputs("organization/eks-gpu-platform/dev")["placement"]
"""What the dev platform exports as `placement`: pools inference (time-sliced x4) and training (2 GPUs, spot)."""
ECR_URN = "urn:pulumi:dev::gpu-inference::aws:ecr/repository:Repository::llm"
OTHER_PLACEMENT = {"key": "example.com/accelerator", "value": "nvidia"}


def typescript_inputs(**overrides: Any) -> dict[str, Any]:
    """What ``new eksgpu.GpuDeployment("llm", {...})`` in TypeScript puts on the wire."""
    inputs: dict[str, Any] = {
        "metadata": {"name": "llm", "namespace": "inference", "labels": {"app.kubernetes.io/name": "llm"}},
        "spec": {
            "replicas": 2.0,
            "selector": {"matchLabels": {"app": "llm"}},
            "template": {
                "metadata": {"labels": {"app": "llm"}},
                "spec": {
                    "nodeSelector": {"kubernetes.io/arch": "arm64"},
                    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [
                        {
                            "name": "server",
                            "image": "my/llm:arm64",
                            "ports": [{"name": "http", "containerPort": 8000.0}],
                            "resources": {"limits": {"cpu": "3", "memory": "6Gi"}},
                            "securityContext": {"readOnlyRootFilesystem": True},
                        }
                    ],
                },
            },
        },
        "gpus": 1.0,
    }
    inputs.update(overrides)
    return inputs


def build(
    provider: ComponentProvider,
    inputs: dict[str, Any],
    dependencies: dict[str, list[str]] | None = None,
) -> tuple[Run, dict[str, Any]]:
    """Run one GpuDeployment Construct on the mock engine; return what it registered and the component's state."""
    return declare(provider, GPU_DEPLOYMENT, "llm", inputs, dependencies)


def pod_of(run: Run) -> dict[str, Any]:
    """The pod spec of the Deployment the component declared."""
    return run.one("kubernetes:apps/v1:Deployment", "llm").inputs["spec"]["template"]["spec"]


def test_the_deployment_gets_the_contract_and_keeps_everything_the_user_sent(
    provider: ComponentProvider,
) -> None:
    run, state = build(provider, typescript_inputs())

    component = run.one(GPU_DEPLOYMENT, "llm")
    deployment = run.one("kubernetes:apps/v1:Deployment", "llm")
    assert deployment.parent == component.urn  # one component layer, not a GpuDeployment in a GpuDeployment
    assert deployment.inputs["metadata"] == {
        "name": "llm",
        "namespace": "inference",
        "labels": {"app.kubernetes.io/name": "llm"},
    }
    spec = deployment.inputs["spec"]
    assert spec["replicas"] == 2
    assert spec["selector"] == {"matchLabels": {"app": "llm"}}
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64", "GPU": "true"}
    assert pod["tolerations"] == [
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
    ]
    (container,) = pod["containers"]
    assert container["resources"] == {
        "limits": {"cpu": "3", "memory": "6Gi", "nvidia.com/gpu": 1},
        "requests": {"nvidia.com/gpu": 1},
    }
    assert container["ports"] == [{"name": "http", "containerPort": 8000}]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert placeable_on(pod, [gpu_node(), system_node()]) == ["gpu"]
    budget = run.one("kubernetes:policy/v1:PodDisruptionBudget")
    assert state == {
        "name": "llm",
        "namespace": "inference",
        "deployment": deployment.urn,  # the consumer's own k8s.apps.v1.Deployment, to depend on or read
        "podDisruptionBudget": budget.urn,
    }
    sent = typescript_inputs()
    assert dropped(sent["metadata"], deployment.inputs["metadata"]) == []
    assert dropped(sent["spec"], spec) == []


def test_gpus_sent_as_a_float_reach_the_container(provider: ComponentProvider) -> None:
    run, _ = build(provider, typescript_inputs(gpus=2.0))

    pod = run.one("kubernetes:apps/v1:Deployment", "llm").inputs["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2


def test_a_gpu_count_the_user_declared_as_a_float_is_kept(provider: ComponentProvider) -> None:
    inputs = typescript_inputs(gpus=None)
    container = inputs["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"nvidia.com/gpu": 2.0}}

    run, _ = build(provider, inputs)

    pod = run.one("kubernetes:apps/v1:Deployment", "llm").inputs["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 2},
        "requests": {"nvidia.com/gpu": 2},
    }


def test_the_platforms_placement_arrives_as_an_output_and_is_applied(provider: ComponentProvider) -> None:
    # From a StackReference the engine sends the value with a dependency on it, and the
    # SDK's server hands it to the provider as an Output: it must not be dropped.
    run, _ = build(
        provider,
        typescript_inputs(placement=OTHER_PLACEMENT),
        dependencies={"placement": [STACK_REFERENCE_URN]},
    )

    pod = run.one("kubernetes:apps/v1:Deployment", "llm").inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64", "example.com/accelerator": "nvidia"}
    assert {
        "key": "example.com/accelerator",
        "operator": "Equal",
        "value": "nvidia",
        "effect": "NoSchedule",
    } in pod["tolerations"]
    assert "GPU" not in pod["nodeSelector"]


def test_a_spec_with_outputs_inside_is_placed_when_resolved(provider: ComponentProvider) -> None:
    # An image from another resource (an ECR repository) makes the whole spec depend on it.
    run, _ = build(
        provider,
        typescript_inputs(),
        dependencies={"spec": [ECR_URN]},
    )

    spec = run.one("kubernetes:apps/v1:Deployment", "llm").inputs["spec"]
    assert spec["template"]["spec"]["nodeSelector"]["GPU"] == "true"
    assert spec["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert dropped(typescript_inputs()["spec"], spec) == []


def test_the_opt_outs_are_honoured(provider: ComponentProvider) -> None:
    run, state = build(
        provider,
        typescript_inputs(securityProfile="none", podDisruptionBudget=False, rollingUpdateDefaults=False),
    )

    spec = run.one("kubernetes:apps/v1:Deployment", "llm").inputs["spec"]
    assert "strategy" not in spec
    assert "securityContext" not in spec["template"]["spec"]
    assert spec["template"]["spec"]["containers"][0]["securityContext"] == {"readOnlyRootFilesystem": True}
    assert run.of_type("kubernetes:policy/v1:PodDisruptionBudget") == []
    assert "podDisruptionBudget" not in state  # an optional output: absent, not a dangling reference


def test_the_restricted_profile_reaches_the_pod(provider: ComponentProvider) -> None:
    run, _ = build(provider, typescript_inputs(securityProfile="restricted"))

    pod = pod_of(run)
    assert pod["securityContext"]["runAsNonRoot"] is True
    (container,) = pod["containers"]
    assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True  # the user's value, kept


def test_the_default_profile_is_baseline_so_root_images_start(provider: ComponentProvider) -> None:
    run, _ = build(provider, typescript_inputs())

    pod = pod_of(run)
    assert pod["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert "runAsNonRoot" not in pod["containers"][0]["securityContext"]


def test_an_unknown_security_profile_is_refused_naming_the_setting(provider: ComponentProvider) -> None:
    with pytest.raises(Exception, match="security_profile must be one of"):
        build(provider, typescript_inputs(securityProfile="strict"))


def test_a_pool_of_the_platforms_placement_output_pins_the_pods(provider: ComponentProvider) -> None:
    # The dev platform exports its pools in `placement`; it arrives as an Output.
    run, _ = build(
        provider,
        typescript_inputs(placement=DEV_PLACEMENT, pool="inference"),
        dependencies={"placement": [STACK_REFERENCE_URN]},
    )

    pod = pod_of(run)
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64", "GPU": "true", POOL_LABEL: "inference"}
    inference, training = (
        gpu_node("inference", **{POOL_LABEL: "inference"}),
        gpu_node("training", **{POOL_LABEL: "training"}),
    )
    assert placeable_on(pod, [inference, training, system_node()]) == ["inference"]


def test_a_pool_the_platform_does_not_export_is_refused_naming_the_pools(provider: ComponentProvider) -> None:
    with pytest.raises(Exception, match="pool 'batch' is not one the platform exports"):
        build(provider, typescript_inputs(placement=DEV_PLACEMENT, pool="batch"))


def test_more_than_one_gpu_in_a_container_on_a_shared_pool_is_refused(provider: ComponentProvider) -> None:
    # inference is time-sliced: its device plugin refuses a container's request above 1.
    with pytest.raises(Exception, match=r"containers\[0\] asks for 2 nvidia\.com/gpu, but pool 'inference'"):
        build(provider, typescript_inputs(placement=DEV_PLACEMENT, pool="inference", gpus=2.0))


def test_replicas_above_one_get_a_disruption_budget(provider: ComponentProvider) -> None:
    run, _ = build(provider, typescript_inputs())

    budget = run.one("kubernetes:policy/v1:PodDisruptionBudget", "llm")
    assert budget.inputs["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "llm"}}}


def test_a_spec_with_a_dependency_still_gets_its_disruption_budget(provider: ComponentProvider) -> None:
    # Over the package any spec with a dependency is one Output: its replicas are not
    # known when the component decides, so it declares the budget rather than risk none.
    run, _ = build(provider, typescript_inputs(), dependencies={"spec": [ECR_URN]})

    budget = run.one("kubernetes:policy/v1:PodDisruptionBudget", "llm")
    assert budget.inputs["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "llm"}}}
    assert budget.inputs["metadata"] == {"namespace": "inference"}


def test_an_amd64_only_image_is_refused_before_anything_is_declared(
    provider: ComponentProvider, amd64_only_image: str
) -> None:
    inputs = typescript_inputs()
    inputs["spec"]["template"]["spec"]["containers"][0]["image"] = amd64_only_image

    with pytest.raises(Exception, match="has no linux/arm64 build"):
        build(provider, inputs)


def test_check_image_architecture_false_is_honoured(
    provider: ComponentProvider, amd64_only_image: str
) -> None:
    inputs = typescript_inputs(checkImageArchitecture=False)
    inputs["spec"]["template"]["spec"]["containers"][0]["image"] = amd64_only_image

    run, _ = build(provider, inputs)

    assert pod_of(run)["containers"][0]["image"] == amd64_only_image


def test_a_missing_spec_is_refused_naming_it(provider: ComponentProvider) -> None:
    from pulumi.errors import InputPropertyError

    with pytest.raises(InputPropertyError, match="Missing required input 'spec'"):
        build(provider, {"gpus": 1.0})


def test_a_bad_spec_fails_naming_the_setting(provider: ComponentProvider) -> None:
    inputs = typescript_inputs()
    inputs["spec"]["template"]["spec"]["nodeSelector"] = {"GPU": "false"}

    with pytest.raises(Exception, match="GPU"):
        build(provider, inputs)


def test_timeouts_sent_as_inputs_reach_the_deployment(provider: ComponentProvider) -> None:
    run, _ = build(provider, typescript_inputs(updateTimeout="2h"))
    assert run.one("kubernetes:apps/v1:Deployment").custom_timeouts == ("30m", "2h", "")


def test_autoscaled_sent_as_an_input_leaves_replicas_to_the_autoscaler(provider: ComponentProvider) -> None:
    run, _ = build(
        provider, typescript_inputs(autoscaled=True, spec={**typescript_inputs()["spec"], "replicas": 1.0})
    )
    deployment = run.one("kubernetes:apps/v1:Deployment", "llm")
    assert deployment.ignore_changes == ["spec.replicas"]
    assert deployment.inputs["spec"]["replicas"] == 1
    assert run.one("kubernetes:policy/v1:PodDisruptionBudget", "llm").inputs["spec"]["maxUnavailable"] == 1


def test_resource_options_of_a_yaml_or_typescript_stack_reach_the_children(
    provider: ComponentProvider,
) -> None:
    """Construct hands the component these options (pulumi provider/server.py); it hands them on."""
    namespace = "urn:pulumi:dev::gpu-inference::kubernetes:core/v1:Namespace::ml"
    request = proto.ConstructRequest(
        dependencies=[namespace],
        retainOnDelete=True,
        deletedWith=namespace,
        ignoreChanges=["metadata.labels"],
    )
    run, _ = declare(provider, GPU_DEPLOYMENT, "llm", typescript_inputs(autoscaled=True), request=request)
    deployment = run.one("kubernetes:apps/v1:Deployment", "llm")
    budget = run.one("kubernetes:policy/v1:PodDisruptionBudget", "llm")
    for child in (deployment, budget):
        assert namespace in child.dependencies, child.name
        assert (child.retain_on_delete, child.deleted_with) == (True, namespace), child.name
    assert deployment.ignore_changes == ["metadata.labels", "spec.replicas"]
    assert budget.ignore_changes == []


def test_the_options_the_sdks_server_drops_reach_the_deployment_too(provider: ComponentProvider) -> None:
    """customTimeouts, deleteBeforeReplace and additionalSecretOutputs from a YAML, TypeScript or Go
    stack: pulumi 3.272.0's server leaves them out of the component's options
    (test_sdk_limits.py); the package's server reads them, and the component hands them on."""
    request = proto.ConstructRequest(
        customTimeouts=proto.ConstructRequest.CustomTimeouts(create="90m", delete="5m"),
        deleteBeforeReplace=True,
        additionalSecretOutputs=["status"],
    )
    run, _ = declare(provider, GPU_DEPLOYMENT, "llm", typescript_inputs(), request=request)
    deployment = run.one("kubernetes:apps/v1:Deployment", "llm")
    assert deployment.custom_timeouts == ("90m", "30m", "5m")
    assert deployment.delete_before_replace is True
    assert deployment.additional_secret_outputs == ["status"]
    budget = run.one("kubernetes:policy/v1:PodDisruptionBudget", "llm")
    assert (budget.delete_before_replace, budget.additional_secret_outputs) == (None, [])


def test_a_timeout_seconds_annotation_beside_a_namespace_from_another_resource_names_the_timeout_inputs(
    provider: ComponentProvider,
) -> None:
    """YAML's ``namespace: ${ns.metadata.name}`` makes the engine send ``metadata`` with a dependency, so the
    SDK hands all of it to the component as one Output (provider/server.py ``_select_value``), although the
    user wrote the annotation as a plain string: the waits, set before it resolves, cannot honour it, and the
    refusal says what does (the plain timeout inputs), not "give plain values", which the user did."""
    namespace = "urn:pulumi:dev::gpu-inference::kubernetes:core/v1:Namespace::ml"
    metadata = {**typescript_inputs()["metadata"], "annotations": {"pulumi.com/timeoutSeconds": "5400"}}
    with pytest.raises(Exception, match=r"metadata arrived as an Output") as refused:
        build(provider, typescript_inputs(metadata=metadata), dependencies={"metadata": [namespace]})
    assert "give the inputs createTimeout, updateTimeout and deleteTimeout" in str(refused.value)

    run, _ = build(
        provider,
        typescript_inputs(metadata=typescript_inputs()["metadata"], createTimeout="90m"),
        dependencies={"metadata": [namespace]},
    )
    assert run.one("kubernetes:apps/v1:Deployment", "llm").custom_timeouts == ("90m", "30m", "")
