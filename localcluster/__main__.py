"""``python -m localcluster start|stop|status``: the control plane plus the dev stack's nodes.

``start`` runs the platform program offline (Pulumi's mock engine) to read the
node groups it declares, starts the control plane, registers one fake node per
GPU pool and the system group's desired size, and waits until all are Ready.
"""

from __future__ import annotations

import sys

from localcluster import cluster


def add_nodes(stack: str = "dev") -> int:
    """Register the dev stack's mirrored nodes and wait until kwok reports them Ready."""
    from infra.tooling.offline import PLATFORM_ROOT, run_project
    from localcluster.kube import Kube
    from localcluster.nodes import node_manifests

    manifests = node_manifests(run_project(PLATFORM_ROOT, stack))
    names = sorted(m["metadata"]["name"] for m in manifests)
    Kube(cluster.KUBECONFIG).register_nodes(
        manifests, f"nodes {names} Ready and without the node lifecycle controller's taints"
    )
    return len(manifests)


def status() -> int:
    running = cluster.status()
    for name, ok in running.items():
        print(f"{name}: {'running' if ok else 'NOT running'}")
    if not running:
        print("local cluster not running")
    return 0 if running and all(running.values()) else 1


def main(argv: list[str]) -> int:
    if argv == ["status"]:
        return status()
    if argv == ["stop"]:
        cluster.stop()
        return 0
    if argv != ["start"]:
        print("usage: local-cluster start|stop|status", file=sys.stderr)
        return 2
    try:
        kubeconfig = cluster.start()
        print(f"registered {add_nodes()} nodes mirroring the dev stack's node groups")
    except (cluster.ClusterError, TimeoutError) as error:
        print(f"local-cluster: {error}", file=sys.stderr)
        return 1
    print(f"kubeconfig: {kubeconfig}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
