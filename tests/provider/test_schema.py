"""The package schema other languages generate their SDKs from, as the SDK's host infers it."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

from infra.workloads import GpuDeploymentArgs

OPEN_OBJECT = {"type": "object", "additionalProperties": {"$ref": "pulumi.json#/Any"}}


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
    assert schema["types"] == {}  # nothing typed that the engine could hand over as an Output and lose
    assert schema["dependencies"] == []


def test_gpu_deployment_inputs(schema: dict[str, Any]) -> None:
    resource = schema["resources"]["eks-gpu:index:GpuDeployment"]

    assert resource["isComponent"] is True
    assert {name: _shape(prop) for name, prop in resource["inputProperties"].items()} == {
        "spec": OPEN_OBJECT,
        "metadata": OPEN_OBJECT,
        "gpus": {"type": "integer", "plain": True},
        "placement": OPEN_OBJECT,
        "securityDefaults": {"type": "boolean", "plain": True},
        "podDisruptionBudget": {"type": "boolean", "plain": True},
        "rollingUpdateDefaults": {"type": "boolean", "plain": True},
    }
    assert resource["requiredInputs"] == ["spec"]
    assert all(prop.get("description") for prop in resource["inputProperties"].values())


def test_gpu_deployment_outputs(schema: dict[str, Any]) -> None:
    resource = schema["resources"]["eks-gpu:index:GpuDeployment"]

    assert {name: _shape(prop) for name, prop in resource["properties"].items()} == {
        "name": {"type": "string"},
        "namespace": {"type": "string"},
    }
    assert resource["required"] == ["name", "namespace"]


def test_the_inputs_are_exactly_the_components_arguments(schema: dict[str, Any]) -> None:
    # A setting the Python component gains must reach other languages too, and the
    # package must not offer one the component would not take.
    components = sys.modules["eks_gpu_components"]
    served = list(components.GpuDeploymentArgs.__annotations__)
    taken = [field.name for field in dataclasses.fields(GpuDeploymentArgs)]
    assert served == taken, (
        "infra.workloads.GpuDeploymentArgs changed: make GpuDeploymentArgs in "
        "provider/eks_gpu_components.py list the same fields, then update test_gpu_deployment_inputs"
    )
