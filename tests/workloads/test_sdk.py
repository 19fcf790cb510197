"""The SDK internals we read exist in the installed pulumi; config is read as the engine passes it."""

from __future__ import annotations

import json

import pulumi.runtime
import pytest

from infra.workloads import sdk


def test_every_private_sdk_name_we_use_exists() -> None:
    assert sdk.missing() == []


def test_the_config_map_and_its_secret_keys_are_read_as_the_engine_passes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"p:a": "1", "p:b": "2"}))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["p:b"]))
    assert sdk.all_config() == {"p:a": "1", "p:b": "2"}
    assert sdk.secret_config_keys() == {"p:b"}


def test_no_engine_no_config(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_SECRET_KEYS", raising=False)
    assert sdk.all_config() == {}
    assert sdk.secret_config_keys() == frozenset()


def test_an_automation_api_inline_program_sees_the_config_it_was_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inline programs get config through ``set_all_config`` alone, never through the environment."""
    monkeypatch.delenv("PULUMI_CONFIG", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_SECRET_KEYS", raising=False)
    pulumi.runtime.set_all_config({"p:a": "1", "p:token": "s3cret"}, ["p:token"])
    try:
        assert sdk.all_config() == {"p:a": "1", "p:token": "s3cret"}
        assert sdk.secret_config_keys() == {"p:token"}
    finally:
        pulumi.runtime.set_all_config({}, [])
