"""Which Cluster Autoscaler releases (and chart releases) the Go module proxy serves, newer than our pin.

The proxy serves ``k8s.io/autoscaler/cluster-autoscaler`` only under full pseudo-versions
(``v0.0.0-<commit time UTC>-<12 hex>``): its release tags (``cluster-autoscaler-1.35.2``) are not
module tags, and asking by tag or bare commit is refused. So the pseudo-version of each tag is made
from a clone of kubernetes/autoscaler and asked for, one request each.

    python -m localcluster.probe_autoscaler --repo <clone of kubernetes/autoscaler>

``probe()`` is the same as a function (for a general version probe to call).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from localcluster.gomod import pinned_version

MODULE = "k8s.io/autoscaler/cluster-autoscaler"
PINS = "autoscaler"
# Release tags of the binary and of the chart; the chart lives in the module from chart 9.52.0 on.
TAG = re.compile(r"^cluster-autoscaler-(?:chart-)?(\d+)\.(\d+)\.(\d+)$")
PROBE_TIMEOUT = 60


@dataclass(frozen=True)
class Probe:
    tag: str
    pseudo_version: str
    served: bool
    answer: str
    """The proxy's answer in a few words: "served" or its refusal (e.g. "403 Forbidden")."""


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "TZ": "UTC"}  # --date=format-local prints the committer time in UTC
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout


def pseudo_version(repo: Path, tag: str) -> str:
    """``v0.0.0-<committer time in UTC>-<first 12 hex of the commit>`` of ``tag``'s commit."""
    commit, stamp = _git(
        repo, "log", "-1", "--date=format-local:%Y%m%d%H%M%S", "--format=%H %cd", tag
    ).split()
    return f"v0.0.0-{stamp}-{commit[:12]}"


def _newer_tags(repo: Path, pinned: str) -> list[str]:
    """Release and chart tags whose commit is newer than the pinned pseudo-version's time."""
    pinned_time = pinned.split("-")[1]
    tags = [t for t in _git(repo, "tag", "--list", "cluster-autoscaler-*").split() if TAG.match(t)]
    newer = [t for t in tags if pseudo_version(repo, t).split("-")[1] > pinned_time]
    return sorted(newer, key=lambda t: ("chart" in t, tuple(int(x) for x in TAG.match(t).groups())))


def ask(version: str) -> tuple[bool, str]:
    """Ask the proxy (through ``go``, so GOPROXY and GOFLAGS apply) whether it serves ``version``."""
    result = subprocess.run(
        ["go", "list", "-m", "-json", f"{MODULE}@{version}"],
        capture_output=True,
        text=True,
        timeout=PROBE_TIMEOUT,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
        cwd=Path(__file__).resolve().parent / PINS,
    )
    if result.returncode == 0:
        return True, "served"
    found = re.search(r"\d{3} [A-Z][A-Za-z ]+|unknown revision|invalid version[^\n]*", result.stderr)
    return False, found.group(0).strip() if found else result.stderr.strip().splitlines()[-1]


def probe(repo: Path) -> list[Probe]:
    """Every release and chart tag newer than the pin, with the proxy's answer."""
    pinned = pinned_version(PINS, MODULE)
    results = []
    for tag in _newer_tags(repo, pinned):
        version = pseudo_version(repo, tag)
        served, answer = ask(version)
        results.append(Probe(tag, version, served, answer))
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, required=True, help="a git clone of kubernetes/autoscaler")
    args = parser.parse_args(argv)
    print(f"pinned: {MODULE} {pinned_version(PINS, MODULE)}")
    results = probe(args.repo)
    for r in results:
        print(f"{r.tag:40} {r.pseudo_version:40} {r.answer}")
    served = [r for r in results if r.served]
    print(f"{len(served)} of {len(results)} newer tags served" + (f": {served[-1].tag}" if served else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
