"""Day 2: what a node group update sends to EKS while Cluster Autoscaler owns the GPU pools' sizes.

Three actors write ``scalingConfig.desiredSize``: the stack (its initial size), the
autoscaler (SetDesiredCapacity on the ASG, which EKS reports back), and ``pulumi up``.
The engine and the provider are modelled from their source, at the versions pinned:

- pulumi/pulumi ``pkg/resource/deploy/step.go`` ``RefreshStep``: a refresh replaces the old inputs with the ones the
  provider's Read returns; pulumi-terraform-bridge returns the live values
  (``pkg/tfbridge/provider.go`` Read, ``ExtractInputsFromOutputs(..., isRefresh)``);
- terraform-provider-aws ``internal/service/eks/node_group.go``: when
  ``scaling_config`` changed, ``UpdateNodegroupConfig`` carries the whole block
  (``expandNodegroupScalingConfig`` always sets desiredSize).

The program reads the live size itself (``eks:ListClusters``, ``ListNodegroups``,
``DescribeNodegroup`` data sources; ``infra/platform/pool_sizes.py``): here the mock
engine answers those reads with the size the autoscaler set. A request is checked
against botocore's EKS model and against the rule EKS applies on top of it:
``minSize <= desiredSize <= maxSize``.
"""

from __future__ import annotations

import copy
from pathlib import Path

import botocore.session
import pulumi
import pytest
import yaml
from botocore.validate import ParamValidator

from infra.platform.config import ConfigError
from infra.platform.pool_sizes import RUNS_NODES
from infra.tooling.offline import Run, run_project
from tests.platform.conftest import CLUSTER, ROOT, SUFFIX, dev_variant

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
INFERENCE = f"gpu-inference-{SUFFIX}"
TRAINING = f"gpu-training-{SUFFIX}"
OTHER_SUFFIX = "2026120309000000000000000b"  # a second group of the pool (a replacement)


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(ROOT, "dev")


INFERENCE_MAX = "      minSize: 0\n      maxSize: 2  # scale from zero"
AUTOSCALER_OFF = {
    "    enabled: true\n    chartVersion: 9.59.0": "    enabled: false\n    chartVersion: 9.59.0"
}


def pulumi_up(state_inputs: dict, live: dict, program_inputs: dict, refresh: bool) -> dict | None:
    """The UpdateNodegroupConfig request ``pulumi up`` makes, or None when nothing changes."""
    old = copy.deepcopy(live if refresh else state_inputs)  # RefreshStep: Read's inputs replace the old ones
    new = copy.deepcopy(program_inputs)
    if new["scalingConfig"] == old["scalingConfig"]:
        return None
    return {"clusterName": CLUSTER, "nodegroupName": "n", "scalingConfig": new["scalingConfig"]}


def _refresh_always() -> bool:
    project = yaml.safe_load((ROOT / "Pulumi.yaml").read_text())
    return (project.get("options") or {}).get("refresh") == "always"


def _accepted(request: dict | None) -> dict:
    """What EKS accepts: botocore's model, then minSize <= desiredSize <= maxSize."""
    assert request is not None
    model = botocore.session.get_session().get_service_model("eks")
    shape = model.operation_model("UpdateNodegroupConfig").input_shape
    report = ParamValidator().validate(request, shape)
    assert not report.has_errors(), report.generate_report()
    scaling = request["scalingConfig"]
    assert scaling["minSize"] <= scaling["desiredSize"] <= scaling["maxSize"], f"EKS refuses {scaling}"
    return scaling


def _scaling(inputs: dict, **changes: int) -> dict:
    return {**inputs, "scalingConfig": {**inputs["scalingConfig"], **changes}}


def _up(state: Run, after: Run, pool: str, live_size: int) -> dict | None:
    """The request for ``pool`` when the last up stored ``state``, the autoscaler set ``live_size``
    and the program now declares ``after``."""
    old = state.one(NODE_GROUP, f"gpu-platform-gpu-{pool}")
    new = after.one(NODE_GROUP, f"gpu-platform-gpu-{pool}")
    assert new.ignore_changes == []  # the model has no ignoreChanges: the program reads the live size
    live_inputs = _scaling(old.inputs, desiredSize=live_size)
    return pulumi_up(old.inputs, live_inputs, new.inputs, _refresh_always())


def test_every_pulumi_up_refreshes_first() -> None:
    assert _refresh_always()


@pytest.mark.parametrize(
    ("live_size", "min_size", "max_size", "desired_sent"),
    [
        # Issue 19: the live desired size 0 went out with minSize 1, which EKS refuses.
        pytest.param(0, 1, 2, 1, id="raising minSize of an idle pool sends a size EKS accepts"),
        pytest.param(2, 1, 2, 2, id="raising minSize keeps a larger live size"),
        pytest.param(2, 0, 4, 2, id="raising maxSize keeps the GPU nodes the autoscaler started"),
        pytest.param(1, 0, 1, 1, id="lowering maxSize to the nodes running goes through"),
    ],
)
def test_a_resize_sends_the_live_size_within_the_new_bounds(
    dev: Run,
    live: dict[str, int],
    tmp_path: Path,
    live_size: int,
    min_size: int,
    max_size: int,
    desired_sent: int,
) -> None:
    live.update({INFERENCE: live_size, TRAINING: 0})
    pool = f"      minSize: {min_size}\n      maxSize: {max_size}  # scale from zero"
    after = dev_variant(tmp_path, {INFERENCE_MAX: pool})
    assert _accepted(_up(dev, after, "inference", live_size=live_size)) == {
        "minSize": min_size,
        "maxSize": max_size,
        "desiredSize": desired_sent,
    }


def test_lowering_max_size_below_the_nodes_running_is_refused_before_anything_is_declared(
    live: dict[str, int], tmp_path: Path
) -> None:
    live.update({INFERENCE: 2, TRAINING: 0})
    with pytest.raises(
        ConfigError, match=r"gpuPools\.inference\.maxSize 1 is below the 2 nodes .* allowed: 2 or more"
    ):
        dev_variant(tmp_path, {INFERENCE_MAX: "      minSize: 0\n      maxSize: 1  # scale from zero"})


def test_switching_the_autoscaler_off_keeps_the_running_nodes(
    dev: Run, live: dict[str, int], tmp_path: Path
) -> None:
    """Issue 19: desiredSize fell back to the stack file's (minSize 0), terminating both nodes."""
    live.update({INFERENCE: 2, TRAINING: 1})
    after = dev_variant(tmp_path, AUTOSCALER_OFF)
    assert after.one(NODE_GROUP, "gpu-platform-gpu-inference").inputs["scalingConfig"]["desiredSize"] == 2
    assert _up(dev, after, "inference", live_size=2) is None  # nothing to send: the size stays
    assert _up(dev, after, "training", live_size=1) is None


def test_with_the_autoscaler_off_a_larger_desired_size_is_applied_and_a_smaller_one_kept_with_a_warning(
    dev: Run, live: dict[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *_, **__: warnings.append(message))
    live.update({INFERENCE: 1, TRAINING: 2})
    after = dev_variant(
        tmp_path,
        {
            **AUTOSCALER_OFF,
            INFERENCE_MAX: "      minSize: 0\n      desiredSize: 2\n      maxSize: 2  # scale from zero",
            "      minSize: 0\n      maxSize: 2\n      diskSizeGiB: 200": (
                "      minSize: 0\n      desiredSize: 1\n      maxSize: 2\n      diskSizeGiB: 200"
            ),
        },
    )
    assert _accepted(_up(dev, after, "inference", live_size=1))["desiredSize"] == 2
    assert _up(dev, after, "training", live_size=2) is None
    assert [w for w in warnings if "gpuPools.training.desiredSize 1 is below the 2 nodes" in w]


def test_an_unrelated_up_sends_no_scaling_request_at_all(
    dev: Run, live: dict[str, int], tmp_path: Path
) -> None:
    live.update({INFERENCE: 2, TRAINING: 1})
    after = dev_variant(tmp_path, {"diskSizeGiB: 100": "diskSizeGiB: 120"})
    assert _up(dev, after, "inference", live_size=2) is None
    assert _up(dev, after, "training", live_size=1) is None


def test_without_the_refresh_the_request_still_carries_the_live_size(
    dev: Run, live: dict[str, int], tmp_path: Path
) -> None:
    """The refresh only keeps unrelated ups quiet; the size sent comes from the live read."""
    live.update({INFERENCE: 2, TRAINING: 0})
    after = dev_variant(tmp_path, {INFERENCE_MAX: "      minSize: 0\n      maxSize: 4  # scale from zero"})
    old = dev.one(NODE_GROUP, "gpu-platform-gpu-inference")
    new = after.one(NODE_GROUP, "gpu-platform-gpu-inference")
    request = pulumi_up(old.inputs, _scaling(old.inputs, desiredSize=2), new.inputs, refresh=False)
    assert _accepted(request)["desiredSize"] == 2


def test_a_replaced_pool_starts_at_its_predecessors_size(live: dict[str, int], tmp_path: Path) -> None:
    """New instance types replace the node group (same prefix, created first): it starts as large."""
    live.update({INFERENCE: 2, TRAINING: 1})
    after = dev_variant(tmp_path, {"instanceTypes: [g5g.16xlarge]": "instanceTypes: [g5g.metal]"})
    assert after.one(NODE_GROUP, "gpu-platform-gpu-training").inputs["scalingConfig"]["desiredSize"] == 1


def test_a_new_or_renamed_pool_starts_at_its_initial_size(live: dict[str, int], tmp_path: Path) -> None:
    live.update({INFERENCE: 2, TRAINING: 1})
    after = dev_variant(
        tmp_path, {"    training:\n": "    train:\n", "        training: {": "        train: {"}
    )
    assert after.one(NODE_GROUP, "gpu-platform-gpu-train").inputs["scalingConfig"]["desiredSize"] == 0


def test_a_pool_never_reads_the_group_of_a_pool_whose_name_extends_its_own(
    live: dict[str, int], tmp_path: Path
) -> None:
    live.update({f"gpu-inference-x-{SUFFIX}": 2, TRAINING: 0})
    after = dev_variant(tmp_path, {})
    assert after.one(NODE_GROUP, "gpu-platform-gpu-inference").inputs["scalingConfig"]["desiredSize"] == 0


def test_a_first_deploy_reads_no_cluster_and_sends_initial_sizes(dev: Run) -> None:
    assert dev.one(NODE_GROUP, "gpu-platform-gpu-inference").inputs["scalingConfig"] == {
        "minSize": 0,
        "desiredSize": 0,
        "maxSize": 2,
    }


def test_the_system_group_is_pulumis_alone(dev: Run) -> None:
    """The autoscaler never discovers it (see test_autoscaler), so its live size is the stack's."""
    system = dev.one(NODE_GROUP, "gpu-platform-system")
    assert system.ignore_changes == []
    request = pulumi_up(system.inputs, system.inputs, _scaling(system.inputs, maxSize=4), _refresh_always())
    assert _accepted(request) == {"minSize": 2, "maxSize": 4, "desiredSize": 2}


# Issue 26, item 7: which groups' sizes a pool keeps, for every status EKS reports (botocore's model).
KEEPS_ITS_SIZE = {
    "ACTIVE": True,
    "UPDATING": True,
    "DEGRADED": True,
    "CREATING": True,
    "DELETING": False,
    "CREATE_FAILED": False,
    "DELETE_FAILED": False,
}


def _eks_statuses() -> list[str]:
    model = botocore.session.get_session().get_service_model("eks")
    return list(model.shape_for("NodegroupStatus").enum)


def test_every_node_group_status_of_the_eks_api_is_classified() -> None:
    """A status a botocore bump adds fails here until pool_sizes.RUNS_NODES (and this table) classify it."""
    assert set(_eks_statuses()) == set(RUNS_NODES) == set(KEEPS_ITS_SIZE)


@pytest.mark.parametrize("status", _eks_statuses())
def test_a_pool_keeps_the_size_of_a_group_only_while_that_group_runs_nodes(
    live: dict, tmp_path: Path, status: str
) -> None:
    """A replacement that failed or is being deleted must not size the next up; the running group does."""
    live.update({f"gpu-inference-{OTHER_SUFFIX}": (2, status), INFERENCE: 1, TRAINING: 0})
    after = dev_variant(tmp_path, {})
    sent = after.one(NODE_GROUP, "gpu-platform-gpu-inference").inputs["scalingConfig"]["desiredSize"]
    assert sent == (2 if KEEPS_ITS_SIZE.get(status) else 1)


@pytest.mark.parametrize("status", ["DELETING", "CREATE_FAILED", "DELETE_FAILED"])
def test_a_pool_whose_only_group_runs_no_nodes_starts_at_its_initial_size(
    live: dict, tmp_path: Path, status: str
) -> None:
    live.update({INFERENCE: (2, status), TRAINING: 0})
    after = dev_variant(tmp_path, {})
    assert after.one(NODE_GROUP, "gpu-platform-gpu-inference").inputs["scalingConfig"]["desiredSize"] == 0
