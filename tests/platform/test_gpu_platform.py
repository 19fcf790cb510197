"""The platform program under Pulumi's mock engine: exact inputs of every AWS and Kubernetes resource."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import botocore.session
import pytest
from botocore.validate import ParamValidator

from infra.platform.iam import EC2_TRUST_POLICY, NODE_MANAGED_POLICIES
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
        "version": "1.34",
        "vpcId": "computed(gpu-platform-vpc.vpcId)",
        "privateSubnetIds": [f"computed(gpu-platform-vpc.privateSubnetIds[{i}])" for i in range(3)],
        "publicSubnetIds": [f"computed(gpu-platform-vpc.publicSubnetIds[{i}])" for i in range(3)],
        "authenticationMode": "API",
        "skipDefaultNodeGroup": True,
        "skipDefaultSecurityGroups": True,
        "endpointPrivateAccess": True,
        "endpointPublicAccess": True,
        "publicAccessCidrs": ["0.0.0.0/0"],
        "encryptionConfigKeyArn": "arn:aws:kms:us-west-2:123456789012:key/gpu-platform-secrets",
        "enabledClusterLogTypes": ["api", "audit", "authenticator"],
    }
    key = dev.one("aws:kms/key:Key")
    assert key.inputs["enableKeyRotation"] is True


def test_gpu_node_group_inputs(dev: Run) -> None:
    gpu = dev.one(NODE_GROUP, "gpu-platform-gpu")
    assert gpu.inputs["amiType"] == "AL2023_ARM_64_NVIDIA"
    assert gpu.inputs["instanceTypes"] == ["g5g.xlarge", "g5g.2xlarge"]
    assert gpu.inputs["labels"] == {"GPU": "true"}
    assert gpu.inputs["taints"] == [{"key": "GPU", "value": "true", "effect": "NO_SCHEDULE"}]
    assert gpu.inputs["scalingConfig"] == {"minSize": 0, "desiredSize": 0, "maxSize": 2}
    assert gpu.inputs["capacityType"] == "ON_DEMAND"
    assert gpu.inputs["updateConfig"] == {"maxUnavailable": 1}
    assert gpu.inputs["subnetIds"] == [f"computed(gpu-platform-vpc.privateSubnetIds[{i}])" for i in range(3)]
    assert "diskSize" not in gpu.inputs  # the launch template owns the disk
    assert gpu.inputs["nodeGroupNamePrefix"] == "gpu-"  # replacements create the new group first


def test_system_node_group_is_untainted_arm(dev: Run) -> None:
    system = dev.one(NODE_GROUP, "gpu-platform-system")
    assert system.inputs["amiType"] == "AL2023_ARM_64_STANDARD"
    assert system.inputs["instanceTypes"] == ["t4g.large"]
    assert system.inputs.get("taints", []) == []
    assert "GPU" not in system.inputs["labels"]


@pytest.mark.parametrize("name", ["gpu-platform-gpu", "gpu-platform-system"])
def test_node_group_request_passes_the_eks_api_model(dev: Run, name: str) -> None:
    inputs = dev.one(NODE_GROUP, name).inputs
    request = _create_nodegroup_request(inputs)
    _validate("eks", "CreateNodegroup", request)
    model = _model("eks")
    assert request["amiType"] in model.shape_for("AMITypes").enum
    assert all(t["effect"] in model.shape_for("TaintEffect").enum for t in request["taints"])


def test_the_eks_model_would_reject_the_kubernetes_spelling_of_the_effect(dev: Run) -> None:
    request = _create_nodegroup_request(dev.one(NODE_GROUP, "gpu-platform-gpu").inputs)
    request["taints"] = [DEFAULT_PLACEMENT.node_taint()]
    assert _request_errors("eks", "CreateNodegroup", request) == [
        ".taints[0].effect: 'NoSchedule' is not one of TaintEffect ['NO_SCHEDULE', 'NO_EXECUTE', 'PREFER_NO_SCHEDULE']"
    ]


def test_launch_templates_require_imdsv2_and_encrypt_gp3_root_volumes(dev: Run) -> None:
    for name, disk in (("gpu-platform-gpu-lt", 100), ("gpu-platform-system-lt", 30)):
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


def test_node_role_has_only_the_node_policies(dev: Run) -> None:
    role = dev.one("aws:iam/role:Role", "gpu-platform-node")
    assert json.loads(role.inputs["assumeRolePolicy"]) == EC2_TRUST_POLICY
    attached = [
        r.inputs["policyArn"] for r in dev.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    ]
    assert sorted(attached) == sorted(NODE_MANAGED_POLICIES)


def test_device_plugin_release_inputs(dev: Run) -> None:
    release = dev.one("kubernetes:helm.sh/v3:Release", "nvidia-device-plugin")
    provider = dev.one("pulumi:providers:kubernetes", "gpu-platform-k8s")
    assert release.provider.startswith(provider.urn)
    assert release.inputs["chart"] == "nvidia-device-plugin"
    assert release.inputs["version"] == "0.20.0"
    assert release.inputs["repositoryOpts"] == {"repo": "https://nvidia.github.io/k8s-device-plugin"}
    assert release.inputs["namespace"] == "nvidia-device-plugin"
    assert release.inputs["atomic"] is True and release.inputs["cleanupOnFail"] is True


def test_plain_pods_never_land_on_gpu_nodes_and_gpu_pods_only_there(dev: Run) -> None:
    nodes = [
        Node.from_node_group(
            "gpu",
            labels=dev.one(NODE_GROUP, "gpu-platform-gpu").inputs["labels"],
            eks_taints=dev.one(NODE_GROUP, "gpu-platform-gpu").inputs["taints"],
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
    assert outputs["placement"] == {"key": "GPU", "value": "true"}
    assert outputs["clusterName"] == "eks-gpu-platform-dev"
    assert outputs["gpuNodeGroupName"] == "computed(gpu-platform-gpu.nodeGroupName)"
    assert (outputs["devicePluginRelease"], outputs["devicePluginNamespace"]) == (
        "nvidia-device-plugin",
        "nvidia-device-plugin",
    )


def test_bad_config_declares_nothing(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "Pulumi.bad.yaml").write_text(
        "config:\n  aws:region: us-west-2\n  eks-gpu-platform:gpuNodes:\n    instanceTypes: [g5.xlarge]\n"
    )
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    from infra.platform.config import ConfigError

    with pytest.raises(ConfigError, match=r"'g5\.xlarge' is not an Arm NVIDIA instance type"):
        run_project(tmp_path, "bad")


def test_production_protects_what_holds_running_workloads(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    dev_config = (ROOT / "Pulumi.dev.yaml").read_text()
    (tmp_path / "Pulumi.prod.yaml").write_text(
        dev_config.replace("eks-gpu-platform:production: false", "eks-gpu-platform:production: true")
    )
    prod = run_project(tmp_path, "prod")
    protected = sorted(r.name for r in prod.resources if r.protect)
    assert protected == [
        "gpu-platform-eks",
        "gpu-platform-gpu",
        "gpu-platform-gpu-lt",
        "gpu-platform-secrets",
    ]
    assert not any(r.protect for r in run_project(ROOT, "dev").resources)
