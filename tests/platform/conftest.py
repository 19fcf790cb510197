"""Platform test helpers: the dev stack with edits, EKS as the program reads it (live sizes), and the
node Cluster Autoscaler imagines for a pool at zero."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from infra.platform.instance_types import ARM_NVIDIA
from infra.platform.node_pools import TEMPLATE
from infra.tooling import offline
from infra.tooling.offline import Run, run_project
from infra.workloads.placement import GPU_RESOURCE
from infra.workloads.quantity import whole_count
from infra.workloads.scheduling import Node

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "eks-gpu-platform-dev"
SUFFIX = "2026120210153012340000000a"  # terraform-plugin-sdk's PrefixedUniqueId after gpu-<pool>-


def dev_variant(tmp_path: Path, edits: Mapping[str, str], stack: str = "dev") -> Run:
    """The dev stack with text edits (old -> new), run as the program would run on `pulumi up`."""
    (tmp_path / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (tmp_path / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    for old, new in edits.items():
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / f"Pulumi.{stack}.yaml").write_text(text)
    return run_project(tmp_path, stack)


@pytest.fixture
def live(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """EKS as the program reads it: node group name -> desired size (the autoscaler's), or (size, EKS
    status) for a group not ACTIVE, in the dev (or prod) stack's cluster. Empty: no cluster yet."""
    groups: dict[str, Any] = {}
    answer = offline._call

    def call(token: str, args: Mapping[str, Any]) -> dict[str, Any]:
        if token == "aws:eks/getClusters:getClusters":
            return {"names": [CLUSTER, CLUSTER.replace("-dev", "-prod")] if groups else []}
        if token == "aws:eks/getNodeGroups:getNodeGroups":
            return {"names": sorted(groups)}
        if token == "aws:eks/getNodeGroup:getNodeGroup":
            given = groups[args["nodeGroupName"]]
            size, status = given if isinstance(given, tuple) else (given, "ACTIVE")
            return {"scalingConfigs": [{"desiredSize": size, "minSize": 0, "maxSize": 450}], "status": status}
        return answer(token, args)

    monkeypatch.setattr(offline, "_call", call)
    yield groups


def node_template(name: str, tags: Mapping[str, str], instance_type: str) -> Node:
    """The node the autoscaler imagines for a pool at zero, from its tags, in its order.

    ``buildNodeFromTemplate``: the instance table's GPU count first, then a
    ``node-template/resources`` tag overwrites it; labels and taints from the
    ``node-template`` tags.
    """
    labels = {
        k.removeprefix(f"{TEMPLATE}/label/"): v for k, v in tags.items() if k.startswith(f"{TEMPLATE}/label/")
    }
    taints = []
    for key, value in tags.items():
        if key.startswith(f"{TEMPLATE}/taint/"):
            taint_value, _, effect = value.partition(":")  # split at the first ':' as the autoscaler does
            taints.append(
                {"key": key.removeprefix(f"{TEMPLATE}/taint/"), "value": taint_value, "effect": effect}
            )
    gpus = ARM_NVIDIA[instance_type].gpus
    gpus = whole_count(tags.get(f"{TEMPLATE}/resources/{GPU_RESOURCE}", gpus))
    node = Node.from_node_group(name, labels=labels, instance_type=instance_type, arch="arm64", gpus=gpus)
    return Node(name=node.name, labels=node.labels, taints=tuple(taints), allocatable=node.allocatable)
