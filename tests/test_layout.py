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


def _module_graph(root: Path) -> dict[str, set[str]]:
    """Each module under ``root`` -> the modules of the same tree it imports anywhere (in functions,
    under TYPE_CHECKING too: an import moved out of sight is still a circle)."""
    modules = {
        ".".join(path.relative_to(root.parent).with_suffix("").parts).removesuffix(".__init__"): path
        for path in root.rglob("*.py")
    }
    graph = {}
    for name, path in modules.items():
        found = set()
        for module in _imports(path):
            found.update(m for m in modules if module == m or module.startswith(f"{m}."))
        for node in ast.walk(ast.parse(path.read_text())):  # from package import module
            if isinstance(node, ast.ImportFrom) and node.module in modules:
                found.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[name] = {m for m in found if m in modules and m != name and not name.startswith(f"{m}.")}
    return graph


def _circle(graph: dict[str, set[str]]) -> list[str]:
    """One import circle of ``graph`` (depth-first search), or [] when there is none."""
    done: set[str] = set()

    def visit(module: str, path: list[str]) -> list[str]:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return []
        for imported in sorted(graph[module]):
            if found := visit(imported, [*path, module]):
                return found
        done.add(module)
        return []

    return next((found for module in sorted(graph) if (found := visit(module, []))), [])


@pytest.mark.parametrize("tree", ["infra", "localcluster"])
def test_no_module_imports_itself_round_a_circle(tree: str) -> None:
    """A circle is hidden by a late import, not removed: the shared piece moves down (issue 34)."""
    assert _circle(_module_graph(INFRA.parent / tree)) == []
