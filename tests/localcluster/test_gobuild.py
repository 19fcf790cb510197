"""localcluster/build: what it builds, in what order, and what an interrupted or failed build leaves.

The faults are real: a full disk is a small tmpfs in a mount namespace of the test's own
(``unshare``), a failed download is Go with the module proxy off. Downloads come from the module
cache through Go's file proxy, so no test reaches the network.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from localcluster import gobuild
from localcluster.gobuild import BuildError, cold_seconds, merged, order, resolve

BUILD = gobuild.HERE / "build"
GOMODCACHE = Path(subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True).stdout.strip())


def _build(cache: Path, *names: str, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "LOCALCLUSTER_CACHE": str(cache), **env}
    return subprocess.run([str(BUILD), *names], env=environment, capture_output=True, text=True, timeout=120)


def test_every_target_has_its_cold_figure_in_the_benchmarks_and_the_longest_starts_first() -> None:
    figures = cold_seconds()
    assert set(figures) == set(gobuild.TARGETS)
    ordered = [t.name for t in order(resolve([]), figures)]
    assert [figures[n] for n in ordered] == sorted(figures.values(), reverse=True)


def test_names_callers_use_expand_each_target_once_and_an_unknown_one_is_refused() -> None:
    assert [t.name for t in resolve(["tools", "helm"])] == ["kwok", "helm"]
    assert [t.name for t in resolve(["pulumi"])] == [
        "pulumi-cli",
        "pulumi-hosts",
        "pulumi-go",
        "pulumi-yaml",
        "pulumi-kubernetes",
    ]
    with pytest.raises(BuildError, match=r"no module nope \(have: autoscaler charts go-consumer helm"):
        resolve(["nope"])


def test_kwok_and_helm_build_in_one_go_invocation_the_pulumi_modules_in_one_each() -> None:
    jobs = [[t.name for t in job] for job in merged(resolve(["tools", "pulumi"]))]
    assert jobs == [
        ["kwok", "helm"],
        ["pulumi-cli"],
        ["pulumi-hosts"],
        ["pulumi-go"],
        ["pulumi-yaml"],
        ["pulumi-kubernetes"],
    ]


def test_a_pin_change_makes_a_target_stale(tmp_path: Path) -> None:
    folder = tmp_path / "mod"
    shutil.copytree(gobuild.TARGETS["helm"].folder, folder)
    target = gobuild.Target("helm", folder, ("helm",), packages=("helm.sh/helm/v4/cmd/helm",))
    before = gobuild.stamp(target)
    (folder / "go.sum").write_text((folder / "go.sum").read_text() + "\n")
    assert gobuild.stamp(target) != before


def test_a_failed_download_keeps_the_log_names_it_and_leaves_nothing_taken_as_built(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    done = _build(cache, "charts", GOPROXY="off", GOMODCACHE=str(tmp_path / "empty"), GOFLAGS="-modcacherw")
    assert done.returncode == 1
    log = cache / "logs" / "charts.log"
    assert f"charts FAILED after 0 s (exit 1): its log is {log}" in done.stderr
    assert "module lookup disabled by GOPROXY=off" in log.read_text()
    assert not (cache / "stamps" / "charts").exists()
    assert not list((cache / "bin").glob(".partial-*"))


def test_a_full_disk_is_reported_as_such_naming_the_folder(tmp_path: Path) -> None:
    cache, full = tmp_path / "cache", tmp_path / "modcache"
    full.mkdir()
    proxy = (GOMODCACHE / "cache" / "download").as_uri()
    script = f'mount -t tmpfs -o size=64k tmpfs "{full}" && exec "{BUILD}" charts'
    done = subprocess.run(
        ["unshare", "--mount", "--map-root-user", "bash", "-c", script],
        env={
            **os.environ,
            "LOCALCLUSTER_CACHE": str(cache),
            "GOMODCACHE": str(full),
            "GOPROXY": proxy,
            "GOFLAGS": "-modcacherw",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert f"the disk is full: no space left to write in {full} (" in done.stderr
    assert f"its log is {cache / 'logs' / 'charts.log'}" in done.stderr
    assert not (cache / "stamps" / "charts").exists()


def test_a_build_says_which_target_its_cold_figure_and_where_its_log_is(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    done = _build(cache, "charts", GOPROXY=(GOMODCACHE / "cache" / "download").as_uri())
    assert done.returncode == 0, done.stderr
    figure = gobuild.minutes(cold_seconds()["charts"])
    assert "charts started" in done.stderr
    assert (
        f"(cold on 2 cores {figure} (docs/benchmarks.md)); log {cache / 'logs' / 'charts.log'}" in done.stderr
    )
    assert "charts done in" in done.stderr
    again = _build(cache, "charts")
    assert again.returncode == 0 and again.stderr == ""  # fresh: nothing to say, nothing built


def test_an_interrupted_build_leaves_no_stamp_and_no_binary_and_ends_its_compilers(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    build = subprocess.Popen(
        [str(BUILD), "helm"],
        env={**os.environ, "LOCALCLUSTER_CACHE": str(cache)},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert build.stderr is not None
    for line in build.stderr:
        if "helm started" in line:
            break
    time.sleep(1)  # Go is loading, compiling or linking by now
    build.send_signal(signal.SIGINT)  # what Ctrl-C sends
    try:
        said = build.communicate(timeout=60)[1]  # a build that hangs on Ctrl-C fails here
    except subprocess.TimeoutExpired:
        build.kill()
        raise
    assert build.returncode == 130, said
    assert (
        f"interrupted while building helm: no stamp written, no partial binary left in {cache / 'bin'}"
        in said
    )
    assert not (cache / "stamps" / "helm").exists()
    assert sorted(p.name for p in (cache / "bin").iterdir()) == [".build.lock"]
    left = subprocess.run(["pgrep", "-f", str(cache)], capture_output=True, text=True).stdout
    assert left == "", left  # no go build, compile or link of it still running
