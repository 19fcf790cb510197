"""The engine's wire form, read back as a Python user writes values."""

from __future__ import annotations

import asyncio

import pulumi

from infra.workloads.wire import whole_numbers


def test_integral_floats_from_the_wire_are_ints_at_any_depth() -> None:
    wire = {"gpus": 1.0, "spec": {"replicas": 2.0, "ports": [80.0, {"port": 8080.0}]}, "ratio": 1.5}
    assert whole_numbers(wire) == {
        "gpus": 1,
        "spec": {"replicas": 2, "ports": [80, {"port": 8080}]},
        "ratio": 1.5,
    }
    assert type(whole_numbers(wire)["gpus"]) is int and whole_numbers(True) is True


def test_values_inside_outputs_are_read_the_same_way() -> None:
    # The thread's own loop, as pulumi.runtime.test uses it: asyncio.run would close it for later tests.
    loop = asyncio.get_event_loop()
    value = loop.run_until_complete(whole_numbers(pulumi.Output.from_input({"limit": 4.0})).future())
    assert value == {"limit": 4} and type(value["limit"]) is int
