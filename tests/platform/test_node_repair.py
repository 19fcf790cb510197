"""EKS node auto-repair is on in every GPU pool's CreateNodegroup request, valid per botocore's EKS model."""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.tooling.offline import Run, run_project
from tests.platform.test_gpu_platform import _create_nodegroup_request, _request_errors, _variant

ROOT = Path(__file__).resolve().parents[2]
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(ROOT, "dev")


def test_every_gpu_pool_asks_eks_for_node_repair_and_the_request_is_valid(dev: Run) -> None:
    gpu_groups = [g for g in dev.of_type(NODE_GROUP) if g.inputs["amiType"].endswith("_NVIDIA")]
    assert len(gpu_groups) >= 2
    for group in gpu_groups:
        request = _create_nodegroup_request(group.inputs)
        assert request["nodeRepairConfig"] == {"enabled": True}, group.name
        assert _request_errors("eks", "CreateNodegroup", request) == []


def test_node_repair_can_be_switched_off_per_pool(tmp_path: Path) -> None:
    off = _variant(tmp_path, "norepair", "    inference:\n", "    inference:\n      nodeRepair: false\n")
    inference = off.one(NODE_GROUP, "gpu-platform-gpu-inference")
    assert inference.inputs["nodeRepairConfig"] == {"enabled": False}
    assert _request_errors("eks", "CreateNodegroup", _create_nodegroup_request(inference.inputs)) == []
    assert off.one(NODE_GROUP, "gpu-platform-gpu-training").inputs["nodeRepairConfig"] == {"enabled": True}
