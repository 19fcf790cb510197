"""What `pulumi destroy` does to a stack with protected resources, on the real engine (issue 26, item 10).

``production: true`` protects the VPC, the KMS key and the cluster (docs/decisions/0004). The
engine refuses each protected delete (pulumi/pulumi pkg/v3 ``resource/deploy/step.go``
``DeleteStep.Apply``, before its DryRun branch) but always carries on past that refusal
(``resource/deploy/step_executor.go`` ``cancelDueToError``: ``deleteProtectedError`` sets
``continueOnError``). So `destroy --skip-preview` deletes every unprotected resource and then fails;
its preview fails first and deletes nothing. A tiny program of the same shape (a protected
"cluster", a "pool" that depends on it, an unrelated "role"), each a file made and removed by a
dynamic provider, shows what the built CLI (v3.276) really deletes. Needs the CLI only, no cluster.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from localcluster.pulumi_cli import Stack

PROGRAM = """
import pathlib

import pulumi
from pulumi.dynamic import CreateResult, Resource, ResourceProvider


class FileProvider(ResourceProvider):
    def create(self, props):
        pathlib.Path(props["path"]).write_text("exists")
        return CreateResult(id_=props["path"], outs=props)

    def delete(self, id, props):
        pathlib.Path(id).unlink()


class File(Resource):
    def __init__(self, name, opts=None):
        super().__init__(FileProvider(), name, {"path": f"{pulumi.Config().require('folder')}/{name}"}, opts)


production = pulumi.Config().require_bool("production")
cluster = File("cluster", pulumi.ResourceOptions(protect=production))
File("pool", pulumi.ResourceOptions(depends_on=[cluster]))
File("role")
"""


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[Stack]:
    """The stack deployed with ``production: true``: the three files exist."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: destroy-protected\nruntime: python\n")
    (project / "__main__.py").write_text(PROGRAM)
    (tmp_path / "made").mkdir()
    # One stack per test: xdist may run two of them at once on the one file backend.
    stack = Stack(project, f"production-{tmp_path.name.replace('_', '-')[-40:]}")
    stack.remove()  # whatever a killed run left under that name
    stack.init()
    stack.run("config", "set", "folder", str(tmp_path / "made"))
    stack.run("config", "set", "production", "true")
    stack.up()
    assert _existing(stack) == ["cluster", "pool", "role"]
    yield stack
    stack.run("state", "unprotect", "--all", "--yes", check=False)
    stack.destroy()
    stack.remove()


def _existing(stack: Stack) -> list[str]:
    return sorted(p.name for p in (stack.project_dir.parent / "made").iterdir())


def test_destroy_skipping_its_preview_deletes_every_unprotected_resource_then_fails(stack: Stack) -> None:
    result = stack.run("destroy", "--yes", "--skip-preview", check=False)
    assert result.returncode != 0
    assert "cannot be deleted\nbecause it is protected" in result.stdout.replace("\n    ", "\n")
    assert _existing(stack) == ["cluster"]  # the pool and the unrelated role are gone


def test_destroy_with_its_preview_fails_before_deleting_anything(stack: Stack) -> None:
    result = stack.run("destroy", "--yes", check=False)
    assert result.returncode != 0 and "preview failed" in result.stdout
    assert _existing(stack) == ["cluster", "pool", "role"]


def test_production_false_and_an_up_unprotect_so_destroy_deletes_everything(stack: Stack) -> None:
    """The way docs/operations.md gives to destroy a production stack on purpose."""
    stack.run("config", "set", "production", "false")
    stack.up()
    assert _existing(stack) == ["cluster", "pool", "role"]  # the up changed nothing but protection
    stack.destroy()
    assert _existing(stack) == []
