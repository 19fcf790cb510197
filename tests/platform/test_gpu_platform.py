"""The platform program under Pulumi's mock engine: exact inputs of every AWS and Kubernetes resource."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import botocore.session
import pytest
from botocore.validate import ParamValidator

from infra.platform.iam import NODE_MANAGED_POLICIES
from infra.platform.instance_types import ARM_NVIDIA, ARM_SYSTEM
from infra.tooling.offline import Run, run_project
from infra.workloads.placement import DEFAULT_PLACEMENT
from infra.workloads.scheduling import Node, placeable_on

ROOT = Path(__file__).resolve().parents[2]
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(ROOT, "dev")


@cache
def _model(service: str):
    return botocore.session.get_session().get_service_model(service)


def _enum_errors(value, shape, path: str = "") -> list[str]:
    """botocore's validator checks types and required members; enums are checked here, as AWS does."""
    if shape.type_name == "structure":
        return [
            e
            for k, v in value.items()
            if k in shape.members
            for e in _enum_errors(v, shape.members[k], f"{path}.{k}")
        ]
    if shape.type_name == "list":
        return [e for i, v in enumerate(value) for e in _enum_errors(v, shape.member, f"{path}[{i}]")]
    if shape.type_name == "string" and shape.enum and value not in shape.enum:
        return [f"{path}: {value!r} is not one of {shape.name} {shape.enum}"]
    return []


def _request_errors(service: str, operation: str, params: dict) -> list[str]:
    shape = _model(service).operation_model(operation).input_shape
    report = ParamValidator().validate(params, shape)
    return ([report.generate_report()] if report.has_errors() else []) + _enum_errors(params, shape)


def _validate(service: str, operation: str, params: dict) -> None:
    """Validate a request against the AWS API model botocore ships; fail with the model's complaint."""
    assert _request_errors(service, operation, params) == []


def _create_nodegroup_request(inputs: dict) -> dict:
    """What the AWS provider sends to EKS CreateNodegroup for these aws.eks.NodeGroup inputs."""
    scaling = inputs["scalingConfig"]
    return {
        "clusterName": inputs["clusterName"],
        "nodegroupName": inputs["nodeGroupNamePrefix"]
        + "20261202000000000000000001",  # the provider's unique suffix
        "scalingConfig": {k: scaling[k] for k in ("minSize", "maxSize", "desiredSize")},
        "subnets": inputs["subnetIds"],
        "instanceTypes": inputs["instanceTypes"],
        "amiType": inputs["amiType"],
        "nodeRole": inputs["nodeRoleArn"],
        "labels": inputs["labels"],
        "taints": inputs.get("taints", []),
        "capacityType": inputs["capacityType"],
        "launchTemplate": {
            "id": inputs["launchTemplate"]["id"],
            "version": inputs["launchTemplate"]["version"],
        },
        "updateConfig": inputs["updateConfig"],
        "version": inputs["version"],
        **({"tags": inputs["tags"]} if "tags" in inputs else {}),
        **({"nodeRepairConfig": inputs["nodeRepairConfig"]} if "nodeRepairConfig" in inputs else {}),
    }


def test_declares_the_whole_platform_under_one_component(dev: Run) -> None:
    component = dev.one("eks-gpu:index:GpuPlatform")
    assert {r.type for r in dev.children_of(component)} >= {
        "awsx:ec2:Vpc",
        "aws:kms/key:Key",
        "eks:index:Cluster",
        NODE_GROUP,
        "kubernetes:helm.sh/v3:Release",
    }


def test_cluster_inputs(dev: Run) -> None:
    cluster = dev.one("eks:index:Cluster")
    assert cluster.inputs == {
        "name": "eks-gpu-platform-dev",
        "version": "1.35",
        "vpcId": "computed(gpu-platform-vpc.vpcId)",
        "privateSubnetIds": [f"computed(gpu-platform-vpc.privateSubnetIds[{i}])" for i in range(3)],
        "publicSubnetIds": [f"computed(gpu-platform-vpc.publicSubnetIds[{i}])" for i in range(3)],
        "authenticationMode": "API",
        "accessEntries": {},
        "skipDefaultNodeGroup": True,
        "skipDefaultSecurityGroups": True,
        "endpointPrivateAccess": True,
        "endpointPublicAccess": True,
        "publicAccessCidrs": ["0.0.0.0/0"],
        "encryptionConfigKeyArn": "arn:aws:kms:us-west-2:123456789012:key/gpu-platform-secrets",
        "enabledClusterLogTypes": ["api", "audit", "authenticator"],
        # Pinned: pulumi-eks would otherwise pick the newest add-on on every run (drift).
        "vpcCniOptions": {
            "addonVersion": "v1.22.4-eksbuild.3",
            "enableNetworkPolicy": True,  # the example's NetworkPolicy is enforced
            "resolveConflictsOnCreate": "OVERWRITE",
            "resolveConflictsOnUpdate": "OVERWRITE",
        },
        "kubeProxyAddonOptions": {
            "version": "v1.35.3-eksbuild.13",
            "resolveConflictsOnCreate": "OVERWRITE",
            "resolveConflictsOnUpdate": "OVERWRITE",
        },
    }
    key = dev.one("aws:kms/key:Key")
    assert key.inputs["enableKeyRotation"] is True


def test_new_vpc_subnets_are_the_computed_layout(dev: Run) -> None:
    specs = dev.one("awsx:ec2:Vpc").inputs["subnetSpecs"]
    assert [(s["type"], s["cidrBlocks"]) for s in specs] == [
        ("Private", ["10.0.0.0/19", "10.0.32.0/19", "10.0.64.0/19"]),
        ("Public", ["10.0.96.0/22", "10.0.100.0/22", "10.0.104.0/22"]),
    ]


@pytest.mark.parametrize(
    ("pool", "types", "labels", "scaling", "capacity"),
    [
        (
            "inference",
            ["g5g.xlarge", "g5g.2xlarge"],
            {
                "GPU": "true",
                "eks-gpu/pool": "inference",
                "k8s.amazonaws.com/accelerator": "nvidia-t4g",
                "nvidia.com/device-plugin.config": "inference",
            },
            {"minSize": 0, "desiredSize": 0, "maxSize": 2},
            "ON_DEMAND",
        ),
        (
            "training",
            ["g5g.16xlarge"],
            {"GPU": "true", "eks-gpu/pool": "training", "k8s.amazonaws.com/accelerator": "nvidia-t4g"},
            {"minSize": 0, "desiredSize": 0, "maxSize": 2},
            "SPOT",
        ),
    ],
)
def test_each_gpu_pool_is_a_tainted_labelled_node_group(
    dev: Run, pool, types, labels, scaling, capacity
) -> None:
    gpu = dev.one(NODE_GROUP, f"gpu-platform-gpu-{pool}")
    assert gpu.inputs["amiType"] == "AL2023_ARM_64_NVIDIA"
    assert gpu.inputs["instanceTypes"] == types
    assert gpu.inputs["labels"] == labels
    assert gpu.inputs["taints"] == [{"key": "GPU", "value": "true", "effect": "NO_SCHEDULE"}]
    assert gpu.inputs["scalingConfig"] == scaling
    assert gpu.inputs["capacityType"] == capacity
    assert gpu.inputs["updateConfig"] == {"maxUnavailable": 1}
    assert gpu.inputs["nodeRepairConfig"] == {"enabled": True}
    assert gpu.inputs["subnetIds"] == [f"computed(gpu-platform-vpc.privateSubnetIds[{i}])" for i in range(3)]
    assert "diskSize" not in gpu.inputs  # the launch template owns the disk
    assert gpu.inputs["nodeGroupNamePrefix"] == f"gpu-{pool}-"  # replacements create the new group first


def test_addons_are_pinned_for_the_clusters_version_and_overwrite_on_update(dev: Run) -> None:
    addons = {a.inputs["addonName"]: a.inputs for a in dev.of_type("aws:eks/addon:Addon")}
    assert {name: (a["addonVersion"], a["resolveConflictsOnUpdate"]) for name, a in addons.items()} == {
        "eks-pod-identity-agent": ("v1.3.10-eksbuild.3", "OVERWRITE"),
        "coredns": ("v1.14.3-eksbuild.3", "OVERWRITE"),
        # infra/platform/observability.py (its own version table)
        "amazon-cloudwatch-observability": ("v6.4.0-eksbuild.1", "OVERWRITE"),
        "eks-node-monitoring-agent": ("v1.7.0-eksbuild.1", "OVERWRITE"),
    }
    for inputs in addons.values():
        _validate(
            "eks",
            "CreateAddon",
            {
                k: inputs[k]
                for k in ("clusterName", "addonName", "addonVersion", "resolveConflicts")
                if k in inputs
            },
        )


def test_a_kubernetes_version_bump_moves_every_addon(tmp_path: Path) -> None:
    bumped = _variant(
        tmp_path,
        "bump",
        'eks-gpu-platform:kubernetesVersion: "1.35"',
        'eks-gpu-platform:kubernetesVersion: "1.36"',
    )
    cluster = bumped.one("eks:index:Cluster").inputs
    addons = {a.inputs["addonName"]: a.inputs["addonVersion"] for a in bumped.of_type("aws:eks/addon:Addon")}
    assert cluster["version"] == "1.36"
    assert cluster["kubeProxyAddonOptions"]["version"] == "v1.36.0-eksbuild.14"
    assert addons == {
        "eks-pod-identity-agent": "v1.3.10-eksbuild.3",
        "coredns": "v1.14.3-eksbuild.3",
        "amazon-cloudwatch-observability": "v6.4.0-eksbuild.1",
        "eks-node-monitoring-agent": "v1.7.0-eksbuild.1",
    }
    assert {g.inputs["version"] for g in bumped.of_type(NODE_GROUP)} == {"1.36"}
    release = bumped.one("kubernetes:helm.sh/v3:Release", "cluster-autoscaler")
    assert release.inputs["values"]["image"] == {"tag": "v1.36.1"}


def test_two_runs_of_the_same_stack_declare_identical_inputs(dev: Run) -> None:
    """No input is looked up afresh per run (add-on versions, AMIs): a preview with no change shows none."""
    again = run_project(ROOT, "dev")
    assert {r.urn: r.inputs for r in again.resources} == {r.urn: r.inputs for r in dev.resources}


def test_cluster_admins_become_access_entries(tmp_path: Path) -> None:
    admins = _variant(
        tmp_path,
        "admins",
        "  eks-gpu-platform:production: false",
        "  eks-gpu-platform:production: false\n  eks-gpu-platform:clusterAdmins:\n"
        "    - arn:aws:iam::123456789012:role/github-deploy\n    - arn:aws:iam::123456789012:user/ops/alice",
    )
    entries = admins.one("eks:index:Cluster").inputs["accessEntries"]
    admin = {
        "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
        "accessScope": {"type": "cluster"},
    }
    assert entries == {
        "role-github-deploy": {
            "principalArn": "arn:aws:iam::123456789012:role/github-deploy",
            "accessPolicies": {"cluster-admin": admin},
        },
        "user-alice": {
            "principalArn": "arn:aws:iam::123456789012:user/ops/alice",
            "accessPolicies": {"cluster-admin": admin},
        },
    }
    for entry in entries.values():
        _validate("eks", "CreateAccessEntry", {"clusterName": "c", "principalArn": entry["principalArn"]})
        _validate(
            "eks",
            "AssociateAccessPolicy",
            {"clusterName": "c", "principalArn": entry["principalArn"], **admin},
        )


def _variant(tmp_path: Path, stack: str, old: str, new: str, *, secret_keys: tuple[str, ...] = ()) -> Run:
    """The dev stack with one edit, run as stack ``stack``."""
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    assert old in text
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(text.replace(old, new))
    return run_project(tmp_path, stack, secret_keys=secret_keys)


def test_system_node_group_is_untainted_arm(dev: Run) -> None:
    system = dev.one(NODE_GROUP, "gpu-platform-system")
    assert system.inputs["amiType"] == "AL2023_ARM_64_STANDARD"
    assert system.inputs["instanceTypes"] == ["t4g.large"]
    assert system.inputs.get("taints", []) == []
    assert "GPU" not in system.inputs["labels"]


@pytest.mark.parametrize(
    "name", ["gpu-platform-gpu-inference", "gpu-platform-gpu-training", "gpu-platform-system"]
)
def test_node_group_request_passes_the_eks_api_model(dev: Run, name: str) -> None:
    inputs = dev.one(NODE_GROUP, name).inputs
    request = _create_nodegroup_request(inputs)
    _validate("eks", "CreateNodegroup", request)
    model = _model("eks")
    assert request["amiType"] in model.shape_for("AMITypes").enum
    assert all(t["effect"] in model.shape_for("TaintEffect").enum for t in request["taints"])


def test_the_eks_model_would_reject_the_kubernetes_spelling_of_the_effect(dev: Run) -> None:
    request = _create_nodegroup_request(dev.one(NODE_GROUP, "gpu-platform-gpu-inference").inputs)
    request["taints"] = [DEFAULT_PLACEMENT.node_taint()]
    assert _request_errors("eks", "CreateNodegroup", request) == [
        ".taints[0].effect: 'NoSchedule' is not one of TaintEffect ['NO_SCHEDULE', 'NO_EXECUTE', 'PREFER_NO_SCHEDULE']"
    ]


def test_launch_templates_require_imdsv2_and_encrypt_gp3_root_volumes(dev: Run) -> None:
    for name, disk in (
        ("gpu-platform-gpu-inference-lt", 100),
        ("gpu-platform-gpu-training-lt", 200),
        ("gpu-platform-system-lt", 30),
    ):
        inputs = dev.one("aws:ec2/launchTemplate:LaunchTemplate", name).inputs
        assert inputs["metadataOptions"] == {
            "httpEndpoint": "enabled",
            "httpTokens": "required",
            "httpPutResponseHopLimit": 1,
        }
        (mapping,) = inputs["blockDeviceMappings"]
        assert mapping == {
            "deviceName": "/dev/xvda",
            "ebs": {
                "volumeSize": disk,
                "volumeType": "gp3",
                "encrypted": "true",
                "deleteOnTermination": "true",
            },
        }
        assert "imageId" not in inputs and "userData" not in inputs  # EKS picks the amiType's AMI
        data = {
            "MetadataOptions": {
                "HttpEndpoint": "enabled",
                "HttpTokens": "required",
                "HttpPutResponseHopLimit": 1,
            },
            "BlockDeviceMappings": [
                {
                    "DeviceName": "/dev/xvda",
                    "Ebs": {
                        "VolumeSize": disk,
                        "VolumeType": "gp3",
                        "Encrypted": True,
                        "DeleteOnTermination": True,
                    },
                }
            ],
        }
        _validate("ec2", "CreateLaunchTemplate", {"LaunchTemplateName": name, "LaunchTemplateData": data})


def test_instance_types_exist_in_ec2(dev: Run) -> None:
    known = set(_model("ec2").shape_for("InstanceType").enum)
    assert set(ARM_NVIDIA) <= known and set(ARM_SYSTEM) <= known


def test_node_role_is_for_ec2_alone_and_has_only_the_node_policies(dev: Run) -> None:
    # Spelled out here, not read from infra/platform/iam.py: a wrong principal or a broader
    # policy there must fail this test (pull-only ECR, not ReadOnly; no SSM, no admin).
    role = dev.one("aws:iam/role:Role", "gpu-platform-node")
    assert json.loads(role.inputs["assumeRolePolicy"]) == {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
    attached = [
        r.inputs["policyArn"]
        for r in dev.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.parent == role.urn
    ]
    assert sorted(attached) == [
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    ]


def test_every_node_group_waits_for_the_node_roles_policy_attachments(dev: Run) -> None:
    """Created after the attachments and deleted before them (terraform-provider-aws, aws_eks_node_group
    docs): otherwise EKS cannot delete the group's instances and network interfaces."""
    role = dev.one("aws:iam/role:Role", "gpu-platform-node")
    attachments = {
        r.urn
        for r in dev.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if r.parent == role.urn
    }
    assert len(attachments) == len(NODE_MANAGED_POLICIES)
    groups = dev.of_type(NODE_GROUP)
    assert {g.name for g in groups} >= {"gpu-platform-system", "gpu-platform-gpu-inference"}
    for group in groups:
        assert attachments <= set(group.dependencies), group.name


def test_device_plugin_release_inputs(dev: Run) -> None:
    release = dev.one("kubernetes:helm.sh/v3:Release", "nvidia-device-plugin")
    provider = dev.one("pulumi:providers:kubernetes", "gpu-platform-k8s")
    assert release.provider.startswith(provider.urn)
    assert release.inputs["chart"] == "nvidia-device-plugin"
    assert release.inputs["version"] == "0.19.3"
    assert release.inputs["repositoryOpts"] == {"repo": "https://nvidia.github.io/k8s-device-plugin"}
    assert release.inputs["namespace"] == "nvidia-device-plugin"
    assert release.inputs["atomic"] is True and release.inputs["cleanupOnFail"] is True


def test_plain_pods_never_land_on_gpu_nodes_and_gpu_pods_only_there(dev: Run) -> None:
    nodes = [
        Node.from_node_group(
            "gpu",
            labels=dev.one(NODE_GROUP, "gpu-platform-gpu-inference").inputs["labels"],
            eks_taints=dev.one(NODE_GROUP, "gpu-platform-gpu-inference").inputs["taints"],
            instance_type="g5g.xlarge",
            arch="arm64",
            gpus=ARM_NVIDIA["g5g.xlarge"].gpus,
        ),
        Node.from_node_group(
            "system",
            labels=dev.one(NODE_GROUP, "gpu-platform-system").inputs["labels"],
            instance_type="t4g.large",
            arch="arm64",
        ),
    ]
    assert placeable_on({"containers": [{"name": "coredns"}]}, nodes) == ["system"]
    from infra.workloads.podspec import place_pod_spec

    assert placeable_on(place_pod_spec({"containers": [{"name": "m"}]}), nodes) == ["gpu"]


def test_stack_outputs_for_consumers(dev: Run) -> None:
    outputs = dev.stack_outputs
    assert repr(outputs["kubeconfig"]) == "[secret]"
    assert outputs["placement"] == {
        "key": "GPU",
        "value": "true",
        "poolLabel": "eks-gpu/pool",
        "pools": {
            "inference": {"gpusPerNode": 1, "timeSlicingReplicas": 4, "capacityType": "ON_DEMAND"},
            "training": {"gpusPerNode": 2, "timeSlicingReplicas": 1, "capacityType": "SPOT"},
        },
        "queues": outputs["placement"]["queues"],  # the dev stack's teams (tests/platform/test_kueue.py)
    }
    assert outputs["clusterName"] == "eks-gpu-platform-dev"
    assert outputs["gpuNodeGroupNames"] == {
        "inference": "computed(gpu-platform-gpu-inference.nodeGroupName)",
        "training": "computed(gpu-platform-gpu-training.nodeGroupName)",
    }
    assert (outputs["devicePluginRelease"], outputs["devicePluginNamespace"]) == (
        "nvidia-device-plugin",
        "nvidia-device-plugin",
    )


def test_bad_config_declares_nothing(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.bad.yaml").write_text(
        "config:\n  aws:region: us-west-2\n  eks-gpu-platform:gpuPools:\n    a:\n      instanceTypes: [g5.xlarge]\n"
    )
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    from infra.platform.config import ConfigError

    with pytest.raises(
        ConfigError, match=r"gpuPools\.a\.instanceTypes\[0\] must be one of g5g\.xlarge, .*got 'g5\.xlarge'"
    ):
        run_project(tmp_path, "bad")


def test_secret_settings_stay_secret_in_every_input_they_reach(tmp_path: Path) -> None:
    from pulumi.runtime.rpc import is_rpc_secret, unwrap_rpc_secret

    run = _variant(
        tmp_path,
        "secret",
        "  eks-gpu-platform:production: false",
        "  eks-gpu-platform:production: false\n  eks-gpu-platform:clusterAdmins:\n"
        "    - arn:aws:iam::123456789012:role/github-deploy",
        secret_keys=("eks-gpu-platform:clusterAdmins", "eks-gpu-platform:endpoint"),
    )
    cluster = run.one("eks:index:Cluster").inputs
    assert is_rpc_secret(cluster["accessEntries"]) and is_rpc_secret(cluster["publicAccessCidrs"])
    # A secret list never names resources: the entry is keyed by position, not by the role's name.
    assert list(unwrap_rpc_secret(cluster["accessEntries"])) == ["admin-0"]
    assert "github-deploy" not in json.dumps([r.urn for r in run.resources])


def test_a_key_under_a_misspelled_project_namespace_is_an_error(tmp_path: Path) -> None:
    from infra.platform.config import ConfigError

    with pytest.raises(
        ConfigError, match=r"'eks-gpu-platfrom:production'.*did you mean eks-gpu-platform:production"
    ):
        _variant(tmp_path, "typo", "eks-gpu-platform:production: false", "eks-gpu-platfrom:production: false")


def _arns(value: object) -> list[str]:
    """Every ARN written anywhere in a resource's inputs."""
    if isinstance(value, dict):
        return [a for v in value.values() for a in _arns(v)]
    if isinstance(value, list):
        return [a for v in value for a in _arns(v)]
    if isinstance(value, str) and value.startswith("arn:"):
        return [value]
    if isinstance(value, str) and value.startswith("{"):
        try:
            return _arns(json.loads(value))  # policy documents
        except ValueError:
            return []
    return []


def test_every_arn_the_program_writes_names_the_accounts_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In GovCloud (or China) an AWS managed policy or access policy named ``arn:aws:...`` does not
    exist: the node role's attachments, the CloudWatch agent's, the admins' access policy all fail."""
    from infra.tooling import offline

    answer = offline._call

    def call(token: str, args: dict) -> dict:
        if token == "aws:index/getPartition:getPartition":
            return {"partition": "aws-us-gov", "dnsSuffix": "amazonaws.com", "id": "aws-us-gov"}
        return answer(token, args)

    monkeypatch.setattr(offline, "_call", call)
    gov = _variant(
        tmp_path,
        "gov",
        "  aws:region: us-west-2\n",
        "  aws:region: us-gov-west-1\n  eks-gpu-platform:clusterAdmins:\n"
        "    - arn:aws-us-gov:iam::123456789012:role/github-deploy\n",
    )
    written = {a for r in gov.resources if r.custom or r.type == "eks:index:Cluster" for a in _arns(r.inputs)}
    attached = {
        r.inputs["policyArn"] for r in gov.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    }
    assert "arn:aws-us-gov:iam::aws:policy/AmazonEKSWorkerNodePolicy" in attached
    assert "arn:aws-us-gov:iam::aws:policy/CloudWatchAgentServerPolicy" in attached
    made = {a for r in gov.resources for a in _arns(r.outputs)}  # the offline engine's, not the program's
    assert [a for a in written - made if a.split(":")[1] != "aws-us-gov"] == []
