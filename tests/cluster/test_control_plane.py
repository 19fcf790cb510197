"""The local control plane is real, runs the dev stack's Kubernetes version, listens on loopback only, and
holds the dev stack's nodes."""

from __future__ import annotations

import subprocess

from kubernetes import client

from infra.platform.config import DEFAULT_KUBERNETES_VERSION
from infra.tooling.offline import PLATFORM_ROOT, load_project, run_project
from localcluster import cluster as local
from localcluster.kube import Kube, node_ready
from localcluster.nodes import node_manifests


def _listening(pids: set[int]) -> list[str]:
    """Local addresses that any of ``pids`` (or their children) listens on."""
    out = subprocess.run(["ss", "-Hltnp"], check=True, capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        if any(f"pid={pid}," in line for pid in pids):
            found.append(line.split()[3])
    return found


def test_the_api_server_runs_the_kubernetes_version_the_dev_stack_deploys(kube: Kube) -> None:
    """The local cluster cannot drift from the EKS version the platform asks for."""
    config = load_project(PLATFORM_ROOT, "dev")[1]
    declared = config.get("eks-gpu-platform:kubernetesVersion", DEFAULT_KUBERNETES_VERSION)
    served = client.VersionApi(kube.api).get_code()
    assert f"{served.major}.{served.minor.rstrip('+')}" == declared, served.git_version


def test_every_component_listens_on_loopback_only(kube: Kube) -> None:
    state = local._read_state()
    addresses = _listening(set(state["pids"].values()))
    assert addresses, "no listening socket found for the control plane"
    assert all(a.startswith("127.0.0.1:") for a in addresses), addresses


def test_the_nodes_are_the_dev_stacks_node_groups_and_ready(kube: Kube) -> None:
    declared = {m["metadata"]["name"]: m for m in node_manifests(run_project(PLATFORM_ROOT, "dev"))}
    live = {n.metadata.name: n for n in kube.nodes("type=kwok") if n.metadata.name in declared}
    assert set(live) == set(declared)
    for name, node in live.items():
        assert node_ready(node), name
        assert {k: node.metadata.labels[k] for k in declared[name]["metadata"]["labels"]} == declared[name][
            "metadata"
        ]["labels"]
        taints = [{"key": t.key, "value": t.value or "", "effect": t.effect} for t in node.spec.taints or []]
        assert taints == declared[name]["spec"]["taints"], name
        assert node.status.allocatable.get("nvidia.com/gpu") == declared[name]["status"]["allocatable"].get(
            "nvidia.com/gpu"
        )
