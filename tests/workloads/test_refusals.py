"""Never a pod the API refuses because of us: the defaults never make such a combination, GPU counts
are read as the API reads them, and what the API itself refuses is left to it as the user wrote it."""

from __future__ import annotations

import re
from fractions import Fraction

import pulumi
import pytest

from infra import GpuDeployment, GpuJob, PodSpecError
from infra.workloads.deployment import place_deployment_checked, place_deployment_spec
from infra.workloads.job import place_job_spec
from infra.workloads.placement import DEFAULT_PLACEMENT
from infra.workloads.podspec import place_pod_spec
from infra.workloads.quantity import QuantityError, parse_quantity
from infra.workloads.values import UNKNOWN
from tests.cluster.test_api_refusals import LEFT_TO_THE_API, PLACE, kept
from tests.conftest import deployment_spec


def _container(**security: object) -> dict:
    return {"name": "m", "image": "i", "securityContext": security}


# --- privileged / CAP_SYS_ADMIN vs allowPrivilegeEscalation: false ---


@pytest.mark.parametrize("profile", [None, "baseline", "restricted"])
@pytest.mark.parametrize(
    "security",
    [
        {"privileged": True},
        {"capabilities": {"add": ["SYS_ADMIN"]}},
        {"capabilities": {"add": ["CAP_SYS_ADMIN"]}},
    ],
)
def test_defaults_never_add_no_escalation_to_a_privileged_or_sys_admin_container(
    profile: str | None, security: dict
) -> None:
    pod = place_pod_spec({"containers": [_container(**security)]}, security_profile=profile)
    assert "allowPrivilegeEscalation" not in pod["containers"][0]["securityContext"]


# --- rolling updates ---


@pytest.mark.parametrize(
    ("rolling", "expected"),
    [
        ({}, {"maxSurge": 0, "maxUnavailable": 1}),
        ({"maxUnavailable": 0}, {"maxSurge": 1, "maxUnavailable": 0}),
        ({"maxUnavailable": "0%"}, {"maxSurge": 1, "maxUnavailable": "0%"}),
        ({"maxSurge": 0}, {"maxSurge": 0, "maxUnavailable": 1}),
        ({"maxSurge": "25%", "maxUnavailable": 0}, {"maxSurge": "25%", "maxUnavailable": 0}),
    ],
)
def test_the_rollout_default_never_makes_both_zero(rolling: dict, expected: dict) -> None:
    spec = place_deployment_spec({**deployment_spec(), "strategy": {"rollingUpdate": rolling}})
    assert spec["strategy"] == {"type": "RollingUpdate", "rollingUpdate": expected}


def test_without_rollout_defaults_nothing_is_added() -> None:
    assert "strategy" not in place_deployment_spec(deployment_spec(), rolling_update_defaults=False)


# --- GPU quantities, init containers ---


@pytest.mark.parametrize("quantity", ["1.5", 0.5, "500m", "1500m", "1e-1", "1 ", "one", "", True])
def test_gpu_quantities_must_be_whole_numbers(quantity: object) -> None:
    with pytest.raises(PodSpecError, match=r"must be a whole number of GPUs"):
        place_pod_spec({"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": quantity}}}]})


@pytest.mark.parametrize(("quantity", "gpus"), [("1000m", 1), ("1e0", 1), ("2", 2), ("+2", 2), ("2000m", 2)])
def test_gpu_quantities_the_api_reads_as_whole_numbers_are_accepted(quantity: str, gpus: int) -> None:
    # The API parses quantities (resource.ParseQuantity): "1000m" and "1e0" are one GPU.
    pod = place_pod_spec(
        {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": quantity}}}]}, gpus=gpus
    )
    assert pod["containers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": quantity},
        "requests": {"nvidia.com/gpu": quantity},
    }
    with pytest.raises(
        PodSpecError, match=rf"gpus=3 but the containers already declare nvidia.com/gpu {gpus} "
    ):
        place_pod_spec(
            {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": quantity}}}]}, gpus=3
        )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1),
        ("1000m", 1),
        ("1e0", 1),
        ("1E3", 1000),
        ("500m", Fraction(1, 2)),
        ("1Ki", 1024),
        ("1.5k", 1500),
        (".5", Fraction(1, 2)),
        ("5.", 5),
        ("-2", -2),
        ("2e-1", Fraction(1, 5)),
    ],
)
def test_quantities_are_parsed_exactly_as_kubernetes_does(text: str, value: Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "1 ", " 1", "1.5.0", "1KiB", "1ki", "e3", "1e", "1e999", "1m2", "0x10"])
def test_text_that_is_not_a_quantity_is_refused(text: str) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize(
    ("number", "count"),
    [(1, 1), (2.0, 2), (0.9995, 1), (1.5, None), (0.5, None), (1e-9, None), (3, 3)],
)
def test_gpu_count_settings_are_judged_by_the_one_quantity_parser(number: float, count: int | None) -> None:
    # gpus, a container's nvidia.com/gpu and a pool's gpusPerNode: one judgement, the API's
    # (the milli-value rounded up, refused unless a multiple of 1000): 0.9995 is 999.5m -> 1000m,
    # one GPU everywhere; 1.5 (1500m), 0.5 (500m) and 1e-9 (1m) nowhere. `count` is None if refused.
    from infra.workloads.placement import Placement, PlacementError

    limit = {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": number}}}]}
    outcomes = []
    for judge in (
        lambda: place_pod_spec({"containers": [{"name": "m"}]}, gpus=number)["containers"][0]["resources"][
            "limits"
        ]["nvidia.com/gpu"],
        lambda: place_pod_spec(limit)["containers"][0]["resources"]["limits"]["nvidia.com/gpu"],
        lambda: Placement.from_dict({"pools": {"p": {"gpusPerNode": number}}}).pools[0].gpus_per_node,
    ):
        try:
            outcomes.append(judge())
        except (PodSpecError, PlacementError):
            outcomes.append(None)
    # gpus and gpusPerNode become the count; the user's own limit is kept as written.
    assert outcomes == ([count, number, count] if count is not None else [None] * 3)
    assert all(type(outcome) is int for outcome in outcomes[::2] if outcome is not None)


def test_an_integral_float_quantity_is_one_gpu_count() -> None:
    pod = place_pod_spec({"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": 2.0}}}]})
    assert pod["containers"][0]["resources"]["requests"] == {"nvidia.com/gpu": 2.0}


def test_init_containers_get_requests_equal_to_limits_too() -> None:
    pod = place_pod_spec(
        {
            "initContainers": [{"name": "warm", "resources": {"requests": {"nvidia.com/gpu": 1}}}],
            "containers": [{"name": "m"}],
        }
    )
    assert pod["initContainers"][0]["resources"] == {
        "limits": {"nvidia.com/gpu": 1},
        "requests": {"nvidia.com/gpu": 1},
    }


# --- what the API refuses is left to it, as written (tests/cluster/test_api_refusals asks the API) ---


@pytest.mark.parametrize("case", LEFT_TO_THE_API, ids=lambda case: f"{case.kind}-{case.field}")
def test_a_spec_the_api_refuses_is_placed_with_the_users_values_kept(case) -> None:
    assert kept(case.spec, PLACE[case.kind](case.spec))


JOB_TEMPLATE = {
    "metadata": {"labels": {"job": "train"}},
    "spec": {"containers": [{"name": "t", "image": "i"}]},
}


@pytest.mark.parametrize(
    "spec",
    [
        {"activeDeadlineSeconds": 0},  # ValidateNonnegativeField: the API accepts 0
        {"manualSelector": True, "selector": {"matchLabels": {"job": "train"}}},
        {"podFailurePolicy": {"rules": []}, "podReplacementPolicy": "Failed"},
        {"podReplacementPolicy": "TerminatingOrFailed"},
        {"completionMode": "Indexed", "completions": 4, "backoffLimitPerIndex": 1, "maxFailedIndexes": 4},
    ],
)
def test_job_specs_the_api_accepts_are_accepted(spec: dict) -> None:
    placed = place_job_spec({**spec, "template": JOB_TEMPLATE})
    assert {k: v for k, v in placed.items() if k != "template"} == spec


# --- fields whose change replaces the object: refused before pulumi-kubernetes deletes the old one ---

JOB_POD = JOB_TEMPLATE["spec"]
MISSES = "does not match spec.template.metadata.labels"


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ({}, r"^spec\.selector is empty, which the API refuses for a Deployment"),
        ({"matchLabels": {}, "matchExpressions": []}, r"^spec\.selector is empty"),
        ({"matchLabels": {"app": "other"}}, rf"^spec\.selector\.matchLabels app='other' {MISSES}"),
        (
            {"matchExpressions": [{"key": "app", "operator": "In", "values": ["other"]}]},
            rf"^spec\.selector\.matchExpressions\[0\] .* {MISSES} \{{'app': 'inference'\}}: "
            "Kubernetes refuses a Deployment whose selector misses its pods",
        ),
    ],
)
def test_a_deployment_selector_the_api_refuses_is_refused_naming_it(selector: dict, message: str) -> None:
    with pytest.raises(PodSpecError, match=message):
        place_deployment_spec({**deployment_spec(), "selector": selector})


@pytest.mark.parametrize(
    "selector",
    [
        {"matchLabels": {"app": "inference"}},
        {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]},
        {"matchLabels": {"app": UNKNOWN}},  # an Output not resolved yet: checked once it is
        UNKNOWN,
    ],
)
def test_a_deployment_selector_that_matches_or_is_not_known_yet_is_kept(selector: object) -> None:
    spec = {**deployment_spec(), "selector": selector}
    placed = place_deployment_checked(
        spec, DEFAULT_PLACEMENT, None, pool=None, profile=None, rolling_update_defaults=True
    )
    assert placed["selector"] == selector


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            {"template": {**JOB_TEMPLATE, "spec": {**JOB_POD, "restartPolicy": "Always"}}},
            r"^spec\.template\.spec\.restartPolicy 'Always': a Job's pods must use one of Never, OnFailure",
        ),
        (
            {
                "podFailurePolicy": {"rules": []},
                "template": {**JOB_TEMPLATE, "spec": {**JOB_POD, "restartPolicy": "OnFailure"}},
            },
            r"^spec\.podFailurePolicy needs spec\.template\.spec\.restartPolicy Never, not 'OnFailure'",
        ),
        (
            {"manualSelector": True, "template": JOB_TEMPLATE},
            r"^spec\.selector is required with spec\.manualSelector: true",
        ),
        (
            {"manualSelector": True, "selector": {"matchLabels": {"job": "eval"}}, "template": JOB_TEMPLATE},
            rf"^spec\.selector\.matchLabels job='eval' {MISSES} \{{'job': 'train'\}}: Kubernetes refuses a Job",
        ),
    ],
)
def test_a_job_restart_policy_or_selector_the_api_refuses_is_refused_naming_it(
    spec: dict, message: str
) -> None:
    with pytest.raises(PodSpecError, match=message):
        place_job_spec(spec)


def test_a_replacing_field_is_refused_before_anything_is_declared(run) -> None:
    errors: list[str] = []

    def program() -> None:
        for component, spec in [
            (GpuDeployment, {**deployment_spec(), "selector": {"matchLabels": {"app": "other"}}}),
            (
                GpuJob,
                {
                    "template": {
                        "spec": {"containers": [{"name": "m", "image": "i"}], "restartPolicy": "Always"}
                    }
                },
            ),
        ]:
            with pytest.raises(PodSpecError) as raised:
                component("x", spec=spec)
            errors.append(str(raised.value))

    assert run(program).resources == []
    assert errors[0].startswith("GpuDeployment('x'): spec.selector.matchLabels app='other' does not match")
    assert errors[1].startswith("GpuJob('x'): spec.template.spec.restartPolicy 'Always'")


def test_a_selector_given_as_an_output_is_checked_once_known(run) -> None:
    selector = pulumi.Output.from_input({"matchLabels": {"app": "other"}})
    with pytest.raises(Exception, match=r"spec\.selector\.matchLabels app='other' does not match"):
        run(lambda: GpuDeployment("x", spec={**deployment_spec(), "selector": selector}))


# --- the Deployment counts the package computes with: whole numbers >= 0 ---


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("replicas", "2"),
        ("replicas", -1),
        ("replicas", 1.5),
        ("minReadySeconds", -5),
    ],
)
def test_a_deployment_count_that_is_text_or_negative_is_refused_before_anything_is_declared(
    run, field: str, value: object
) -> None:
    errors: list[str] = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            GpuDeployment("x", spec={**deployment_spec(), field: value})
        errors.append(str(raised.value))

    assert run(program).resources == []
    assert errors == [f"GpuDeployment('x'): spec.{field} must be a whole number >= 0, got {value!r}"]


def test_integral_float_replicas_are_whole_numbers() -> None:
    assert place_deployment_spec({**deployment_spec(), "replicas": 2.0})["replicas"] == 2.0


# --- node affinity that no node matches (no terms at all is the API's to refuse) ---

REQUIRED = "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"


def _required(*terms: object) -> dict:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


@pytest.mark.parametrize(
    ("pod", "message"),
    [
        (
            {"affinity": _required({})},
            rf"spec.template.spec.{REQUIRED} has only empty terms, and an empty term",
        ),
        ({"affinity": _required({"matchExpressions": [], "matchFields": []})}, r"has only empty terms"),
    ],
)
def test_a_template_no_node_matches_is_refused_before_anything_is_declared(
    run, pod: dict, message: str
) -> None:
    errors: list[str] = []

    def program() -> None:
        containers = {"containers": [{"name": "m", "image": "i"}]}
        for component, spec in [
            (GpuDeployment, deployment_spec(**containers, **pod)),
            (GpuJob, {"template": {"spec": {**containers, **pod}}}),
        ]:
            with pytest.raises(PodSpecError) as raised:
                component("x", spec=spec)
            errors.append(str(raised.value))

    assert run(program).resources == []
    assert len(errors) == 2
    for error in errors:
        assert re.search(message, error), error


def test_an_empty_term_beside_others_is_kept_empty_not_given_the_pool_requirement() -> None:
    from infra.workloads.placement import POOL_LABEL, GpuPool, Placement

    pools = Placement(pools=(GpuPool("small", 1), GpuPool("big", 4)))
    zone = {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
    pod = place_pod_spec({"containers": [{"name": "m"}], "affinity": _required({}, zone)}, pools, gpus=2)
    pool_in = {"key": POOL_LABEL, "operator": "In", "values": ["big"]}
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert terms == [{}, {"matchExpressions": [*zone["matchExpressions"], pool_in]}]


def test_an_init_container_above_the_pool_is_refused_while_the_containers_are_not_known_yet(run) -> None:
    from infra.workloads.placement import GpuPool, Placement

    pools = Placement(pools=(GpuPool("training", 4),))
    resources = pulumi.Output.from_input({"limits": {"nvidia.com/gpu": 1}})  # e.g. from config
    pod = {
        "initContainers": [{"name": "warm", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 8}}}],
        "containers": [{"name": "m", "image": "i", "resources": resources}],
    }
    errors: list[str] = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            GpuDeployment("x", spec=deployment_spec(**pod), placement=pools, pool="training")
        errors.append(str(raised.value))

    assert run(program).resources == []
    assert errors == [
        "GpuDeployment('x'): the pod asks for 8 nvidia.com/gpu but no node of pool 'training' can give more "
        "than 4 (it has 4 GPUs per node); ask for at most 4 or choose another pool"
    ]
