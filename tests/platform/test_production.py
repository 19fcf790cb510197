"""Every row of the Operations table (docs/operations.md) goes through on a `production: true` stack.

Pulumi refuses to delete a protected resource (pulumi/pulumi ``pkg/resource/deploy/step.go``,
``DeleteStep.Apply``: ``!s.replacing && s.old.Protect``) and to replace one that stays
protected (``step_generator.go``: ``new.Protect && old.Protect``). So for each change the
plan is computed the way the engine would decide it, from the registrations before and
after: a resource gone is deleted; one whose replace-forcing inputs changed (the AWS
provider's ``ForceNew`` fields, terraform-provider-aws schemas) is replaced; and no
protected resource may be either. A protected component (the pulumi-eks cluster, the awsx
VPC) runs its children in its own plugin, which the mock engine does not run: for those
the test checks that only inputs that pulumi-eks updates in place change.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from infra.platform.config import ConfigError
from infra.tooling.offline import Registration, Run, run_project
from tests.platform.conftest import ROOT, SUFFIX, dev_variant

PRODUCTION = {"eks-gpu-platform:production: false": "eks-gpu-platform:production: true"}
INFERENCE_SIZES = "      minSize: 0\n      maxSize: 2  # scale from zero"
TRAINING = "    training:\n"

# ForceNew inputs (terraform-provider-aws): internal/service/eks/node_group.go,
# ec2/ec2_launch_template.go, kms/key.go, autoscaling/group_tag.go.
FORCE_NEW: Mapping[str, tuple[str, ...]] = {
    "aws:eks/nodeGroup:NodeGroup": (
        "amiType",
        "capacityType",
        "clusterName",
        "diskSize",
        "instanceTypes",
        "launchTemplate.id",
        "launchTemplate.name",
        "nodeGroupName",
        "nodeGroupNamePrefix",
        "nodeRoleArn",
        "remoteAccess",
        "subnetIds",
    ),
    "aws:ec2/launchTemplate:LaunchTemplate": ("name", "namePrefix"),
    "aws:kms/key:Key": ("customerMasterKeySpec", "keyUsage", "multiRegion", "customKeyStoreId"),
    "aws:autoscaling/tag:Tag": ("autoscalingGroupName", "tag.key"),
}
# Inputs of protected components that their plugin applies in place: pulumi-eks updates the
# cluster's version (UpdateClusterVersion), add-on versions, and adds or removes access
# entries as resources of their own (a new admin is a create).
IN_PLACE: Mapping[str, frozenset[str]] = {
    "eks:index:Cluster": frozenset({"version", "accessEntries", "vpcCniOptions", "kubeProxyAddonOptions"}),
    "awsx:ec2:Vpc": frozenset(),
}

ROWS: dict[str, dict[str, str]] = {
    "kubernetes version bump": {'kubernetesVersion: "1.35"': 'kubernetesVersion: "1.36"'},
    "resize a pool": {INFERENCE_SIZES: "      minSize: 1\n      maxSize: 4  # scale from zero"},
    "resize the system group": {
        "    minSize: 2\n    desiredSize: 2\n    maxSize: 3": "    minSize: 3\n    desiredSize: 3\n    maxSize: 4"
    },
    "add a pool": {
        "      capacityType: SPOT\n": "      capacityType: SPOT\n    batch:\n      instanceTypes: [g5g.4xlarge]\n"
    },
    # A pool's teams' quotas name it: renamed or removed with it.
    "rename a pool": {TRAINING: "    train:\n", "        training: {": "        train: {"},
    "remove a pool": {
        "    training:\n      instanceTypes: [g5g.16xlarge]\n      minSize: 0\n      maxSize: 2\n"
        "      diskSizeGiB: 200\n      capacityType: SPOT\n": "",
        "        training: {nominalQuota: 2, borrowingLimit: 2}\n": "",
    },
    "change a pool's instance type": {"instanceTypes: [g5g.16xlarge]": "instanceTypes: [g5g.metal]"},
    "change a pool's capacity type": {"capacityType: SPOT": "capacityType: ON_DEMAND"},
    "add an admin": {
        "  eks-gpu-platform:placement:\n": "  eks-gpu-platform:clusterAdmins:\n"
        "    - arn:aws:iam::123456789012:role/platform-admin\n  eks-gpu-platform:placement:\n"
    },
    "switch the autoscaler off": {
        "    enabled: true\n    chartVersion: 9.59.0": "    enabled: false\n    chartVersion: 9.59.0"
    },
    "rotate nodes (a launch template change)": {"diskSizeGiB: 100": "diskSizeGiB: 120"},
}


def _get(tree: Any, path: str) -> Any:
    for part in path.split("."):
        tree = tree.get(part) if isinstance(tree, Mapping) else None
    return tree


def _operation(old: Registration, new: Registration | None) -> str:
    if new is None:
        return "delete"
    if any(_get(old.inputs, p) != _get(new.inputs, p) for p in FORCE_NEW.get(old.type, ())):
        return "replace"
    return "update" if old.inputs != new.inputs else "same"


def plan(before: Run, after: Run) -> dict[str, str]:
    """What the engine does to each resource that existed before: same, update, replace or delete."""
    now = {r.urn: r for r in after.resources}
    return {r.urn: _operation(r, now.get(r.urn)) for r in before.resources}


def refusals(before: Run, after: Run) -> list[str]:
    """The protected resources the engine would refuse to touch, and protected components that change
    in ways their plugin does not apply in place."""
    now = {r.urn: r for r in after.resources}
    ops = plan(before, after)
    refused = []
    for old in (r for r in before.resources if r.protect):
        new = now.get(old.urn)
        if ops[old.urn] == "delete" or (ops[old.urn] == "replace" and new is not None and new.protect):
            refused.append(f"{ops[old.urn]} {old.name}")
        if not old.custom and new is not None:
            changed = {k for k in {*old.inputs, *new.inputs} if old.inputs.get(k) != new.inputs.get(k)}
            refused += [f"{old.name}.{k} not in place" for k in changed - IN_PLACE.get(old.type, frozenset())]
    return refused


@pytest.fixture(scope="module")
def production(tmp_path_factory: pytest.TempPathFactory) -> Run:
    return dev_variant(tmp_path_factory.mktemp("before"), PRODUCTION, stack="prod")


@pytest.mark.parametrize("row", ROWS)
def test_every_operations_row_goes_through_on_a_production_stack(
    production: Run, row: str, tmp_path: Path
) -> None:
    after = dev_variant(tmp_path, {**ROWS[row], **PRODUCTION}, stack="prod")
    assert refusals(production, after) == []
    created = {r.urn for r in after.resources} - {r.urn for r in production.resources}
    assert created or set(plan(production, after).values()) != {"same"}  # the edit did change something


@pytest.mark.parametrize(
    ("row", "pool", "operation"),
    [
        ("rename a pool", "training", "delete"),
        ("remove a pool", "training", "delete"),
        ("change a pool's instance type", "training", "replace"),
        ("change a pool's capacity type", "training", "replace"),
    ],
)
def test_the_pool_changes_replace_or_delete_node_groups_that_production_leaves_unprotected(
    production: Run, row: str, pool: str, operation: str, tmp_path: Path
) -> None:
    """What issue 19 found refused: these plans touch a GPU node group, which must not be protected."""
    after = dev_variant(tmp_path, {**ROWS[row], **PRODUCTION}, stack="prod")
    group = production.one("aws:eks/nodeGroup:NodeGroup", f"gpu-platform-gpu-{pool}")
    assert plan(production, after)[group.urn] == operation
    assert not group.protect


def test_the_cluster_the_key_and_the_vpc_stay_protected(production: Run, tmp_path: Path) -> None:
    """Only on production, and not the GPU pools: replacing or removing one is routine."""
    protected = {r.name for r in production.resources if r.protect}
    assert protected == {"gpu-platform-eks", "gpu-platform-secrets", "gpu-platform-vpc"}
    assert not any(r.protect for r in run_project(ROOT, "dev").resources)
    moved = dev_variant(tmp_path, {**PRODUCTION, "cidr: 10.0.0.0/16": "cidr: 10.1.0.0/16"}, stack="prod")
    assert "gpu-platform-vpc.cidrBlock not in place" in refusals(production, moved)


def test_lowering_max_size_below_the_running_nodes_is_refused_then_goes_through_once_drained(
    production: Run, live: dict[str, int], tmp_path: Path
) -> None:
    """The Operations row: refused by the preview while 2 nodes run; after the pool shrank to 1, it goes."""
    lower = {INFERENCE_SIZES: "      minSize: 0\n      maxSize: 1  # scale from zero", **PRODUCTION}
    live.update({f"gpu-inference-{SUFFIX}": 2, f"gpu-training-{SUFFIX}": 0})
    with pytest.raises(ConfigError, match=r"gpuPools\.inference\.maxSize 1 is below the 2 nodes"):
        dev_variant(tmp_path, lower, stack="prod")
    live[f"gpu-inference-{SUFFIX}"] = 1
    after = dev_variant(tmp_path, lower, stack="prod")
    assert refusals(production, after) == []


def test_the_way_to_destroy_a_production_stack_unprotects_without_touching_anything(
    production: Run, tmp_path: Path
) -> None:
    """Issue 26, item 10. `destroy --skip-preview` on production deletes every unprotected resource and
    then fails on the cluster (tests/cluster/test_pulumi_destroy_protected.py, on the real engine), so
    the Operations table says how to destroy one: production false and an up, which changes nothing
    but the protection, then destroy."""
    operations = (ROOT / "docs" / "operations.md").read_text()
    row = next(
        line for line in operations.splitlines() if line.startswith("| destroy a `production: true` stack")
    )
    assert "--skip-preview" in row and "pulumi config set production false && pulumi up" in row
    unprotected = dev_variant(tmp_path, {}, stack="prod")  # the same stack file, production: false
    assert set(plan(production, unprotected).values()) == {"same"}
    assert {r.urn for r in unprotected.resources} == {r.urn for r in production.resources}
    assert not any(r.protect for r in unprotected.resources)
