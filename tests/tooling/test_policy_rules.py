"""The guardrails: each rule with passing and failing resources, and the CrossGuard pack around them."""

from __future__ import annotations

import re
import runpy
from pathlib import Path
from types import SimpleNamespace

import pulumi_policy
import pytest

from infra.tooling.policy_rules import (
    RULES,
    Links,
    check,
    gpu_node_group_contract,
    gpu_toleration_without_gpu,
    gpu_workload_placement,
    placement_from_config,
    security_baseline,
)
from infra.tooling.preview import main, policy_input
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement, PlacementError
from infra.workloads.podspec import place_pod_spec
from tests.tooling import crossguard

ROOT = Path(__file__).resolve().parents[2]
GPU_POD = {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
IMDS = {"metadataOptions": {"httpTokens": "required"}}


def _deployment(pod: dict) -> dict:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "spec": {"selector": {}, "template": {"spec": pod}},
    }


@pytest.mark.parametrize(
    "typ", ["kubernetes:apps/v1:Deployment", "kubernetes:apps/v1:StatefulSet", "kubernetes:batch/v1:Job"]
)
def test_hand_written_gpu_workload_without_toleration_or_selector_fails_with_the_fix(typ: str) -> None:
    problems = gpu_workload_placement(typ, _deployment(GPU_POD), DEFAULT_PLACEMENT)
    assert problems == [
        "spec.template.spec requests nvidia.com/gpu but does not tolerate the GPU taint: add the toleration "
        "{'key': 'GPU', 'operator': 'Equal', 'value': 'true', 'effect': 'NoSchedule'} (or use infra.GpuDeployment / place_pod_spec)",
        "spec.template.spec requests nvidia.com/gpu but does not select GPU nodes: add nodeSelector {'GPU': 'true'}",
    ]


def test_placed_workloads_pass_by_selector_or_by_required_affinity() -> None:
    assert (
        gpu_workload_placement(
            "kubernetes:apps/v1:Deployment", _deployment(place_pod_spec(GPU_POD)), DEFAULT_PLACEMENT
        )
        == []
    )
    by_affinity = {
        **GPU_POD,
        "tolerations": [{"key": "GPU", "operator": "Exists"}],
        "affinity": DEFAULT_PLACEMENT.node_affinity(),
    }
    assert (
        gpu_workload_placement("kubernetes:apps/v1:Deployment", _deployment(by_affinity), DEFAULT_PLACEMENT)
        == []
    )


def test_cronjob_and_pod_shapes_are_read() -> None:
    cron = {"spec": {"jobTemplate": {"spec": {"template": {"spec": GPU_POD}}}}}
    assert len(gpu_workload_placement("kubernetes:batch/v1:CronJob", cron, DEFAULT_PLACEMENT)) == 2
    assert len(gpu_workload_placement("kubernetes:core/v1:Pod", {"spec": GPU_POD}, DEFAULT_PLACEMENT)) == 2


def test_tolerating_without_a_gpu_is_advised_against_except_for_daemonsets() -> None:
    squatter = _deployment({"containers": [{"name": "web"}], "tolerations": [DEFAULT_PLACEMENT.toleration()]})
    assert gpu_toleration_without_gpu("kubernetes:apps/v1:Deployment", squatter, DEFAULT_PLACEMENT) != []
    assert gpu_toleration_without_gpu("kubernetes:apps/v1:DaemonSet", squatter, DEFAULT_PLACEMENT) == []
    assert (
        gpu_toleration_without_gpu(
            "kubernetes:apps/v1:Deployment", _deployment(place_pod_spec(GPU_POD)), DEFAULT_PLACEMENT
        )
        == []
    )


@pytest.mark.parametrize(
    ("props", "count"),
    [
        (
            {
                "amiType": "AL2023_ARM_64_NVIDIA",
                "labels": {"GPU": "true"},
                "taints": [DEFAULT_PLACEMENT.eks_taint()],
            },
            0,
        ),
        ({"amiType": "AL2023_ARM_64_NVIDIA", "labels": {}, "taints": []}, 2),
        (
            {
                "amiType": "AL2023_ARM_64_NVIDIA",
                "labels": {"GPU": "true"},
                "taints": [DEFAULT_PLACEMENT.node_taint()],
            },
            1,
        ),
        ({"amiType": "CUSTOM", "instanceTypes": ["g5.xlarge"], "labels": {}}, 2),
        ({"amiType": "AL2023_ARM_64_STANDARD", "instanceTypes": ["t4g.large"], "labels": {}}, 0),
    ],
)
def test_gpu_node_groups_carry_the_contract(props: dict, count: int) -> None:
    assert len(gpu_node_group_contract("aws:eks/nodeGroup:NodeGroup", props, DEFAULT_PLACEMENT)) == count


def test_security_baseline() -> None:
    assert security_baseline(
        "aws:ec2/launchTemplate:LaunchTemplate",
        {"metadataOptions": {"httpTokens": "optional"}},
        DEFAULT_PLACEMENT,
    ) == ["does not require IMDSv2: set metadataOptions.httpTokens to 'required'"]
    assert security_baseline("eks:index:Cluster", {"enabledClusterLogTypes": ["api"]}, DEFAULT_PLACEMENT) == [
        "does not encrypt Kubernetes secrets: set encryptionConfigKeyArn to a KMS key",
        "does not log ['audit', 'authenticator']: add them to enabledClusterLogTypes",
    ]


def test_a_plain_aws_eks_cluster_needs_secrets_encryption_and_control_plane_logs() -> None:
    """pulumi-aws's ``aws.eks.Cluster`` (not pulumi-eks): ``encryptionConfig`` and ``enabledClusterLogTypes``."""
    cluster = "aws:eks/cluster:Cluster"
    encryption = {"provider": {"keyArn": "arn:aws:kms:us-west-2:1:key/k"}, "resources": ["secrets"]}
    logs = ["api", "audit", "authenticator", "scheduler"]
    assert (
        security_baseline(
            cluster, {"encryptionConfig": encryption, "enabledClusterLogTypes": logs}, DEFAULT_PLACEMENT
        )
        == []
    )
    assert security_baseline(cluster, {}, DEFAULT_PLACEMENT) == [
        "does not encrypt Kubernetes secrets: set encryptionConfig to "
        "{'provider': {'keyArn': <a KMS key ARN>}, 'resources': ['secrets']}",
        "does not log ['api', 'audit', 'authenticator']: add them to enabledClusterLogTypes",
    ]
    for half in ({**encryption, "resources": []}, {"resources": ["secrets"]}, [encryption]):
        problems = security_baseline(
            cluster, {"encryptionConfig": half, "enabledClusterLogTypes": logs}, DEFAULT_PLACEMENT
        )
        assert len(problems) == (0 if isinstance(half, list) else 1), half  # a list of one: older SDKs


def _eks_ami_types() -> list[str]:
    """The EKS API's AMITypes enum, from botocore's model of CreateNodegroup."""
    import botocore.loaders

    return list(
        botocore.loaders.Loader().load_service_model("eks", "service-2")["shapes"]["AMITypes"]["enum"]
    )


def test_gpu_ami_types_are_the_eks_api_s_nvidia_and_gpu_ones() -> None:
    ami_types = _eks_ami_types()
    untainted = {"labels": {}, "taints": []}
    gpu = {
        t
        for t in ami_types
        if gpu_node_group_contract(NODE_GROUP, {**untainted, "amiType": t}, DEFAULT_PLACEMENT)
    }
    assert gpu == {t for t in ami_types if "NVIDIA" in t.split("_") or t.endswith("_GPU")}
    # AL2's accelerated AMI and the FIPS NVIDIA variants are GPU AMIs too.
    assert {"AL2_x86_64_GPU", "AL2023_ARM_64_NVIDIA", "BOTTLEROCKET_ARM_64_NVIDIA_FIPS"} <= gpu
    # Neuron nodes offer aws.amazon.com/neuron, not nvidia.com/gpu: not the GPU contract's.
    assert not [t for t in gpu if "NEURON" in t or "STANDARD" in t or t.startswith("WINDOWS")]


def _contract_failures(resources: list, links: Links | None = None) -> list[str]:
    return [v.message for v in check(resources, links=links) if v.rule == "gpu-node-group-contract"]


@pytest.mark.parametrize(
    ("node_group", "template", "dependencies", "count"),
    [
        # The GPU AMI alone is enough: no instanceTypes, the type only in the launch template.
        ({"amiType": "AL2_x86_64_GPU", "launchTemplate": {"id": "lt-1"}}, "g5.xlarge", (), 2),
        ({"amiType": "AL2_x86_64_GPU"}, None, (), 2),
        # A custom AMI (no amiType): the launch template's instance type, found by id, by name
        ({"launchTemplate": {"id": "lt-1", "version": "1"}}, "g5.xlarge", (), 2),
        ({"launchTemplate": {"name": "gpu-lt-1a2b", "version": "1"}}, "g5.xlarge", (), 2),
        # or, in a preview creating both (id not known yet), by the node group's dependency on it.
        ({"launchTemplate": {"id": None, "version": None}}, "g5.xlarge", ("gpu-lt",), 2),
        ({"launchTemplate": {"id": "lt-1", "version": "1"}}, "t3.large", (), 0),
        ({"launchTemplate": {"id": "lt-other", "version": "1"}}, "g5.xlarge", (), 0),  # not in this stack
        ({"instanceTypes": ["g5.xlarge"], "launchTemplate": {"id": "lt-1"}}, "t3.large", (), 2),
    ],
)
def test_a_gpu_node_group_is_known_by_its_ami_type_or_its_launch_template(
    node_group: dict, template: str | None, dependencies: tuple[str, ...], count: int
) -> None:
    resources = [(NODE_GROUP, "gpu", {"labels": {}, "taints": [], **node_group})]
    if template:
        resources.append(
            (
                LAUNCH_TEMPLATE,
                "gpu-lt",
                {"id": "lt-1", "name": "gpu-lt-1a2b", "instanceType": template, **IMDS},
            )
        )
    links = Links(dependencies={f"{NODE_GROUP} gpu": [f"{LAUNCH_TEMPLATE} {d}" for d in dependencies]})
    failures = _contract_failures(resources, links)
    assert len(failures) == count, failures
    assert all(f.startswith("is a GPU node group without the ") for f in failures)


def test_the_pack_finds_the_launch_template_of_a_node_group_being_created(monkeypatch) -> None:
    """As in a first ``pulumi preview``: the template's id is unknown, the engine's dependency links them."""
    _, policies = crossguard.pack_module(monkeypatch)
    unknown = pulumi_policy.proxy.UNKNOWN_STRING_VALUE
    resources = [
        (
            NODE_GROUP,
            "gpu",
            {"labels": {}, "launchTemplate": {"id": unknown, "version": unknown}, "amiType": unknown},
        ),
        (LAUNCH_TEMPLATE, "gpu-lt", {"id": unknown, "instanceType": "g5.xlarge", **IMDS}),
    ]
    response = crossguard.analyze_stack(
        crossguard.servicer(policies),
        resources,
        dependencies={f"{NODE_GROUP} gpu": [f"{LAUNCH_TEMPLATE} gpu-lt"]},
    )
    messages = [d.message for d in response.diagnostics if crossguard.level(d) == "mandatory"]
    assert len(messages) == 2 and all("\ngpu is a GPU node group without the " in m for m in messages)
    assert "urn:pulumi:dev::eks-gpu-platform::aws:eks/nodeGroup:NodeGroup::gpu" in {
        d.urn for d in response.diagnostics
    }


def test_plain_pulumi_aws_resources_as_the_sdk_registers_them(run) -> None:
    """The property names the rules read are pulumi-aws's own: a program through the real SDK."""
    import pulumi_aws as aws

    def program() -> None:
        template = aws.ec2.LaunchTemplate(
            "gpu-lt",
            instance_type="g5.xlarge",
            image_id="ami-1",
            metadata_options={"http_tokens": "required"},
        )
        aws.eks.NodeGroup(
            "gpu",
            cluster_name="c",
            node_role_arn="arn:aws:iam::1:role/n",
            subnet_ids=["subnet-1"],
            scaling_config={"min_size": 0, "desired_size": 0, "max_size": 1},
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
        )
        vpc = {"subnet_ids": ["subnet-1"]}
        aws.eks.Cluster("plain", role_arn="arn:aws:iam::1:role/c", vpc_config=vpc)
        aws.eks.Cluster(
            "hardened",
            role_arn="arn:aws:iam::1:role/c",
            vpc_config=vpc,
            encryption_config={
                "provider": {"key_arn": "arn:aws:kms:us-west-2:1:key/k"},
                "resources": ["secrets"],
            },
            enabled_cluster_log_types=["api", "audit", "authenticator"],
        )

    resources, links = policy_input("project", "stack", run(program))
    found = check(resources, links=links)
    found = sorted((v.rule, v.resource.rsplit("$", 1)[-1]) for v in found if v.level == "mandatory")
    assert found == [  # named by URN
        ("gpu-node-group-contract", f"{NODE_GROUP}::gpu"),
        ("gpu-node-group-contract", f"{NODE_GROUP}::gpu"),
        ("security-baseline", "aws:eks/cluster:Cluster::plain"),
        ("security-baseline", "aws:eks/cluster:Cluster::plain"),
    ]


def test_check_reports_each_rule_at_its_default_level() -> None:
    """Overriding levels is the Pulumi CLI's (--policy-pack-config), not the preview's."""
    rogue = ("kubernetes:apps/v1:Deployment", "rogue", _deployment(GPU_POD))
    squatter_pod = {"containers": [{"name": "c"}], "tolerations": [DEFAULT_PLACEMENT.toleration()]}
    squatter = ("kubernetes:apps/v1:Deployment", "squatter", _deployment(squatter_pod))
    found = {(v.rule, v.level, v.resource) for v in check([rogue, squatter], DEFAULT_PLACEMENT)}
    assert found == {
        ("gpu-workload-placement", "mandatory", "kubernetes:apps/v1:Deployment rogue"),
        ("gpu-toleration-without-gpu", "advisory", "kubernetes:apps/v1:Deployment squatter"),
    }


def test_custom_placement_is_enforced() -> None:
    p = Placement("accelerator", "t4g")
    assert (
        gpu_workload_placement("kubernetes:apps/v1:Deployment", _deployment(place_pod_spec(GPU_POD, p)), p)
        == []
    )
    assert (
        gpu_workload_placement("kubernetes:apps/v1:Deployment", _deployment(place_pod_spec(GPU_POD)), p) != []
    )


def test_the_crossguard_pack_wraps_every_rule(monkeypatch) -> None:
    packs = []
    monkeypatch.setattr(
        pulumi_policy, "PolicyPack", lambda name, policies, **kw: packs.append((name, policies))
    )
    runpy.run_path(str(ROOT / "policy" / "__main__.py"))
    ((name, policies),) = packs
    assert name == "eks-gpu-guardrails"
    assert [p.name for p in policies] == [r.name for r in RULES]
    assert [p.enforcement_level.value for p in policies] == [r.default_level for r in RULES]
    assert [type(p).__name__ for p in policies] == [
        "ResourceValidationPolicy" if not (r.stack or r.contract) else "StackValidationPolicy" for r in RULES
    ]
    assert [r.name for r in RULES if not r.contract] == [
        "node-group-settings",
        "workload-settings",
        "security-baseline",
    ]
    reported = []
    rogue = SimpleNamespace(
        resource_type="kubernetes:apps/v1:Deployment",
        props=_deployment(GPU_POD),
        name="rogue",
        urn="urn:rogue",
        parent=None,
        dependencies=[],
    )
    policies[0].validate(
        SimpleNamespace(resources=[rogue], get_config=dict),
        lambda message, urn: reported.append((message, urn)),
    )
    assert reported[0][0].startswith("rogue spec.template.spec requests nvidia.com/gpu but does not tolerate")
    assert reported[0][1] == "urn:rogue"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (
            {"placement": "GPU=true"},
            "gpu-workload-placement.placement must be an object with exactly key and value",
        ),
        ({"placement": {"key": "GPU"}}, "must be an object with exactly key and value"),
        (
            {"placement": {"key": "kubernetes.io/gpu", "value": "true"}},
            "policy pack config gpu-workload-placement: placement.key 'kubernetes.io/gpu': EKS refuses",
        ),
        (
            {"placement": {"key": "GPU", "value": True}},
            "policy pack config gpu-workload-placement: placement.value must be a string",
        ),
    ],
)
def test_a_bad_placement_in_the_pack_config_is_refused_naming_the_policy(config: dict, message: str) -> None:
    with pytest.raises(PlacementError) as error:
        placement_from_config("gpu-workload-placement", config)
    assert message in str(error.value)
    # No placement in a policy's config: the stack's own contract decides.
    assert placement_from_config("gpu-workload-placement", {}) is None
    assert placement_from_config("gpu-workload-placement", None) is None


def test_preview_fails_a_stack_with_a_hand_written_gpu_deployment(tmp_path: Path, capsys) -> None:
    project = tmp_path / "rogue"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: rogue\nruntime: python\n")
    (project / "Pulumi.dev.yaml").write_text("config: {}\n")
    (project / "__main__.py").write_text(
        "import pulumi_kubernetes as k8s\n"
        "k8s.apps.v1.Deployment('rogue', spec={'selector': {'matchLabels': {'a': 'b'}}, 'template': {"
        "'metadata': {'labels': {'a': 'b'}}, 'spec': {'containers': [{'name': 'm', 'image': 'i',"
        " 'resources': {'limits': {'nvidia.com/gpu': 1}}}]}}})\n"
    )
    assert main(["--stack", "dev", "--out", str(tmp_path / "out"), "--project", str(project)]) == 1
    captured = capsys.readouterr()
    assert (
        "[mandatory] gpu-workload-placement: kubernetes:apps/v1:Deployment rogue spec.template.spec requests "
        "nvidia.com/gpu" in captured.out
    )
    assert "mandatory policy violation(s)" in captured.err


def test_a_karpenter_gpu_nodepool_carries_the_contract_as_a_node_group_does() -> None:
    """The NodePool the platform declares passes; the same without the taint or the label is mandatory."""
    from infra.tooling.agents import NODEPOOL
    from localcluster import karpenter

    _, run = karpenter.platform_run()
    pool = next(r.inputs for r in run.of_type(NODEPOOL) if r.name == "nodepool-gpu-batch")
    assert gpu_node_group_contract(NODEPOOL, pool, DEFAULT_PLACEMENT) == []
    template = pool["spec"]["template"]
    untainted = {
        **pool,
        "spec": {**pool["spec"], "template": {**template, "spec": {**template["spec"], "taints": []}}},
    }
    assert gpu_node_group_contract(NODEPOOL, untainted, DEFAULT_PLACEMENT) == [
        "is a GPU NodePool without the taint {'key': 'GPU', 'value': 'true', 'effect': 'NoSchedule'}: "
        "add it to spec.template.spec.taints"
    ]
    found = check([(NODEPOOL, "gpu-batch", untainted)], DEFAULT_PLACEMENT)
    assert [(v.rule, v.level) for v in found] == [("gpu-node-group-contract", "mandatory")]
    unlabelled = {**pool, "spec": {**pool["spec"], "template": {**template, "metadata": {"labels": {}}}}}
    assert (
        "without the label {'GPU': 'true'}"
        in gpu_node_group_contract(NODEPOOL, unlabelled, DEFAULT_PLACEMENT)[0]
    )
    cpu_only = {"spec": {"template": {"spec": {"requirements": [], "taints": []}}}}
    assert gpu_node_group_contract(NODEPOOL, cpu_only, DEFAULT_PLACEMENT) == []


# --- every pod template, found by shape: any kind that carries one, custom resources too ---


def _template(pod: dict) -> dict:
    return {"template": {"spec": pod}}


POD_CARRIERS = {
    # (resource type, where its pod spec sits) -> its inputs around a pod spec
    ("kubernetes:apps/v1:DeploymentPatch", "spec.template.spec"): lambda pod: {"spec": _template(pod)},
    ("kubernetes:batch/v1:JobPatch", "spec.template.spec"): lambda pod: {"spec": _template(pod)},
    ("kubernetes:core/v1:PodPatch", "spec"): lambda pod: {"spec": pod},
    ("kubernetes:core/v1:ReplicationController", "spec.template.spec"): lambda pod: {"spec": _template(pod)},
    ("kubernetes:core/v1:PodTemplate", "template.spec"): lambda pod: _template(pod),
    ("kubernetes:kubeflow.org/v1:PyTorchJob", "spec.pytorchReplicaSpecs.Worker.template.spec"): lambda pod: {
        "spec": {
            "pytorchReplicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 2, **_template(pod)}}
        }
    },
    ("kubernetes:kubeflow.org/v2beta1:MPIJob", "spec.mpiReplicaSpecs.Worker.template.spec"): lambda pod: {
        "spec": {"mpiReplicaSpecs": {"Worker": _template(pod)}}
    },
    ("kubernetes:ray.io/v1:RayCluster", "spec.workerGroupSpecs[0].template.spec"): lambda pod: {
        "spec": {"workerGroupSpecs": [{"groupName": "gpu", **_template(pod)}]}
    },
    ("kubernetes:ray.io/v1:RayJob", "spec.rayClusterSpec.workerGroupSpecs[0].template.spec"): lambda pod: {
        "spec": {"entrypoint": "python train.py", "rayClusterSpec": {"workerGroupSpecs": [_template(pod)]}}
    },
    ("kubernetes:ray.io/v1:RayService", "spec.rayClusterConfig.headGroupSpec.template.spec"): lambda pod: {
        "spec": {"rayClusterConfig": {"headGroupSpec": _template(pod)}}
    },
    ("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "spec.replicatedJobs[0].template.spec.template.spec"): (
        lambda pod: {"spec": {"replicatedJobs": [{"name": "w", "template": {"spec": _template(pod)}}]}}
    ),
    (
        "kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet",
        "spec.leaderWorkerTemplate.workerTemplate.spec",
    ): lambda pod: {"spec": {"leaderWorkerTemplate": {"size": 2, "workerTemplate": {"spec": pod}}}},
    ("kubernetes:serving.kserve.io/v1beta1:InferenceService", "spec.predictor"): lambda pod: {
        "spec": {"predictor": pod}
    },
    ("kubernetes:example.com/v1:NobodyKnowsThisKind", "spec.stages[1].runner.spec"): lambda pod: {
        "spec": {"stages": [{"name": "prep"}, {"runner": {"spec": pod}}]}
    },
}


@pytest.mark.parametrize(("typ", "path"), sorted(POD_CARRIERS), ids=lambda v: v.rsplit(":", 1)[-1])
def test_any_object_carrying_an_unplaced_gpu_pod_spec_is_refused_naming_the_path(typ: str, path: str) -> None:
    props = POD_CARRIERS[(typ, path)](GPU_POD)
    found = [(v.rule, v.level, v.message) for v in check([(typ, "w", props)], DEFAULT_PLACEMENT)]
    assert [(rule, level) for rule, level, _ in found] == [("gpu-workload-placement", "mandatory")] * 2
    assert [message.split(" requests ")[0] for _, _, message in found] == [path, path]
    placed = POD_CARRIERS[(typ, path)](place_pod_spec(GPU_POD))
    assert check([(typ, "w", placed)], DEFAULT_PLACEMENT) == []


def test_a_kserve_model_asking_for_gpus_is_judged_with_its_predictor() -> None:
    """KServe's predictor is a pod spec whose model container has another name than ``containers``."""
    typ = "kubernetes:serving.kserve.io/v1beta1:InferenceService"
    model = {"modelFormat": {"name": "triton"}, "storageUri": "s3://m", **GPU_POD["containers"][0]}
    found = gpu_workload_placement(typ, {"spec": {"predictor": {"model": model}}}, DEFAULT_PLACEMENT)
    assert [m.split(" requests ")[0] for m in found] == ["spec.predictor", "spec.predictor"]
    placement = {k: v for k, v in place_pod_spec({"containers": []}).items() if k != "containers"}
    predictor = {"model": model, **placement}
    assert gpu_workload_placement(typ, {"spec": {"predictor": predictor}}, DEFAULT_PLACEMENT) == []


def test_every_gpu_pod_spec_of_one_object_is_judged_each_by_its_path() -> None:
    typ = "kubernetes:ray.io/v1:RayCluster"
    props = {
        "spec": {
            "headGroupSpec": _template(place_pod_spec(GPU_POD)),
            "workerGroupSpecs": [_template(GPU_POD)],
        }
    }
    found = gpu_workload_placement(typ, props, DEFAULT_PLACEMENT)
    assert {m.split(" requests ")[0] for m in found} == {"spec.workerGroupSpecs[0].template.spec"}


def test_a_helm_release_is_advised_naming_what_the_pack_did_not_see() -> None:
    release = ("kubernetes:helm.sh/v3:Release", "vllm", {"chart": "vllm-stack", "values": {"gpus": 1}})
    (found,) = [v for v in check([release], DEFAULT_PLACEMENT) if v.rule != "agent-placement-unknown"]
    assert (found.rule, found.level) == ("helm-release-unseen", "advisory")
    assert found.message.startswith(
        "is a Helm release (chart 'vllm-stack'): the pack cannot see the objects it installs, so their pod "
        "specs are not judged; use kubernetes.helm.v4.Chart"
    )
    assert "nodeSelector {'GPU': 'true'}" in found.message


def test_a_field_not_known_during_preview_beside_the_pod_spec_leaves_it_judged(analyzer) -> None:
    """Through pulumi_policy's proxy, which raises on reading a value not known yet: the walk for pod
    specs steps around such values, so an unknown replica count or annotation hides no GPU pod."""
    unknown = pulumi_policy.proxy.UNKNOWN_STRING_VALUE
    props = _deployment(GPU_POD)
    props["spec"] = {
        **props["spec"],
        "replicas": unknown,
        "template": {"metadata": {"annotations": {"a": unknown}}, "spec": GPU_POD},
    }
    response = crossguard.analyze_stack(analyzer, [("kubernetes:apps/v1:Deployment", "rogue", props)])
    failed = [d.message for d in response.diagnostics if crossguard.level(d) == "mandatory"]
    assert [m.splitlines()[-1].split(" requests ")[0] for m in failed] == ["rogue spec.template.spec"] * 2


def test_a_two_gpu_container_that_can_land_on_a_time_sliced_pool_is_flagged_naming_the_pool() -> None:
    """The scheduler admits it (2 of 4 slots), the autoscaler starts a node for it, and the device plugin
    then refuses it there over and over (failRequestsGreaterThanOne): mandatory, naming the pool."""
    from infra.tooling.policy_rules import gpus_beyond_a_sliced_pool
    from infra.workloads.placement import GpuPool

    sliced, whole = GpuPool("inference", 1, 4), GpuPool("training", 2)
    contract = Placement(pools=(sliced, whole))
    two = {
        "containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": 2}}}],
        "tolerations": [contract.toleration()],
    }
    deployment = "kubernetes:apps/v1:Deployment"
    (message,) = gpus_beyond_a_sliced_pool(deployment, _deployment(two), contract)
    assert "pool 'inference'" in message and "asking for 2 nvidia.com/gpu" in message
    on_training = {**two, "nodeSelector": {"eks-gpu/pool": "training"}}
    assert gpus_beyond_a_sliced_pool(deployment, _deployment(on_training), contract) == []
    one = {**two, "containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    assert gpus_beyond_a_sliced_pool(deployment, _deployment(one), contract) == []
    assert ("gpus-beyond-a-sliced-pool", "mandatory") in {
        (v.rule, v.level) for v in check([(deployment, "raw", _deployment(two))], contract)
    }


def test_each_description_is_one_sentence_and_names_no_level() -> None:
    # printed above each violation; the CLI prints the violation's level beside it, as the user's
    # --policy-pack-config sets it, so a level in the description could contradict it
    for spec in RULES:
        assert spec.description.endswith(".") and spec.description.count(". ") == 0, spec.name
        assert not re.search(r"\b(mandatory|advisory|disabled)\b", spec.description, re.I), spec.description
