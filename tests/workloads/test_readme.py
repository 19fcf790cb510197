"""The component guide's examples (docs/components.md) run as written: the unit-test recipe, the CronJob and the StatefulSet."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from infra.tooling.manifests import is_manifest_type, manifest_of, validate_manifest
from infra.workloads.scheduling import placeable_on
from tests.conftest import KUBERNETES_VERSION, gpu_node, system_node

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "components.md").read_text()
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def _section(heading: str) -> str:
    start = GUIDE.index(f"\n{heading}\n")
    end = GUIDE.find("\n## ", start + 1)
    return GUIDE[start : end if end != -1 else len(GUIDE)]


def _example(name: str) -> str:
    blocks = [b for b in BLOCK.findall(GUIDE) if b.startswith(f"# docs example: {name}\n")]
    assert len(blocks) == 1, f"docs/components.md should have one block marked '# docs example: {name}'"
    return blocks[0]


RECIPE = BLOCK.findall(_section("## Test your stack"))[0]


def _pytest(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_stack.py").write_text(source)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_stack.py"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_the_unit_test_recipe_uses_pulumis_documented_mocks() -> None:
    assert 'return [args.name + "_id", args.inputs]' in RECIPE
    assert "pulumi.runtime.set_mocks(MyMocks())" in RECIPE and "@pulumi.runtime.test" in RECIPE


def test_the_unit_test_recipe_passes_as_written(tmp_path: Path) -> None:
    result = _pytest(tmp_path, RECIPE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_the_recipe_really_checks_something(tmp_path: Path) -> None:
    broken = RECIPE.replace(
        'assert pod["node_selector"] == {"GPU": "true"}', 'assert pod["node_selector"] == {}'
    )
    assert broken != RECIPE
    result = _pytest(tmp_path, broken)
    assert result.returncode == 1 and "1 failed" in result.stdout, result.stdout


@pytest.mark.parametrize(
    ("example", "pod_path"),
    [
        ("CronJob", ("spec", "jobTemplate", "spec", "template", "spec")),
        ("StatefulSet", ("spec", "template", "spec")),
    ],
)
def test_documented_examples_are_valid_and_land_on_gpu_nodes_only(run, example: str, pod_path: tuple) -> None:
    result = run(lambda: exec(compile(_example(example), f"docs/components.md:{example}", "exec"), {}))
    objects = [r for r in result.resources if is_manifest_type(r.type) and r.custom]
    assert [r.inputs["kind"] for r in objects] == [example]
    for r in objects:
        validate_manifest(manifest_of(r.type, r.name, r.inputs), KUBERNETES_VERSION)
    pod = objects[0].inputs
    for key in pod_path:
        pod = pod[key]
    assert placeable_on(pod, [gpu_node(), system_node()]) == ["gpu"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 1}
