"""Construct through the package, with inputs exactly as a TypeScript or YAML stack sends them.

Numbers arrive as floats, Kubernetes objects in camelCase, the platform's
placement as an Output (it depends on the StackReference). Whatever the user
passed must reach the Deployment, with the contract merged in.
"""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.provider.experimental.component import ComponentProvider

from infra.tooling.offline import Run, run_program
from infra.workloads.scheduling import placeable_on
from tests.conftest import gpu_node, system_node
from tests.provider.conftest import construct, resolve

GPU_DEPLOYMENT = "eks-gpu:index:GpuDeployment"
STACK_REFERENCE_URN = "urn:pulumi:dev::gpu-inference::pulumi:pulumi:StackReference::platform"
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
    """Run one Construct on the mock engine; return what it registered and the component's state."""
    state: dict[str, Any] = {}

    def program() -> None:
        result = construct(provider, GPU_DEPLOYMENT, "llm", inputs, dependencies)
        state.update({key: resolve(value) for key, value in result.state.items()})

    return run_program(program), state


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
    assert state == {"name": "llm", "namespace": "inference"}


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
        dependencies={"spec": ["urn:pulumi:dev::gpu-inference::aws:ecr/repository:Repository::llm"]},
    )

    pod = run.one("kubernetes:apps/v1:Deployment", "llm").inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"]["GPU"] == "true"
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1


def test_the_opt_outs_are_honoured(provider: ComponentProvider) -> None:
    run, _ = build(
        provider,
        typescript_inputs(securityDefaults=False, podDisruptionBudget=False, rollingUpdateDefaults=False),
    )

    spec = run.one("kubernetes:apps/v1:Deployment", "llm").inputs["spec"]
    assert "strategy" not in spec
    assert "securityContext" not in spec["template"]["spec"]
    assert run.of_type("kubernetes:policy/v1:PodDisruptionBudget") == []


def test_replicas_above_one_get_a_disruption_budget(provider: ComponentProvider) -> None:
    run, _ = build(provider, typescript_inputs())

    budget = run.one("kubernetes:policy/v1:PodDisruptionBudget", "llm")
    assert budget.inputs["spec"] == {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "llm"}}}


@pytest.mark.xfail(
    strict=True,
    reason="infra.workloads.GpuDeployment treats a spec that is one Output as replicas=1 "
    "(eager_spec is {}), so no PodDisruptionBudget; over the package that is any spec with a dependency",
)
def test_a_spec_with_a_dependency_still_gets_its_disruption_budget(provider: ComponentProvider) -> None:
    run, _ = build(
        provider,
        typescript_inputs(),
        dependencies={"spec": ["urn:pulumi:dev::gpu-inference::aws:ecr/repository:Repository::llm"]},
    )

    assert run.of_type("kubernetes:policy/v1:PodDisruptionBudget") != []


def test_a_missing_spec_is_refused_naming_it(provider: ComponentProvider) -> None:
    from pulumi.errors import InputPropertyError

    with pytest.raises(InputPropertyError, match="Missing required input 'spec'"):
        build(provider, {"gpus": 1.0})


def test_a_bad_spec_fails_naming_the_setting(provider: ComponentProvider) -> None:
    inputs = typescript_inputs()
    inputs["spec"]["template"]["spec"]["nodeSelector"] = {"GPU": "false"}

    with pytest.raises(Exception, match="GPU"):
        build(provider, inputs)
