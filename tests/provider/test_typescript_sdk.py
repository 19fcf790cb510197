"""The TypeScript stack's eks-gpu SDK: generated from the package's schema, and typed as it says.

``stacks/inference-ts/sdks/eks-gpu`` is committed, as ``pulumi package add`` would leave it in a
project; nobody edits it (decision 0065). Regenerated here from the schema the package's plugin
file serves (``pulumi package get-schema``, the built CLI) with ``pulumi-sdkgen-nodejs`` (pkg/v3
codegen/nodejs at the CLI's pin), it must come out byte for byte the same: a component input
added, renamed or re-described in Python reaches TypeScript users only through ``bin/gen-sdk``.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from infra.tooling.offline import PLATFORM_ROOT, run_project
from localcluster.cluster import ROOT
from localcluster.pulumi_cli import Stack
from localcluster.sdkgen import PLUGIN, TYPESCRIPT_SDK, generate_typescript_sdk

PROJECT = TYPESCRIPT_SDK.parents[1]
BUILT = {"node_modules", "bin"}
"""What ``npm ci`` adds to the SDK folder (its dependencies, its compiled JavaScript): git-ignored."""


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(path.relative_to(root)): path.read_bytes()
        for path in root.rglob("*")
        if path.is_file() and path.relative_to(root).parts[0] not in BUILT
    }


def test_the_committed_sdk_is_the_one_generated_from_the_packages_schema(tmp_path: Path) -> None:
    fresh = tmp_path / "eks-gpu"
    generate_typescript_sdk(fresh)

    committed, generated = _files(TYPESCRIPT_SDK), _files(fresh)
    assert sorted(committed) == sorted(generated), "run bin/gen-sdk"
    stale = [name for name in generated if committed[name] != generated[name]]
    assert not stale, f"{stale} differ from the generated SDK: run bin/gen-sdk"


def _variant(tmp_path: Path, stack: str, old: str, new: str, platform: str | None = None) -> Stack:
    """The TypeScript stack with ``old`` replaced by ``new`` in its program, on its installed packages
    and its local stack's config (reading the platform stack ``platform``, if given)."""
    program = (PROJECT / "index.ts").read_text()
    assert old in program
    (tmp_path / "index.ts").write_text(program.replace(old, new))
    project = (PROJECT / "Pulumi.yaml").read_text()
    (tmp_path / "Pulumi.yaml").write_text(project.replace("../../provider", str(PLUGIN.parent)))
    for name in ("package.json", "tsconfig.json"):
        shutil.copy(PROJECT / name, tmp_path / name)
    config = yaml.safe_load((PROJECT / "Pulumi.local.yaml").read_text())
    if platform:
        config["config"]["gpu-inference-ts:platformStack"] = platform
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(yaml.safe_dump(config))
    (tmp_path / "node_modules").symlink_to(PROJECT / "node_modules")
    return Stack(tmp_path, stack)


def _build(project: Path) -> subprocess.CompletedProcess[str]:
    """The project's `npm run build` (tsc into bin/, which package.json's main names)."""
    return subprocess.run(
        ["npm", "run", "--silent", "build"], cwd=project, capture_output=True, text=True, timeout=300
    )


UNSERVED_KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "clusters": [{"name": "none", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "none", "user": {"token": "none"}}],
    "contexts": [{"name": "none", "context": {"cluster": "none", "user": "none"}}],
    "current-context": "none",
}
"""A cluster nobody serves: a preview goes on without it (pulumi-kubernetes previews offline)."""


@pytest.fixture(scope="module")
def stand_in_platform() -> Iterator[str]:
    """The stand-in platform stack (localcluster/platform-stack) with the dev placement, no cluster."""
    name = "ts-types"
    directory = ROOT / "localcluster" / "platform-stack"
    config = {
        "eks-gpu-platform:placement": run_project(PLATFORM_ROOT, "dev").stack_outputs["placement"],
        "eks-gpu-platform:kubeconfig": yaml.safe_dump(UNSERVED_KUBECONFIG),
    }
    (directory / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))
    stack = Stack(directory, name)
    stack.init()
    try:
        stack.up()
        yield f"organization/eks-gpu-platform/{name}"
    finally:
        stack.destroy()
        stack.remove()
        (directory / f"Pulumi.{name}.yaml").unlink()


def test_a_string_for_gpus_is_refused_by_the_sdk_types_naming_the_field_and_nothing_is_emitted(
    tmp_path: Path,
) -> None:
    # The generated type says `gpus?: number` (schema: integer, plain); the project's build (tsc)
    # stops there and writes no JavaScript (noEmitOnError), so there is no program for `up` to run.
    _variant(tmp_path, "bad-gpus", "gpus: 1,", 'gpus: "1",')
    built = _build(tmp_path)

    assert built.returncode != 0
    assert "TS2322" in built.stdout
    assert "property 'gpus' which is declared here on type 'GpuDeploymentArgs'" in built.stdout
    assert not (tmp_path / "bin" / "index.js").exists()


def test_a_string_for_gpus_past_the_types_meets_the_components_refusal_naming_the_field(
    tmp_path: Path, stand_in_platform: str
) -> None:
    # `as any` (or a value read from config) gets past the compiler; the component itself,
    # run by the package's plugin, still refuses it before declaring anything.
    stack = _variant(tmp_path, "any-gpus", "gpus: 1,", 'gpus: "1" as any,', platform=stand_in_platform)
    assert _build(tmp_path).returncode == 0
    stack.init()
    try:
        result = stack.preview(check=False)
    finally:
        stack.remove()

    assert result.returncode != 0
    assert "TS2322" not in result.stdout
    assert "GpuDeployment('triton'): gpus must be a whole number >= 1, got '1'" in result.stdout
