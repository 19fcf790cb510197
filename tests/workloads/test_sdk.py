"""The SDK internals we read exist in the installed pulumi; config is read as the engine passes it."""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pulumi.runtime
import pytest

from infra.workloads import sdk

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]


def test_every_private_sdk_name_we_use_exists() -> None:
    assert sdk.missing() == []


@pytest.fixture
def no_program_config() -> Iterator[None]:
    """The SDK's in-process config map emptied: an offline run earlier in this worker leaves its stack's there."""
    import pulumi.runtime.config as runtime_config  # the map sdk.all_config reads (decision 0030)

    token = runtime_config.CONFIG.set({})
    yield
    runtime_config.CONFIG.reset(token)


def test_the_config_map_and_its_secret_keys_are_read_as_the_engine_passes_them(
    monkeypatch: pytest.MonkeyPatch, no_program_config: None
) -> None:
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"p:a": "1", "p:b": "2"}))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(["p:b"]))
    assert sdk.all_config() == {"p:a": "1", "p:b": "2"}
    assert sdk.secret_config_keys() == {"p:b"}


def test_no_engine_no_config(monkeypatch: pytest.MonkeyPatch, no_program_config: None) -> None:
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


# A pulumi release that dropped the naming tables, as a consumer stack would meet it.
WITHOUT_NAMING_TABLES = """
import pulumi._types
del pulumi._types.input_type_py_to_pulumi_names
import infra  # must import: the internals are looked up when used
from infra.workloads.sdk import SdkError
try:
    infra.place_pod_spec({"containers": [{"name": "m", "image": "i"}]}, gpus=1)
except SdkError as error:
    print(error)
"""


def test_an_sdk_without_an_internal_still_imports_and_says_what_is_missing_when_used() -> None:
    result = subprocess.run(
        [sys.executable, "-c", WITHOUT_NAMING_TABLES], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert result.returncode == 0, result.stderr
    version = importlib.metadata.version("pulumi")
    assert result.stdout.strip() == (
        f"eks-gpu-infra reads pulumi._types.input_type_py_to_pulumi_names, which the installed pulumi {version} "
        f"does not have (no public API does the same; checked up to pulumi {sdk.TESTED_UP_TO}). Install "
        f"'pulumi<={sdk.TESTED_UP_TO}', or an eks-gpu-infra release that supports pulumi {version}"
    )


def test_the_package_does_not_cap_pulumi_above_the_newest_release_tested() -> None:
    """A library's upper cap makes every consumer on a newer SDK fail to resolve (issue 26, item 15)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    pulumi_requirement = next(r for r in project["dependencies"] if re.match(r"pulumi\b(?!-)", r))
    assert "<" not in pulumi_requirement, pulumi_requirement
    assert importlib.metadata.version("pulumi") == sdk.TESTED_UP_TO  # the suite runs on the release it names
