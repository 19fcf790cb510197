"""Day 2: what a node group update sends to EKS while Cluster Autoscaler owns the GPU pools' sizes.

Three actors write ``scalingConfig.desiredSize``: the stack (its initial size), the
autoscaler (SetDesiredCapacity on the ASG, which EKS reports back), and ``pulumi up``.
The engine and the provider are modelled from their source, at the versions pinned:

- pulumi/pulumi ``pkg/resource/deploy/step_generator.go`` ``processIgnoreChanges``:
  each ignored path of the new inputs is set from the *old inputs* in state;
- ``step.go`` ``RefreshStep``: a refresh replaces the old inputs with the ones the
  provider's Read returns; pulumi-terraform-bridge returns the live values
  (``pkg/tfbridge/provider.go`` Read, ``ExtractInputsFromOutputs(..., isRefresh)``);
- terraform-provider-aws ``internal/service/eks/node_group.go``: when
  ``scaling_config`` changed, ``UpdateNodegroupConfig`` carries the whole block
  (``expandNodegroupScalingConfig`` always sets desiredSize).

The request is checked against botocore's EKS model, as AWS would check it.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import botocore.session
import pytest
import yaml
from botocore.validate import ParamValidator

from infra.tooling.offline import Run, run_project

ROOT = Path(__file__).resolve().parents[2]
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(ROOT, "dev")


def _get(tree: dict, path: str) -> Any:
    for part in path.split("."):
        tree = tree[part]
    return tree


def _set(tree: dict, path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for part in parents:
        tree = tree[part]
    tree[leaf] = value


def pulumi_up(
    state_inputs: dict, live: dict, program_inputs: dict, ignore: list[str], refresh: bool
) -> dict | None:
    """The UpdateNodegroupConfig request ``pulumi up`` makes, or None when nothing changes."""
    old = copy.deepcopy(live if refresh else state_inputs)  # RefreshStep: Read's inputs replace the old ones
    new = copy.deepcopy(program_inputs)
    for path in ignore:  # processIgnoreChanges: from the old inputs
        _set(new, path, _get(old, path))
    if new["scalingConfig"] == old["scalingConfig"]:
        return None
    return {"clusterName": "c", "nodegroupName": "n", "scalingConfig": new["scalingConfig"]}


def _refresh_always() -> bool:
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    return (project.get("options") or {}).get("refresh") == "always"


def _valid(request: dict) -> dict:
    model = botocore.session.get_session().get_service_model("eks")
    shape = model.operation_model("UpdateNodegroupConfig").input_shape
    report = ParamValidator().validate(request, shape)
    assert not report.has_errors(), report.generate_report()
    return request


def _scaling(inputs: dict, **changes: int) -> dict:
    return {**inputs, "scalingConfig": {**inputs["scalingConfig"], **changes}}


def test_every_pulumi_up_refreshes_first() -> None:
    assert _refresh_always()


def test_raising_max_size_keeps_the_gpu_nodes_the_autoscaler_started(dev: Run) -> None:
    pool = dev.one(NODE_GROUP, "gpu-platform-gpu-inference")
    state = pool.inputs  # what the last `pulumi up` stored: desiredSize 0
    live = _scaling(state, desiredSize=2)  # the autoscaler scaled up for pending GPU pods
    program = _scaling(state, maxSize=4)  # the change under review
    request = pulumi_up(state, live, program, pool.ignore_changes, refresh=_refresh_always())
    assert _valid(request)["scalingConfig"] == {"minSize": 0, "maxSize": 4, "desiredSize": 2}


def test_without_the_refresh_the_same_change_would_terminate_them(dev: Run) -> None:
    pool = dev.one(NODE_GROUP, "gpu-platform-gpu-inference")
    live = _scaling(pool.inputs, desiredSize=2)
    request = pulumi_up(
        pool.inputs, live, _scaling(pool.inputs, maxSize=4), pool.ignore_changes, refresh=False
    )
    assert request["scalingConfig"]["desiredSize"] == 0  # why Pulumi.yaml refreshes


def test_without_ignore_changes_the_refresh_alone_would_not_help(dev: Run) -> None:
    pool = dev.one(NODE_GROUP, "gpu-platform-gpu-inference")
    live = _scaling(pool.inputs, desiredSize=2)
    request = pulumi_up(pool.inputs, live, pool.inputs, ignore=[], refresh=True)
    assert request["scalingConfig"]["desiredSize"] == 0  # why autoscaled groups ignore desiredSize


def test_an_unrelated_up_sends_no_scaling_request_at_all(dev: Run) -> None:
    pool = dev.one(NODE_GROUP, "gpu-platform-gpu-training")
    live = _scaling(pool.inputs, desiredSize=1)
    assert pulumi_up(pool.inputs, live, pool.inputs, pool.ignore_changes, refresh=_refresh_always()) is None


def test_the_system_group_is_pulumis_alone(dev: Run) -> None:
    """The autoscaler never discovers it (see test_autoscaler), so its live size is the stack's."""
    system = dev.one(NODE_GROUP, "gpu-platform-system")
    assert system.ignore_changes == []
    request = pulumi_up(
        system.inputs, system.inputs, _scaling(system.inputs, maxSize=4), [], _refresh_always()
    )
    assert _valid(request)["scalingConfig"] == {"minSize": 2, "maxSize": 4, "desiredSize": 2}
