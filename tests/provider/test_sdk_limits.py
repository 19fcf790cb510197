"""What the SDK's component provider (pulumi 3.272.0) does that shaped provider/eks_gpu_components.py.

Each test pins one behaviour of ``pulumi.provider.experimental`` the package works
around. If an SDK upgrade changes one, its test fails here, and the workaround it
justifies can go (see the module docstring of ``eks_gpu_components``).
"""

# No `from __future__ import annotations`: the probes below must carry real annotations.
import json
from typing import Any, TypedDict

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi.errors import InputPropertyError
from pulumi.provider.experimental.component import ComponentProvider

from infra.tooling.offline import run_program
from tests.provider.conftest import construct


def _provider_for(args_type: Any) -> ComponentProvider:
    class Probe(pulumi.ComponentResource):
        def __init__(self, name: str, args: args_type, opts: pulumi.ResourceOptions | None = None) -> None:  # type: ignore[valid-type]
            super().__init__("probe:index:Probe", name, None, opts)

    return ComponentProvider([Probe], "probe")


def test_string_annotations_are_not_evaluated() -> None:
    # `from __future__ import annotations` makes every annotation a string like this one,
    # and the analyzer does not resolve it even with the class right here.
    class Args(TypedDict):
        spec: pulumi.Input[dict[str, Any]]

    with pytest.raises(AttributeError, match="'str' object has no attribute '__mro__'"):
        _provider_for("Args")


def test_unions_are_refused() -> None:
    class Args(TypedDict):
        spec: pulumi.Input[k8s.apps.v1.DeploymentSpecArgs | dict[str, Any]]

    with pytest.raises(Exception, match="Union types are not supported"):
        _provider_for(Args)


def test_another_packages_type_becomes_an_empty_local_type_and_drops_every_field() -> None:
    class Args(TypedDict):
        spec: pulumi.Input[k8s.apps.v1.DeploymentSpecArgs]

    provider = _provider_for(Args)

    assert json.loads(provider.schema or "{}")["types"] == {
        "probe:index:DeploymentSpecArgs": {"type": "object"}
    }
    mapped = provider.map_inputs({"spec": {"replicas": 2.0}}, provider._component_defs["Probe"])
    assert mapped == {"spec": {}}


def test_a_typed_object_that_arrives_as_an_output_loses_its_fields() -> None:
    # Why `placement` is an open object: from a StackReference it always has a dependency.
    class Placement(TypedDict):
        key: pulumi.Input[str]
        value: pulumi.Input[str]

    class Args(TypedDict):
        placement: pulumi.Input[Placement]

    provider = _provider_for(Args)

    def program() -> None:
        construct(
            provider,
            "probe:index:Probe",
            "probe",
            {"placement": {"key": "GPU", "value": "true"}},
            {"placement": ["urn:pulumi:dev::p::pulumi:pulumi:StackReference::platform"]},
        )

    with pytest.raises(InputPropertyError, match=r"Missing required input 'placement\.key'"):
        run_program(program)


def test_integer_inputs_still_arrive_as_floats() -> None:
    class Args(TypedDict):
        gpus: int

    provider = _provider_for(Args)

    mapped = provider.map_inputs({"gpus": 1.0}, provider._component_defs["Probe"])
    assert type(mapped["gpus"]) is float  # the int() conversion is overwritten on the next line


def test_custom_timeouts_of_a_construct_request_are_dropped() -> None:
    # Construct builds CustomTimeouts from the request and never assigns them: a
    # TypeScript or YAML `customTimeouts` option on a component is lost. Hence the
    # createTimeout/updateTimeout/deleteTimeout inputs.
    from pulumi.provider.server import ProviderServicer
    from pulumi.runtime import proto

    request = proto.ConstructRequest(
        customTimeouts=proto.ConstructRequest.CustomTimeouts(create="90m", update="2h", delete="5m")
    )
    assert ProviderServicer._construct_options(request).custom_timeouts is None
