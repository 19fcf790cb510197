"""The package schema other languages generate their SDKs from, as the SDK's host infers it."""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Any

import pytest

from infra.workloads import GpuDeploymentArgs, GpuJobArgs

OPEN_OBJECT = {"type": "object", "additionalProperties": {"$ref": "pulumi.json#/Any"}}
PLAIN_BOOLEAN = {"type": "boolean", "plain": True}
PLAIN_STRING = {"type": "string", "plain": True}
KUBERNETES = "/kubernetes/v4.25.0/schema.json#"
"""The Kubernetes package's schema at the provider localcluster builds, as pulumi-eks refers to it."""
OBJECT_META = {"$ref": f"{KUBERNETES}/types/kubernetes:meta%2Fv1:ObjectMeta"}
SERVED = {
    "eks-gpu:index:GpuDeployment": ("GpuDeploymentArgs", GpuDeploymentArgs),
    "eks-gpu:index:GpuJob": ("GpuJobArgs", GpuJobArgs),
}
"""What the package serves: each type token, the provider's TypedDict and the component's args dataclass."""


def _shape(prop: dict[str, Any]) -> dict[str, Any]:
    """A property's type, without its description (plain noted where the SDK marks it)."""
    shape = {k: v for k, v in prop.items() if k != "description"}
    if "additionalProperties" in shape:
        shape["additionalProperties"] = _shape(shape["additionalProperties"])
    return shape


def test_the_package_is_eks_gpu_at_this_repositorys_version(schema: dict[str, Any]) -> None:
    from importlib.metadata import version

    assert schema["name"] == "eks-gpu"
    assert schema["version"] == version("eks-gpu-infra")
    assert schema["types"] == {}  # no local type: Kubernetes' own are referenced
    assert schema["dependencies"] == [{"name": "kubernetes", "version": "4.34.2"}]  # the SDK's pin


def test_the_types_referenced_are_the_schema_of_the_kubernetes_provider_the_toolchain_builds() -> None:
    # The CLI binds a reference only to a schema of exactly that version (pkg/v3 codegen/schema
    # LoadPackageReferenceV2); the provider built here is the one localcluster/pulumi stamps.
    import re
    from pathlib import Path

    build = (Path(__file__).resolve().parents[2] / "localcluster" / "pulumi" / "build.sh").read_text()
    stamped = re.search(r"^K8S_VERSION=(\S+)", build, re.MULTILINE)
    assert stamped is not None and f"/kubernetes/v{stamped.group(1)}/schema.json#" == KUBERNETES


def test_the_package_serves_gpu_deployment_and_gpu_job(schema: dict[str, Any]) -> None:
    assert sorted(schema["resources"]) == sorted(SERVED)


def test_gpu_deployment_inputs(schema: dict[str, Any]) -> None:
    resource = schema["resources"]["eks-gpu:index:GpuDeployment"]

    assert resource["isComponent"] is True
    assert {name: _shape(prop) for name, prop in resource["inputProperties"].items()} == {
        "spec": {"$ref": f"{KUBERNETES}/types/kubernetes:apps%2Fv1:DeploymentSpec"},
        "metadata": OBJECT_META,
        "gpus": {"type": "integer", "plain": True},
        "placement": OPEN_OBJECT,
        "pool": PLAIN_STRING,
        "securityProfile": PLAIN_STRING,
        "podDisruptionBudget": PLAIN_BOOLEAN,
        "rollingUpdateDefaults": PLAIN_BOOLEAN,
        "autoscaled": PLAIN_BOOLEAN,
        "checkImageArchitecture": PLAIN_BOOLEAN,
        "createTimeout": PLAIN_STRING,
        "updateTimeout": PLAIN_STRING,
        "deleteTimeout": PLAIN_STRING,
    }
    assert resource["requiredInputs"] == ["spec"]


def test_gpu_job_inputs(schema: dict[str, Any]) -> None:
    resource = schema["resources"]["eks-gpu:index:GpuJob"]

    assert resource["isComponent"] is True
    assert {name: _shape(prop) for name, prop in resource["inputProperties"].items()} == {
        "spec": {"$ref": f"{KUBERNETES}/types/kubernetes:batch%2Fv1:JobSpec"},
        "metadata": OBJECT_META,
        "gpus": {"type": "integer", "plain": True},
        "placement": OPEN_OBJECT,
        "pool": PLAIN_STRING,
        "securityProfile": PLAIN_STRING,
        "waitForCompletion": PLAIN_BOOLEAN,
        "queue": PLAIN_STRING,
        "priority": PLAIN_STRING,
        "minParallelism": {"type": "integer", "plain": True},
        "replaceUnready": PLAIN_BOOLEAN,
        "checkImageArchitecture": PLAIN_BOOLEAN,
        "createTimeout": PLAIN_STRING,
        "updateTimeout": PLAIN_STRING,
        "deleteTimeout": PLAIN_STRING,
    }
    assert resource["requiredInputs"] == ["spec"]


@pytest.mark.parametrize("token", sorted(SERVED))
def test_every_input_and_the_component_are_described(schema: dict[str, Any], token: str) -> None:
    # The descriptions are what TypeScript/Go users see in their editor: the profiles
    # are only there, the schema has no enum for them.
    resource = schema["resources"][token]

    assert resource["description"]
    described = [*resource["inputProperties"].values(), *resource["properties"].values()]
    assert all(prop.get("description") for prop in described)
    assert not any("{" in prop["description"] and "key" not in prop["description"] for prop in described)
    assert "baseline" in resource["inputProperties"]["securityProfile"]["description"]


def test_gpu_deployment_outputs_its_deployment_and_its_disruption_budget_as_resources(
    schema: dict[str, Any],
) -> None:
    resource = schema["resources"]["eks-gpu:index:GpuDeployment"]

    assert {name: _shape(prop) for name, prop in resource["properties"].items()} == {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "deployment": {"$ref": f"{KUBERNETES}/resources/kubernetes:apps%2Fv1:Deployment"},
        "podDisruptionBudget": {"$ref": f"{KUBERNETES}/resources/kubernetes:policy%2Fv1:PodDisruptionBudget"},
    }
    assert sorted(resource["required"]) == ["deployment", "name", "namespace"]  # the budget may be absent


def test_gpu_job_outputs_its_job_as_a_resource(schema: dict[str, Any]) -> None:
    resource = schema["resources"]["eks-gpu:index:GpuJob"]

    assert {name: _shape(prop) for name, prop in resource["properties"].items()} == {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
        "job": {"$ref": f"{KUBERNETES}/resources/kubernetes:batch%2Fv1:Job"},
    }
    assert sorted(resource["required"]) == ["job", "name", "namespace"]


@pytest.mark.parametrize("token", sorted(SERVED))
def test_the_inputs_are_exactly_the_components_arguments(schema: dict[str, Any], token: str) -> None:
    # A setting the Python component gains must reach other languages too, and the
    # package must not offer one the component would not take.
    typed_dict, dataclass = SERVED[token]
    components = sys.modules["eks_gpu_components"]
    served = list(getattr(components, typed_dict).__annotations__)
    taken = [field.name for field in dataclasses.fields(dataclass)]
    assert served == taken, (
        f"infra.workloads.{dataclass.__name__} changed: make {typed_dict} in "
        f"provider/eks_gpu_components.py list the same fields, then update the expected inputs here"
    )


def test_the_shared_args_are_inputs_of_both_components_described(schema: dict[str, Any]) -> None:
    # GpuWorkloadArgs holds what both components take, once, and so does the package's
    # _WorkloadArgs. The SDK's analyzer reads a property's description only from the class it
    # analyzes, so the provider describes the inherited fields itself
    # (docs/decisions/0015-shared-component-args.md). Each shared field must reach both
    # resources, first and described, and the ones that name no object kind alike.
    from infra.workloads.component import GpuWorkloadArgs

    fields = [f.name for f in dataclasses.fields(GpuWorkloadArgs)]
    assert [list(shared.__annotations__) for shared in sys.modules["eks_gpu_components"].SHARED_ARGS] == [
        fields
    ]
    shared = [re.sub(r"_([a-z])", lambda m: m.group(1).upper(), name) for name in fields]
    deployment, job = (schema["resources"][token]["inputProperties"] for token in sorted(SERVED))
    for inputs in (deployment, job):
        assert list(inputs)[: len(shared)] == shared
        assert all(inputs[name]["description"] for name in shared)
    alike = ["gpus", "placement", "pool", "securityProfile", "checkImageArchitecture", "deleteTimeout"]
    assert [deployment[name]["description"] for name in alike] == [job[name]["description"] for name in alike]


def test_the_provider_environment_can_check_private_ecr_images() -> None:
    # The CLI builds provider/.venv from provider/requirements.txt alone; without boto3
    # there, EcrCredentials can get no token and every private ECR image of a
    # TypeScript/Go/YAML stack is "not checked". Pinned to the botocore the repository
    # tests with (boto3 and botocore share release numbers).
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    provider_requirements = (root / "provider" / "requirements.txt").read_text()
    dev_requirements = (root / "requirements-dev.txt").read_text()
    boto3 = re.search(r"^boto3==(\S+)$", provider_requirements, re.MULTILINE)
    botocore = re.search(r"^botocore==(\S+)$", dev_requirements, re.MULTILINE)
    assert boto3 is not None, "provider/requirements.txt must pin boto3"
    assert botocore is not None and boto3.group(1) == botocore.group(1)
