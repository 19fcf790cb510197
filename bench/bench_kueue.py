"""Kueue's real controller: how long from a queued GPU Job to its admission, and to its pod bound.

    .venv/bin/python bench/bench_kueue.py [--rounds 10]

Starts the local cluster if none runs (and stops it after), installs the pinned chart's CRDs and
webhooks and starts the pinned ``kueue`` with its real webhooks and cert management
(localcluster/kueue.py, as tests/cluster/test_kueue.py does), applies the Kueue objects the platform
program declares offline for one team's quota on the ``training`` pool (localcluster/kueue_world.py), then per round submits one one-GPU Job to the team's LocalQueue and polls
(every 20 ms) until Kueue's Workload exists, until the Job is unsuspended (admitted), and until
kube-scheduler binds its pod. Each round deletes the Job and waits until its quota is free.
Nothing here is a test: these are numbers to report.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kubernetes.client.rest import ApiException  # noqa: E402

from localcluster import cluster, kueue  # noqa: E402
from localcluster import kueue_world as world  # noqa: E402
from localcluster.kube import Kube  # noqa: E402

TEAM = "vision"


def _until(check, timeout: float = 120) -> float:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError("the bench round did not finish")
        time.sleep(0.02)
    return time.monotonic()


def _workloads(kube: Kube) -> list:
    return (
        kube.resource({"apiVersion": kueue.API, "kind": "Workload"})
        .get(namespace=world.NAMESPACES[TEAM])
        .items
    )


def _left(kube: Kube) -> list:
    kinds = ("ClusterQueue", "ResourceFlavor")
    return [o for k in kinds for o in kube.resource({"apiVersion": kueue.API, "kind": k}).get().items]


def one_round(kube: Kube, placement, index: int) -> tuple[float, float, float]:
    manifest = world.job(placement, f"bench-{index}", TEAM, "training")
    name, namespace = manifest["metadata"]["name"], manifest["metadata"]["namespace"]
    jobs = kube.resource(manifest)
    start = time.monotonic()
    kube.apply(manifest)
    queued = _until(lambda: _workloads(kube))
    admitted = _until(lambda: not jobs.get(name=name, namespace=namespace).spec.suspend)
    bound = _until(lambda: any(p.spec.node_name for p in kube.pods(namespace, f"job-name={name}")))
    jobs.delete(name=name, namespace=namespace, body={"propagationPolicy": "Foreground"})
    _until(lambda: not _workloads(kube) and not kube.pods(namespace, f"job-name={name}"))
    return queued - start, admitted - start, bound - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    python = str(ROOT / ".venv" / "bin" / "python")
    running = cluster.status()
    started = not (running and all(running.values()))
    if started:
        subprocess.run(
            [python, "-m", "localcluster", "start"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL
        )
    kube = Kube(cluster.KUBECONFIG)
    settings, run = world.platform({TEAM: {"training": {"nominalQuota": 1}}})
    controller = kueue.Kueue(kube, world.chart_values(run))
    controller.install()
    controller.start(cluster.KUBECONFIG)
    objects = world.objects(run)
    for team in settings.teams.values():
        kube.namespace(team.namespace)
    try:
        for manifest in objects:
            kube.apply(manifest)
        rounds = [one_round(kube, settings.contract, i) for i in range(args.rounds)]
    finally:
        try:
            for team in settings.teams.values():
                kube.delete_namespace(team.namespace, timeout=120)
            for manifest in reversed(objects):
                with contextlib.suppress(ApiException):  # the LocalQueue went with its namespace
                    kube.resource(manifest).delete(
                        name=manifest["metadata"]["name"], namespace=manifest["metadata"].get("namespace")
                    )
            # Their finalizers are the running controller's to lift; stopped, it would leave them (and
            # the CRDs uninstall removes) terminating for ever.
            kueue.wait("the queues and flavors gone", lambda: not _left(kube), 60, controller)
        finally:
            controller.stop()
            controller.uninstall()
        if started:
            subprocess.run(
                [python, "-m", "localcluster", "stop"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL
            )
    for label, values in (
        ("Job created -> Workload", [r[0] for r in rounds]),
        ("Job created -> admitted (unsuspended)", [r[1] for r in rounds]),
        ("Job created -> pod bound", [r[2] for r in rounds]),
    ):
        print(
            f"{label}: median {statistics.median(values):.2f} s, min {min(values):.2f} s, "
            f"max {max(values):.2f} s over {len(values)} rounds (Kueue {kueue.version()})"
        )


if __name__ == "__main__":
    main()
