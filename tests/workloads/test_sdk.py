"""The SDK internals we read exist in the installed pulumi: a new SDK that moves one fails here, by name."""

from __future__ import annotations

from infra.workloads import sdk


def test_every_private_sdk_name_we_use_exists() -> None:
    assert sdk.missing() == []


def test_the_config_map_and_its_secret_keys_are_read_as_the_engine_set_them() -> None:
    import pulumi

    pulumi.runtime.set_all_config({"p:a": "1", "p:b": "2"}, ["p:b"])
    try:
        assert sdk.all_config() == {"p:a": "1", "p:b": "2"}
        assert sdk.secret_config_keys() == {"p:b"}
    finally:
        pulumi.runtime.set_all_config({}, [])
