"""The README's commands work on a fresh clone, and the tooling works wherever the package is installed.

A fresh clone has no ``.cache/localcluster``: these tests give each command an empty cache
of its own (``LOCALCLUSTER_CACHE``), linking only what a test must not rebuild, and assert
the command does its whole job.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from fnmatch import fnmatch
from pathlib import Path

from infra.tooling import pinned_chart
from localcluster.gomod import BIN
from localcluster.processes import INSTANCE_VARIABLE

ROOT = Path(__file__).resolve().parents[1]
# The placement table's row for the plugin's pod: there only when the pinned chart was rendered.
RENDERED = "workload DaemonSet/nvidia-device-plugin (helm)"


def _env(cache: Path, **extra: str) -> dict[str, str]:
    """A user's shell: none of the harness's settings (a worker's instance included)."""
    dropped = ("LOCALCLUSTER_CACHE", INSTANCE_VARIABLE, pinned_chart.HELM_ENV)
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    return {**env, "LOCALCLUSTER_CACHE": str(cache), **extra}


def test_bin_preview_builds_helm_and_the_chart_it_needs_then_renders_the_device_plugin(
    tmp_path: Path,
) -> None:
    cache = tmp_path / "cache"  # no helm, no stamps: what a fresh clone has
    done = subprocess.run(
        [str(ROOT / "bin" / "preview"), "--stack", "dev", "--out", str(tmp_path / "out")],
        env=_env(cache),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "localcluster/build: helm" in done.stderr  # a progress line, then the build
    assert (cache / "bin" / "helm").is_file()
    assert "localcluster/build: kube" not in done.stderr  # helm and the chart only
    assert RENDERED in done.stdout


def test_bin_preview_previews_when_go_cannot_build_helm(tmp_path: Path) -> None:
    """Go on PATH but no way to fetch helm's modules (offline, an empty module cache): the preview
    still runs, says helm could not be built, and shows the device plugin as not rendered."""
    cache = tmp_path / "cache"
    done = subprocess.run(
        [
            str(ROOT / "bin" / "preview"),
            "--stack",
            "dev",
            "--project",
            str(ROOT),
            "--out",
            str(tmp_path / "out"),
        ],
        env=_env(cache, GOPROXY="off", GOMODCACHE=str(tmp_path / "empty-modcache"), GOFLAGS="-modcacherw"),
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "bin/preview: could not build helm and the pinned device plugin chart" in done.stderr
    assert RENDERED not in done.stdout
    assert "no helm: looked at $EKS_GPU_HELM" in done.stdout + "".join(
        p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file()
    )


def test_bin_pulumi_works_before_anything_else_created_its_state(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    for built in ("bin", "stamps"):  # the CLI itself is built; its state folder is not there
        (cache / built).symlink_to(BIN.parent / built)
    done = subprocess.run(
        [str(ROOT / "bin" / "pulumi"), "stack", "ls", "--all"],
        cwd=tmp_path,
        env=_env(cache),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (cache / "state").is_dir()


def test_the_installed_package_previews_the_platform_from_another_directory(tmp_path: Path) -> None:
    """``pip install .[platform]`` then ``python -m infra.tooling.preview --project DIR`` elsewhere."""
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--target",
            str(site),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert (site / "infra" / "tooling" / "chart-pins" / "go.sum").is_file()  # the pins ship as package data
    code = "import runpy, sys, infra; print('from', infra.__file__); sys.argv[0] = 'preview'; runpy.run_module('infra.tooling.preview', run_name='__main__')"
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "--stack",
            "dev",
            "--project",
            str(ROOT),
            "--out",
            str(tmp_path / "out"),
        ],
        cwd=tmp_path,
        env=_env(
            tmp_path / "no-checkout", PYTHONPATH=str(site), **{pinned_chart.HELM_ENV: str(BIN / "helm")}
        ),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"from {site / 'infra' / '__init__.py'}" in done.stdout
    assert RENDERED in done.stdout


def test_the_readme_names_the_stacks_bin_preview_previews_and_those_it_skips(capsys) -> None:
    from infra.tooling import preview

    readme = (ROOT / "README.md").read_text()
    start = readme.index("`bin/preview` runs the Python programs")
    runs, skips = readme[start : readme.index("\n\n", start)].split("It skips")
    previewed = [p.relative_to(ROOT).as_posix() for p in preview._projects("dev", ())]
    skipped = re.findall(r"skipping (\S+): runtime", capsys.readouterr().err)
    assert previewed[0] == "." and "the platform" in runs
    assert set(re.findall(r"`(stacks/[^`]+)`", runs)) == set(previewed[1:])
    globs = re.findall(r"`(stacks/[^`]+)`", skips)
    assert {p for p in skipped if any(fnmatch(p, g) for g in globs)} == set(skipped)
    assert all(any(fnmatch(p, g) for p in skipped) for g in globs)
