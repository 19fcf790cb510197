"""``teams:``: quotas per team and pool, refused with the key when no pool could ever give them."""

from __future__ import annotations

import pytest

from infra.platform.config import ConfigError, load
from infra.workloads.placement import Placement
from infra.workloads.queues import TeamQueue

ENDPOINT = {"publicAccessCidrs": ["203.0.113.0/24"]}
# inference: 2 nodes x 1 GPU x 4 slices = 8; training: 2 nodes x 2 GPUs = 4.
POOLS = {
    "inference": {"instanceTypes": ["g5g.xlarge"], "maxSize": 2, "sharing": {"timeSlicing": {"replicas": 4}}},
    "training": {"instanceTypes": ["g5g.16xlarge"], "maxSize": 2},
}


def _load(teams, pools=POOLS):
    raw = {"endpoint": ENDPOINT, "gpuPools": pools, "teams": teams}
    return load(raw, region="us-west-2", default_cluster_name="eks-gpu-platform-test")


def _refusal(teams, pools=POOLS) -> str:
    with pytest.raises(ConfigError) as caught:
        _load(teams, pools)
    return str(caught.value)


TWO_TEAMS = {
    "vision": {
        "namespace": "vision",
        "quotas": {"inference": {"nominalQuota": 4}, "training": {"nominalQuota": 2}},
    },
    "speech": {
        "namespace": "speech",
        "quotas": {"training": {"nominalQuota": 2, "borrowingLimit": 2, "lendingLimit": 1}},
        "priority": "high",
        "partialAdmission": True,
    },
}


def test_no_teams_is_no_queue_in_the_contract() -> None:
    config = _load({})
    assert config.teams == {}
    assert config.contract.queues == ()
    assert "queues" not in config.contract.to_dict()


def test_teams_reach_the_contract_and_round_trip_through_the_export() -> None:
    config = _load(TWO_TEAMS)
    speech = TeamQueue("speech", "speech", ("training",), priority="high", partial_admission=True)
    assert config.contract.queues == (
        speech,
        TeamQueue("vision", "vision", ("inference", "training")),
    )  # by team
    exported = config.contract.to_dict()
    assert exported["queues"]["speech"] == {
        "namespace": "speech",
        "name": "default",
        "pools": ["training"],
        "priority": "high",
        "partialAdmission": True,
    }
    assert Placement.from_dict(exported) == config.contract


def test_reach_counts_slices_on_a_time_sliced_pool() -> None:
    config = _load({})
    assert {p.name: p.reach for p in config.pools} == {"inference": 8, "training": 4}


def test_quotas_summing_to_exactly_what_a_pool_reaches_are_fine() -> None:
    teams = {
        "a": {"namespace": "a", "quotas": {"inference": {"nominalQuota": 5}}},
        "b": {"namespace": "b", "quotas": {"inference": {"nominalQuota": 3}}},
    }
    assert sum(t.quotas["inference"].nominal_quota for t in _load(teams).teams.values()) == 8


def test_quotas_summing_above_what_a_pool_reaches_are_refused_naming_teams_and_pool() -> None:
    teams = {
        "a": {"namespace": "a", "quotas": {"inference": {"nominalQuota": 5}}},
        "b": {"namespace": "b", "quotas": {"inference": {"nominalQuota": 4}}},
    }
    message = _refusal(teams)
    assert "a 5 + b 4" in message and "'inference'" in message
    assert "maxSize 2 x 1 GPU(s) per node x 4 slice(s) = 8" in message
    assert "gpuPools.inference.maxSize" in message


def test_an_unknown_pool_is_refused_with_the_allowed_pools() -> None:
    message = _refusal({"a": {"namespace": "a", "quotas": {"infrence": {"nominalQuota": 1}}}})
    assert message.startswith("teams.a.quotas.infrence: no GPU pool is called 'infrence'")
    assert "allowed: inference, training" in message


def test_borrowing_beyond_the_pool_is_refused() -> None:
    message = _refusal(
        {"a": {"namespace": "a", "quotas": {"training": {"nominalQuota": 2, "borrowingLimit": 3}}}}
    )
    assert message.startswith("teams.a.quotas.training: nominalQuota 2 + borrowingLimit 3")
    assert "lower borrowingLimit" in message


def test_lending_more_than_the_nominal_quota_is_refused() -> None:
    message = _refusal(
        {"a": {"namespace": "a", "quotas": {"training": {"nominalQuota": 1, "lendingLimit": 2}}}}
    )
    assert message.startswith("teams.a.quotas.training.lendingLimit (2) must not exceed nominalQuota (1)")


@pytest.mark.parametrize(
    ("quota", "expected"),
    [
        (
            {"nominalQuota": -1},
            "teams.a.quotas.training.nominalQuota must be a whole number from 0 to 57600, got -1",
        ),
        ({"nominalQuota": True}, "teams.a.quotas.training.nominalQuota must be a whole number"),
        ({"nominalQuota": "two"}, "teams.a.quotas.training.nominalQuota must be a whole number"),
        ({}, "teams.a.quotas.training.nominalQuota is required"),
        ({"nominalQuota": 1, "borowingLimit": 1}, "did you mean teams.a.quotas.training.borrowingLimit?"),
    ],
)
def test_bad_numbers_are_refused_naming_the_key(quota, expected) -> None:
    assert expected in _refusal({"a": {"namespace": "a", "quotas": {"training": quota}}})


def test_a_namespace_shared_by_two_teams_is_refused() -> None:
    teams = {
        "a": {"namespace": "ml", "quotas": {"training": {"nominalQuota": 1}}},
        "b": {"namespace": "ml", "quotas": {"training": {"nominalQuota": 1}}},
    }
    assert _refusal(teams).startswith("teams.b.namespace 'ml' is teams.a's too")


def test_the_device_plugins_namespace_is_refused_as_a_teams() -> None:
    # Both would declare the Namespace: the second create fails with "already exists" mid-update.
    teams = {"a": {"namespace": "nvidia-device-plugin", "quotas": {"training": {"nominalQuota": 1}}}}
    assert _refusal(teams).startswith(
        "teams.a.namespace 'nvidia-device-plugin' is devicePlugin.namespace's, which the platform declares"
    )


@pytest.mark.parametrize("namespace", ["kube-system", "default", "kueue-system", "Vision"])
def test_a_reserved_or_malformed_namespace_is_refused(namespace) -> None:
    message = _refusal({"a": {"namespace": namespace, "quotas": {"training": {"nominalQuota": 1}}}})
    assert message.startswith("teams.a.namespace must be a namespace name")
    assert "not default, kube-system" in message


def test_a_priority_outside_the_platform_classes_is_refused_with_them() -> None:
    message = _refusal(
        {"a": {"namespace": "a", "quotas": {"training": {"nominalQuota": 1}}, "priority": "urgent"}}
    )
    assert message == "teams.a.priority must be one of low, normal, high, got 'urgent'"


def test_a_team_without_quotas_is_refused() -> None:
    assert "teams.a.quotas" in _refusal({"a": {"namespace": "a", "quotas": {}}})


def test_a_bad_team_name_is_refused_with_the_words() -> None:
    message = _refusal({"Vision_A": {"namespace": "a", "quotas": {"training": {"nominalQuota": 1}}}})
    assert "teams key 'Vision_A'" in message and "ClusterQueue" in message
