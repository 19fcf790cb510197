"""The package's layout is its architecture: imports flow workloads -> platform -> tooling only."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

INFRA = Path(__file__).resolve().parents[1] / "infra"
LAYERS = ("workloads", "platform", "tooling")  # lower first


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_a_layer_imports_nothing_above_it(layer: str) -> None:
    higher = LAYERS[LAYERS.index(layer) + 1 :]
    offenders = {
        f"{path.relative_to(INFRA.parent)} imports {module}"
        for path in (INFRA / layer).rglob("*.py")
        for module in _imports(path)
        if any(module == f"infra.{h}" or module.startswith(f"infra.{h}.") for h in higher)
    }
    assert not offenders


def test_workloads_need_only_pulumi_and_pulumi_kubernetes() -> None:
    cloud = {"pulumi_aws", "pulumi_eks", "pulumi_awsx"}
    offenders = {
        f"{path.name} imports {module}"
        for path in (INFRA / "workloads").rglob("*.py")
        for module in _imports(path)
        if module.split(".")[0] in cloud
    }
    assert not offenders


def test_the_package_never_imports_the_repositorys_localcluster() -> None:
    """The preview and the policy pack run wherever the package is installed, not only in a checkout."""
    offenders = {
        f"{path.relative_to(INFRA.parent)} imports {module}"
        for path in INFRA.rglob("*.py")
        for module in _imports(path)
        if module.split(".")[0] == "localcluster"
    }
    assert not offenders
