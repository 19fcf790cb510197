"""GpuJob constructed through the package, with inputs exactly as a TypeScript or YAML stack sends them.

The same wire as for GpuDeployment (``test_construct.py``): numbers as floats,
Kubernetes objects in camelCase, inputs with a dependency as Outputs. Whatever the
user passed must reach the Job, with the contract merged in and restartPolicy set.
"""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.runtime import proto

from infra.tooling.offline import Run, platform_outputs
from infra.workloads.gpu_job import SKIP_AWAIT
from infra.workloads.placement import DEFAULT_PLACEMENT, POOL_LABEL
from infra.workloads.scheduling import Node, placeable_on
from tests.conftest import gpu_node, system_node
from tests.provider.conftest import declare, dropped

GPU_JOB = "eks-gpu:index:GpuJob"
JOB = "kubernetes:batch/v1:Job"
STACK_REFERENCE_URN = "urn:pulumi:dev::gpu-training::pulumi:pulumi:StackReference::platform"
DEV_PLACEMENT = platform_outputs("organization/eks-gpu-platform/dev")["placement"]
"""What the dev platform exports as `placement`: pools inference (time-sliced x4) and training (2 GPUs, spot)."""
BUCKET_URN = "urn:pulumi:dev::gpu-training::aws:s3/bucketV2:BucketV2::checkpoints"
GPU_TOLERATION = {"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def typescript_inputs(**overrides: Any) -> dict[str, Any]:
    """What ``new eksgpu.GpuJob("finetune", {...})`` in TypeScript puts on the wire."""
    inputs: dict[str, Any] = {
        "metadata": {
            "name": "finetune",
            "namespace": "training",
            "labels": {"app.kubernetes.io/name": "finetune"},
            "annotations": {"team": "research"},
        },
        "spec": {
            "backoffLimit": 2.0,
            "ttlSecondsAfterFinished": 3600.0,
            "activeDeadlineSeconds": 86400.0,
            "template": {
                "metadata": {"labels": {"app": "finetune"}},
                "spec": {
                    "nodeSelector": {"kubernetes.io/arch": "arm64"},
                    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [
                        {
                            "name": "train",
                            "image": "nvcr.io/nvidia/pytorch:24.08-py3",
                            "command": ["torchrun"],
                            "args": ["--nproc-per-node=2", "train.py"],
                            "env": [{"name": "EPOCHS", "value": "3"}],
                            "resources": {"limits": {"cpu": "8", "memory": "32Gi"}},
                            "volumeMounts": [{"name": "scratch", "mountPath": "/scratch"}],
                        }
                    ],
                    "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": "50Gi"}}],
                },
            },
        },
        "gpus": 2.0,
    }
    inputs.update(overrides)
    return inputs


def build(
    provider: ComponentProvider,
    inputs: dict[str, Any],
    dependencies: dict[str, list[str]] | None = None,
) -> tuple[Run, dict[str, Any]]:
    """Run one GpuJob Construct on the mock engine; return what it registered and the component's state."""
    return declare(provider, GPU_JOB, "finetune", inputs, dependencies)


def job_of(run: Run) -> dict[str, Any]:
    """The inputs of the Job the component declared."""
    return run.one(JOB, "finetune").inputs


def two_gpu_node(name: str = "gpu", **labels: str) -> Node:
    """A node of the GPU group with two GPUs (g5g.16xlarge), for pods asking for two."""
    return Node.from_node_group(
        name,
        labels={**DEFAULT_PLACEMENT.node_labels(), **labels},
        eks_taints=[DEFAULT_PLACEMENT.eks_taint()],
        instance_type="g5g.16xlarge",
        arch="arm64",
        gpus=2,
    )


def test_the_job_gets_the_contract_and_keeps_everything_the_user_sent(provider: ComponentProvider) -> None:
    run, state = build(provider, typescript_inputs())

    component = run.one(GPU_JOB, "finetune")
    job = job_of(run)
    assert run.one(JOB, "finetune").parent == component.urn  # one component layer
    assert [r.type for r in run.children_of(component)] == [JOB]
    assert job["metadata"] == typescript_inputs()["metadata"]  # waits for completion: no skipAwait added
    spec = job["spec"]
    assert {k: v for k, v in spec.items() if k != "template"} == {
        "backoffLimit": 2,
        "ttlSecondsAfterFinished": 3600,
        "activeDeadlineSeconds": 86400,
    }
    assert all(type(v) is int for k, v in spec.items() if k != "template")  # no 2.0 reaches Kubernetes
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64", "GPU": "true"}
    assert pod["tolerations"] == [
        {"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"},
        GPU_TOLERATION,
    ]
    assert pod["restartPolicy"] == "Never"
    (container,) = pod["containers"]
    assert container["resources"] == {
        "limits": {"cpu": "8", "memory": "32Gi", "nvidia.com/gpu": 2},
        "requests": {"nvidia.com/gpu": 2},
    }
    assert type(container["resources"]["limits"]["nvidia.com/gpu"]) is int
    assert dropped(typescript_inputs()["spec"], spec) == []
    assert placeable_on(pod, [gpu_node(), two_gpu_node("gpu-2"), system_node()]) == ["gpu-2"]
    assert state == {"name": "finetune", "namespace": "training", "job": run.one(JOB, "finetune").urn}


def test_a_restart_policy_the_user_chose_is_kept(provider: ComponentProvider) -> None:
    inputs = typescript_inputs()
    inputs["spec"]["template"]["spec"]["restartPolicy"] = "OnFailure"

    run, _ = build(provider, inputs)

    assert job_of(run)["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"


def test_restart_policy_always_is_refused_naming_it(provider: ComponentProvider) -> None:
    inputs = typescript_inputs()
    inputs["spec"]["template"]["spec"]["restartPolicy"] = "Always"

    with pytest.raises(Exception, match=r"spec\.template\.spec\.restartPolicy 'Always'"):
        build(provider, inputs)


def test_an_indexed_job_keeps_its_settings(provider: ComponentProvider) -> None:
    inputs = typescript_inputs()
    inputs["spec"].update({"completionMode": "Indexed", "completions": 8.0, "parallelism": 2.0})

    run, _ = build(provider, inputs)

    spec = job_of(run)["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 8, 2)


def test_a_gpu_count_the_user_declared_as_a_float_is_kept(provider: ComponentProvider) -> None:
    inputs = typescript_inputs(gpus=None)
    inputs["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 2.0}}

    run, _ = build(provider, inputs)

    assert job_of(run)["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 2},
        "requests": {"nvidia.com/gpu": 2},
    }


def test_the_platforms_placement_arrives_as_an_output_and_a_pool_pins_the_job(
    provider: ComponentProvider,
) -> None:
    # The dev platform's training pool: two whole GPUs per node, spot.
    run, _ = build(
        provider,
        typescript_inputs(placement=DEV_PLACEMENT, pool="training"),
        dependencies={"placement": [STACK_REFERENCE_URN]},
    )

    pod = job_of(run)["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"kubernetes.io/arch": "arm64", "GPU": "true", POOL_LABEL: "training"}
    assert GPU_TOLERATION in pod["tolerations"]
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2
    nodes = [
        two_gpu_node("training", **{POOL_LABEL: "training"}),
        two_gpu_node("inference", **{POOL_LABEL: "inference"}),
        system_node(),
    ]
    assert placeable_on(pod, nodes) == ["training"]


def test_two_gpus_in_one_container_on_the_shared_inference_pool_are_refused(
    provider: ComponentProvider,
) -> None:
    with pytest.raises(Exception, match=r"containers\[0\] asks for 2 nvidia\.com/gpu, but pool 'inference'"):
        build(provider, typescript_inputs(placement=DEV_PLACEMENT, pool="inference"))


def test_a_spec_with_a_dependency_is_placed_when_resolved(provider: ComponentProvider) -> None:
    # A checkpoint bucket's name in the env makes the whole spec depend on the bucket.
    run, _ = build(provider, typescript_inputs(), dependencies={"spec": [BUCKET_URN]})

    spec = job_of(run)["spec"]
    pod = spec["template"]["spec"]
    assert pod["nodeSelector"]["GPU"] == "true"
    assert pod["restartPolicy"] == "Never"
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert dropped(typescript_inputs()["spec"], spec) == []


def test_wait_for_completion_false_skips_the_await_and_keeps_the_users_annotations(
    provider: ComponentProvider,
) -> None:
    metadata = {k: v for k, v in typescript_inputs()["metadata"].items() if k != "name"}  # auto-named
    run, _ = build(
        provider,
        typescript_inputs(waitForCompletion=False, metadata=metadata),
        dependencies={"metadata": [STACK_REFERENCE_URN]},
    )

    assert job_of(run)["metadata"]["annotations"] == {"team": "research", SKIP_AWAIT: "true"}
    assert dropped(metadata, job_of(run)["metadata"]) == []


def test_wait_for_completion_false_with_a_fixed_name_is_refused(provider: ComponentProvider) -> None:
    with pytest.raises(Exception, match=r"fixed metadata\.name"):  # ComponentInitError wrapping it
        build(provider, typescript_inputs(waitForCompletion=False))


def test_the_security_profiles_reach_the_pod(provider: ComponentProvider) -> None:
    baseline, _ = build(provider, typescript_inputs())
    restricted, _ = build(provider, typescript_inputs(securityProfile="restricted"))
    none, _ = build(provider, typescript_inputs(securityProfile="none"))

    def pod(run: Run) -> dict[str, Any]:
        return job_of(run)["spec"]["template"]["spec"]

    assert pod(baseline)["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert pod(restricted)["securityContext"]["runAsNonRoot"] is True
    assert pod(restricted)["containers"][0]["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert "securityContext" not in pod(none)
    assert "securityContext" not in pod(none)["containers"][0]


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

    assert job_of(run)["spec"]["template"]["spec"]["containers"][0]["image"] == amd64_only_image


def test_a_missing_spec_is_refused_naming_it(provider: ComponentProvider) -> None:
    from pulumi.errors import InputPropertyError

    with pytest.raises(InputPropertyError, match="Missing required input 'spec'"):
        build(provider, {"gpus": 1.0})


def test_a_deployment_spec_is_refused_as_a_job_spec(provider: ComponentProvider) -> None:
    inputs = typescript_inputs()
    inputs["spec"]["replicas"] = 2.0

    with pytest.raises(Exception, match=r"spec is not a Job spec: unknown field\(s\) \['replicas'\]"):
        build(provider, inputs)


def test_timeouts_sent_as_inputs_reach_the_job(provider: ComponentProvider) -> None:
    # What `createTimeout: 90m` in a YAML program sends; the customTimeouts resource
    # option would be dropped by the SDK's Construct (test_sdk_limits.py).
    run, _ = build(provider, typescript_inputs(createTimeout="90m", deleteTimeout="15m"))
    assert run.one(JOB, "finetune").custom_timeouts == ("90m", "60m", "15m")


def test_replace_unready_reaches_the_job_as_its_annotation(provider: ComponentProvider) -> None:
    run, _ = build(provider, typescript_inputs(replaceUnready=True))
    assert job_of(run)["metadata"]["annotations"] == {"team": "research", "pulumi.com/replaceUnready": "true"}
    # activeDeadlineSeconds 86400 (a float on the wire) + 30 s grace + 120 s: the Job cannot still run
    assert run.one(JOB, "finetune").custom_timeouts[:2] == ("1443m", "1443m")


def test_replace_unready_without_a_deadline_is_refused(provider: ComponentProvider) -> None:
    inputs = typescript_inputs(replaceUnready=True)
    del inputs["spec"]["activeDeadlineSeconds"]
    with pytest.raises(Exception, match=r"replace_unready=True needs spec.activeDeadlineSeconds"):
        build(provider, inputs)


def test_a_request_without_the_options_the_sdk_drops_leaves_the_jobs_own_defaults(
    provider: ComponentProvider,
) -> None:
    """Unset in the request (proto3's zero values) is unset for the component, not False or empty:
    the Job keeps deleteBeforeReplace (GpuJob's default) and no secret outputs."""
    run, _ = declare(provider, GPU_JOB, "train", typescript_inputs(), request=proto.ConstructRequest())
    job = run.one("kubernetes:batch/v1:Job", "train")
    assert job.delete_before_replace is True
    assert (job.additional_secret_outputs, job.custom_timeouts[0]) == ([], "60m")


def test_a_queued_job_from_yaml_gets_kueues_labels_and_its_minimum_as_a_whole_number(
    provider: ComponentProvider,
) -> None:
    """queue, priority and minParallelism through the package, the platform's placement (its teams' queues)
    an Output of the StackReference: the YAML host sends 2.0, Kueue's webhook takes only "2"."""
    inputs = typescript_inputs(
        metadata={"namespace": "speech"},
        spec={**typescript_inputs()["spec"], "parallelism": 4.0, "completions": 4.0},
        gpus=1.0,
        pool="training",
        queue="default",
        priority="low",
        minParallelism=2.0,
        placement=DEV_PLACEMENT,
    )
    run, _ = build(provider, inputs, dependencies={"placement": [STACK_REFERENCE_URN]})
    metadata = job_of(run)["metadata"]
    assert metadata["labels"] == {
        "kueue.x-k8s.io/queue-name": "default",
        "kueue.x-k8s.io/priority-class": "low",
    }
    assert metadata["annotations"] == {"kueue.x-k8s.io/job-min-parallelism": "2"}
    assert run.one(JOB, "finetune").custom_timeouts[:2] == ("240m", "240m")


def test_a_queue_no_team_declares_is_refused_through_the_package(provider: ComponentProvider) -> None:
    inputs = typescript_inputs(queue="default", placement=DEV_PLACEMENT)  # namespace training: no team's
    with pytest.raises(
        Exception, match="queue 'default' in namespace 'training' is not a queue any team declares"
    ):
        build(provider, inputs, dependencies={"placement": [STACK_REFERENCE_URN]})
