"""The EC2 Spot service-linked role: a spot-capable Karpenter pool never silently pays on-demand."""

from __future__ import annotations

from typing import Any

import pytest

from infra.platform.config import ConfigError, load
from infra.platform.spot_role import ROLE_NAME, verdict
from localcluster import karpenter as pins

E = {"endpoint": {"publicAccess": False}}


def _pools(capacity_types: list[str]) -> Any:
    pool = {"provisioner": "karpenter", "karpenter": {"capacityTypes": capacity_types}}
    return load({**E, "gpuPools": {"p": pool}}, region="us-west-2", default_cluster_name="c").karpenter_pools


def test_an_account_with_the_role_needs_nothing_whatever_the_setting() -> None:
    assert verdict(_pools(["SPOT"]), exists=True, create=True) is None
    assert verdict(_pools(["SPOT"]), exists=True, create=False) is None


def test_on_demand_pools_need_no_role() -> None:
    assert verdict(_pools(["ON_DEMAND"]), exists=False, create=False) is None


def test_a_spot_only_pool_in_an_account_without_the_role_is_refused_naming_the_fix() -> None:
    with pytest.raises(
        ConfigError, match=rf"gpuPools\.p\.karpenter\.capacityTypes is \[SPOT\] but .*{ROLE_NAME}"
    ):
        verdict(_pools(["SPOT"]), exists=False, create=False)


def test_a_pool_that_would_fall_back_to_on_demand_says_so() -> None:
    warning = verdict(_pools(["SPOT", "ON_DEMAND"]), exists=False, create=False)
    assert warning and "pay on-demand" in warning and "createSpotServiceLinkedRole: true" in warning


def test_asked_to_create_it_the_program_declares_the_role_kept_on_destroy() -> None:
    """The preview's account has no role (the invoke finds none): made, retained, Karpenter waits for it."""
    _, run = pins.platform_run()
    assert not run.of_type("aws:iam/serviceLinkedRole:ServiceLinkedRole")  # not asked: a warning only
    _, run = pins.platform_run(top={"createSpotServiceLinkedRole": True})
    (role,) = run.of_type("aws:iam/serviceLinkedRole:ServiceLinkedRole")
    assert role.inputs["awsServiceName"] == "spot.amazonaws.com" and role.retain_on_delete
    assert role.urn in run.one("kubernetes:helm.sh/v3:Release", "karpenter").dependencies
