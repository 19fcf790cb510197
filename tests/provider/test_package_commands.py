"""The CLI's package commands on the eks-gpu package, with the CLI built here (v3.276.0).

``pulumi package get-schema provider/pulumi-resource-eks-gpu`` works: the CLI executes the
plugin file (``cmd/pulumi/packageinstallation`` runs an executable path as it is) and asks
it for its schema (GetSchema). Given the folder instead, the command first has the Python
language host install it, which here (v3.68.0) makes the folder itself a virtualenv:
bin/pulumi refuses that (localcluster/install_guard.py; tests/localcluster/test_install_guard.py).
What does not work and why: docs/components.md, "The package and the CLI's commands".
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from localcluster.pulumi_cli import BIN, environment
from tests.provider.conftest import PROVIDER_DIR

PLUGIN = PROVIDER_DIR / "pulumi-resource-eks-gpu"


def _pulumi(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "pulumi"), *args, "--non-interactive"],
        cwd=cwd,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def _as_the_cli_carries_it(value: Any) -> Any:
    """The schema as the CLI's ``schema.PackageSpec`` round trip gives it back: no empty sections,
    and no description on an ``additionalProperties`` type (pkg/v3 ``codegen/schema`` TypeSpec has none)."""
    if isinstance(value, dict):
        kept = {k: _as_the_cli_carries_it(v) for k, v in value.items() if v not in ({}, [], None)}
        if "additionalProperties" in kept:
            kept["additionalProperties"].pop("description", None)
        return kept
    if isinstance(value, list):
        return [_as_the_cli_carries_it(v) for v in value]
    return value


def test_get_schema_runs_the_plugin_file_and_gets_the_analyzers_schema(
    schema: dict[str, Any], tmp_path: Path
) -> None:
    result = _pulumi("package", "get-schema", str(PLUGIN), cwd=tmp_path)

    assert result.returncode == 0, result.stderr
    served = json.loads(result.stdout)
    assert _as_the_cli_carries_it(served) == _as_the_cli_carries_it(schema)
    assert set(served["resources"]) == {"eks-gpu:index:GpuDeployment", "eks-gpu:index:GpuJob"}
    assert not (PROVIDER_DIR / "pyvenv.cfg").exists()
    assert not (PROVIDER_DIR / "bin" / "python").exists()
