"""place_pod_spec / place_deployment_spec: the contract merged into any pod spec."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infra.workloads.deployment import place_deployment_spec
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement
from infra.workloads.podspec import UNKNOWN, PodSpecError, place_pod_spec
from tests.conftest import deployment_spec

TOLERATION = DEFAULT_PLACEMENT.toleration()


def test_adds_selector_toleration_and_one_gpu_to_a_plain_pod() -> None:
    pod = place_pod_spec({"containers": [{"name": "m", "image": "i"}]})
    assert pod["nodeSelector"] == {"GPU": "true"}
    assert pod["tolerations"] == [TOLERATION]
    assert pod["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 1},
        "requests": {"nvidia.com/gpu": 1},
    }


def test_keeps_every_user_selector_entry_and_toleration() -> None:
    mine = {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}
    pod = place_pod_spec(
        {"containers": [{"name": "m"}], "nodeSelector": {"zone": "a"}, "tolerations": [mine]}
    )
    assert pod["nodeSelector"] == {"zone": "a", "GPU": "true"}
    assert pod["tolerations"] == [mine, TOLERATION]


def test_does_not_duplicate_a_toleration_the_user_already_wrote() -> None:
    pod = place_pod_spec({"containers": [{"name": "m"}], "tolerations": [{**TOLERATION, "operator": None}]})
    assert pod["tolerations"] == [TOLERATION]


def test_refuses_a_selector_that_contradicts_the_contract() -> None:
    with pytest.raises(PodSpecError, match=r"nodeSelector GPU='false' contradicts .* set it to 'true'"):
        place_pod_spec({"containers": [{"name": "m"}], "nodeSelector": {"GPU": "false"}})


def test_refuses_affinity_that_excludes_gpu_nodes() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "GPU", "operator": "NotIn", "values": ["true"]}]}
                ]
            }
        }
    }
    with pytest.raises(PodSpecError, match="could never land on a GPU node"):
        place_pod_spec({"containers": [{"name": "m"}], "affinity": affinity})


def test_gpus_go_to_the_first_container_only() -> None:
    pod = place_pod_spec({"containers": [{"name": "m"}, {"name": "sidecar"}]}, gpus=2)
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert "resources" not in pod["containers"][1]


def test_a_container_that_declares_gpus_keeps_its_value_and_gets_limit_equal_request() -> None:
    pod = place_pod_spec(
        {"containers": [{"name": "m"}, {"name": "g", "resources": {"requests": {"nvidia.com/gpu": "2"}}}]}
    )
    assert pod["containers"][1]["resources"] == {
        "limits": {"nvidia.com/gpu": "2"},
        "requests": {"nvidia.com/gpu": "2"},
    }
    assert "resources" not in pod["containers"][0]


def test_keeps_other_resources() -> None:
    pod = place_pod_spec({"containers": [{"name": "m", "resources": {"limits": {"memory": "8Gi"}}}]})
    assert pod["containers"][0]["resources"]["limits"] == {"memory": "8Gi", "nvidia.com/gpu": 1}


@pytest.mark.parametrize(
    ("pod", "gpus", "message"),
    [
        ({"containers": [{"name": "m"}]}, 0, "gpus must be a whole number >= 1"),
        ({"containers": [{"name": "m"}]}, 1.5, "gpus must be a whole number >= 1"),
        ({"containers": [{"name": "m"}]}, True, "gpus must be a whole number >= 1"),
        (
            {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": "half"}}}]},
            None,
            "whole number of GPUs",
        ),
        ({"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": 0}}}]}, None, "at least 1"),
        (
            {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": 1}}}]},
            2,
            "make the two agree",
        ),
    ],
)
def test_refuses_bad_gpu_requests(pod: dict, gpus: object, message: str) -> None:
    with pytest.raises(PodSpecError, match=message):
        place_pod_spec(pod, gpus=gpus)  # type: ignore[arg-type]


def test_security_profile_defaults_fill_only_what_the_user_left_out() -> None:
    pod = place_pod_spec(
        {
            "securityContext": {"runAsUser": 1000},
            "containers": [{"name": "m", "securityContext": {"runAsNonRoot": False}}],
        }
    )
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
        "runAsUser": 1000,
    }
    assert pod["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": False,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_unknown_values_are_skipped_not_guessed() -> None:
    pod = place_pod_spec({"containers": UNKNOWN, "tolerations": UNKNOWN, "nodeSelector": {"zone": UNKNOWN}})
    assert pod["containers"] is UNKNOWN and pod["tolerations"] is UNKNOWN
    assert pod["nodeSelector"] == {"zone": UNKNOWN, "GPU": "true"}


def test_custom_placement_is_what_gets_applied() -> None:
    p = Placement(key="accelerator", value="t4g")
    pod = place_pod_spec({"containers": [{"name": "m"}]}, p)
    assert pod["nodeSelector"] == {"accelerator": "t4g"} and pod["tolerations"] == [p.toleration()]


def test_deployment_spec_gets_a_rolling_update_that_needs_no_spare_gpu() -> None:
    spec = place_deployment_spec(deployment_spec())
    assert spec["strategy"] == {
        "type": "RollingUpdate",
        "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1},
    }
    mine = place_deployment_spec({**deployment_spec(), "strategy": {"rollingUpdate": {"maxSurge": 1}}})
    assert mine["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 1}
    recreate = place_deployment_spec({**deployment_spec(), "strategy": {"type": "Recreate"}})
    assert recreate["strategy"] == {"type": "Recreate"}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("not a spec", "must be a Deployment spec"),
        (
            {**deployment_spec(), "serviceName": "x"},
            r"not a Deployment spec: unknown field\(s\) \['serviceName'\]",
        ),
        ({"template": deployment_spec()["template"]}, "spec.selector is required"),
        ({"selector": {"matchLabels": {"app": "a"}}}, "spec.template is required"),
        (
            {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {}}},
            "spec.template.spec is required",
        ),
    ],
)
def test_refuses_what_is_not_a_deployment_spec(spec: object, message: str) -> None:
    with pytest.raises(PodSpecError, match=message):
        place_deployment_spec(spec)


# --- property: whatever the user writes, the contract appears once and nothing of theirs is lost ---

_label = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
_toleration = st.fixed_dictionaries(
    {"key": _label, "operator": st.sampled_from(["Equal", "Exists"])},
    optional={"value": _label, "effect": st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])},
)
_gpu = st.one_of(st.none(), st.integers(1, 8))
_container = st.builds(
    lambda name, gpu: {"name": name, **({"resources": {"limits": {"nvidia.com/gpu": gpu}}} if gpu else {})},
    _label,
    _gpu,
)
_pod = st.fixed_dictionaries(
    {"containers": st.lists(_container, min_size=1, max_size=4, unique_by=lambda c: c["name"])},
    optional={
        "nodeSelector": st.dictionaries(_label.filter(lambda k: k != "GPU"), _label, max_size=4),
        "tolerations": st.lists(st.one_of(_toleration, st.just(TOLERATION)), max_size=4),
    },
)


@settings(max_examples=300, deadline=None)
@given(pod=_pod)
def test_property_contract_once_user_entries_kept_gpu_limits_set(pod: dict) -> None:
    placed = place_pod_spec(pod)
    assert placed["tolerations"].count(TOLERATION) == 1
    assert placed["nodeSelector"]["GPU"] == "true"
    for key, value in (pod.get("nodeSelector") or {}).items():
        assert placed["nodeSelector"][key] == value
    for toleration in pod.get("tolerations") or []:
        assert toleration in placed["tolerations"]
    assert len(placed["tolerations"]) == len([t for t in pod.get("tolerations") or [] if t != TOLERATION]) + 1
    gpu_containers = [
        c for c in placed["containers"] if "nvidia.com/gpu" in (c.get("resources") or {}).get("limits", {})
    ]
    assert gpu_containers, "at least one container must ask for a GPU"
    for c in gpu_containers:
        assert c["resources"]["limits"]["nvidia.com/gpu"] == c["resources"]["requests"]["nvidia.com/gpu"] >= 1
    assert [c["name"] for c in placed["containers"]] == [c["name"] for c in pod["containers"]]


@pytest.mark.parametrize(
    ("quantity", "gpus"), [("1000m", 1), ("0.9995", 1), ("2e0", 2), ("1000000u", 1), ("1000000000n", 1)]
)
def test_gpu_quantities_the_api_takes_as_whole_are_kept_as_written(quantity: str, gpus: int) -> None:
    pod = place_pod_spec(
        {"containers": [{"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": quantity}}}]}
    )
    assert pod["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": quantity},
        "requests": {"nvidia.com/gpu": quantity},
    }


@pytest.mark.parametrize("quantity", ["500m", "1n", "1.5"])
def test_gpu_quantities_the_api_refuses_are_refused(quantity: str) -> None:
    with pytest.raises(PodSpecError, match="whole number of GPUs"):
        place_pod_spec(
            {
                "containers": [
                    {"name": "a", "image": "x", "resources": {"limits": {"nvidia.com/gpu": quantity}}}
                ]
            }
        )
