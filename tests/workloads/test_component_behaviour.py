"""What both GPU components do around the merge: waits long enough for a GPU, PDBs for Output specs,
args as the component provider hands them over."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest
from pulumi.runtime import mocks as pulumi_mocks

from infra import GpuDeployment, GpuDeploymentArgs, GpuJob, GpuJobArgs, PodSpecError
from infra.workloads.component import DEPLOYMENT_TIMEOUT, JOB_TIMEOUT
from tests.conftest import deployment_spec

PDB = "kubernetes:policy/v1:PodDisruptionBudget"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
JOB = "kubernetes:batch/v1:Job"
JOB_SPEC = {"template": {"spec": {"containers": [{"name": "t", "image": "i"}]}}}


class _Echo(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        return f"{args.name}_id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        return {}


class _TimeoutsMonitor(pulumi_mocks.MockMonitor):
    """The SDK's mock monitor, keeping the custom timeouts each registration asked for."""

    def __init__(self) -> None:
        super().__init__(_Echo())
        self.timeouts: dict[tuple[str, str], tuple[str, str, str]] = {}

    def RegisterResource(self, request: Any) -> Any:
        t = request.customTimeouts
        self.timeouts[(request.type, request.name)] = (t.create, t.update, t.delete)
        return super().RegisterResource(request)


def _timeouts(program) -> dict[tuple[str, str], tuple[str, str, str]]:
    monitor = _TimeoutsMonitor()
    pulumi.runtime.reset_options()
    pulumi.runtime.set_mocks(monitor.mocks, preview=False, monitor=monitor)

    @pulumi.runtime.test
    def _run() -> None:
        program()

    _run()
    return monitor.timeouts


def test_budgets_are_thirty_minutes_for_a_rollout_and_an_hour_for_a_job() -> None:
    assert (DEPLOYMENT_TIMEOUT, JOB_TIMEOUT) == ("30m", "60m")


def test_children_wait_long_enough_for_a_gpu_node_to_scale_up() -> None:
    timeouts = _timeouts(
        lambda: (GpuDeployment("llm", spec=deployment_spec(replicas=2)), GpuJob("train", spec=JOB_SPEC))
    )
    assert timeouts[(DEPLOYMENT, "llm")] == ("30m", "30m", "")
    assert timeouts[("kubernetes:batch/v1:Job", "train")] == ("60m", "60m", "")


def test_the_users_custom_timeouts_win_one_by_one() -> None:
    mine = pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="2h", delete="5m"))
    timeouts = _timeouts(
        lambda: (
            GpuDeployment("llm", spec=deployment_spec(), opts=mine),
            GpuJob("train", spec=JOB_SPEC, opts=mine),
        )
    )
    assert timeouts[(DEPLOYMENT, "llm")] == ("2h", "30m", "5m")
    assert timeouts[("kubernetes:batch/v1:Job", "train")] == ("2h", "60m", "5m")


def test_timeout_args_reach_the_children_like_custom_timeouts() -> None:
    timeouts = _timeouts(
        lambda: (
            GpuDeployment("llm", spec=deployment_spec(), update_timeout="45m"),
            GpuJob("train", {"spec": JOB_SPEC, "createTimeout": "1h30m", "deleteTimeout": "10m"}),
        )
    )
    assert timeouts[(DEPLOYMENT, "llm")] == ("30m", "45m", "")
    assert timeouts[("kubernetes:batch/v1:Job", "train")] == ("1h30m", "60m", "10m")


def test_a_timeout_given_as_an_arg_and_in_opts_must_agree(run) -> None:
    opts = pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create="2h"))
    same = _timeouts(lambda: GpuJob("train", spec=JOB_SPEC, create_timeout="2h", opts=opts))
    assert same[("kubernetes:batch/v1:Job", "train")] == ("2h", "60m", "")
    spelled_otherwise = _timeouts(lambda: GpuJob("train", spec=JOB_SPEC, create_timeout="120m", opts=opts))
    assert spelled_otherwise[("kubernetes:batch/v1:Job", "train")] == ("120m", "60m", "")
    caught: list[str] = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            GpuJob("train", spec=JOB_SPEC, create_timeout="3h", opts=opts)
        caught.append(str(raised.value))

    assert run(program).resources == []
    assert caught == [
        "GpuJob('train'): create_timeout is '3h' but opts.custom_timeouts.create is '2h': drop one of them"
    ]


BAD_TIMEOUTS = ["1d", "45", "-5m", "0s", "0h0m", "5 m", "", 45, "m"]


@pytest.mark.parametrize(
    ("given", "setting"),
    [*(({"delete_timeout": v}, "delete_timeout") for v in BAD_TIMEOUTS)]
    + [
        (
            {"opts": pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(create=v))},
            "opts.custom_timeouts.create",
        )
        for v in ("1d", "-5m", "0s")
    ],
)
def test_a_timeout_that_is_not_a_go_duration_is_refused_before_anything_is_declared(
    run, given: dict[str, Any], setting: str
) -> None:
    """As an argument or in ``opts.custom_timeouts`` alike."""
    caught: list[str] = []

    def program() -> None:
        for component, spec in ((GpuDeployment, deployment_spec()), (GpuJob, JOB_SPEC)):
            with pytest.raises(PodSpecError) as raised:
                component("x", spec=spec, **given)
            caught.append(str(raised.value))

    assert run(program).resources == []
    assert len(caught) == 2
    assert all(f"{setting} must be a positive duration such as" in message for message in caught)


@pytest.mark.parametrize("value", ["30m", "2h", "1h30m", "90s", "1.5h", "500ms", ".5h", "+45m"])
def test_go_durations_are_accepted(value: str) -> None:
    from infra.workloads.component import check_duration

    assert check_duration(value, "create_timeout") == value


def test_name_and_namespace_resolve_under_mocks_that_echo_inputs() -> None:
    seen: list[Any] = []

    def program() -> None:
        auto = GpuDeployment("llm", spec=deployment_spec())
        named = GpuJob("train", spec=JOB_SPEC, metadata={"name": "train-7", "namespace": "ml"})
        pulumi.Output.all(auto.name, auto.namespace, named.name, named.namespace).apply(seen.append)

    _timeouts(program)
    assert seen == [["llm", "default", "train-7", "ml"]]


# --- PodDisruptionBudget when replicas are not known yet ---


def test_a_spec_that_is_entirely_an_output_still_gets_its_pdb(run) -> None:
    spec = pulumi.Output.from_input(deployment_spec(replicas=3))
    result = run(lambda: GpuDeployment("llm", spec=spec))
    assert result.one(PDB).inputs["spec"] == {
        "maxUnavailable": 1,
        "selector": {"matchLabels": {"app": "inference"}},
    }
    assert result.one(PDB).inputs["metadata"] == {"namespace": "default"}
    assert result.one(DEPLOYMENT).inputs["spec"]["template"]["spec"]["nodeSelector"] == {"GPU": "true"}


def test_replicas_from_an_output_get_a_pdb_and_one_known_replica_none(run) -> None:
    unknown = run(
        lambda: GpuDeployment("a", spec=deployment_spec() | {"replicas": pulumi.Output.from_input(2)})
    )
    assert len(unknown.of_type(PDB)) == 1
    assert run(lambda: GpuDeployment("b", spec=deployment_spec() | {"replicas": 1})).of_type(PDB) == []


# --- args as a plain dict (how the component provider hands them over) ---


def test_deployment_args_as_a_camel_case_dict_with_float_numbers(run) -> None:
    args = {
        "spec": deployment_spec(replicas=2),
        "gpus": 2.0,
        "podDisruptionBudget": False,
        "securityProfile": "none",
    }
    result = run(lambda: GpuDeployment("llm", args))
    pod = result.one(DEPLOYMENT).inputs["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert "securityContext" not in pod
    assert result.of_type(PDB) == []


def test_snake_case_dict_and_dataclass_mean_the_same(run) -> None:
    as_dict = run(lambda: GpuDeployment("a", {"spec": deployment_spec(), "rolling_update_defaults": False}))
    as_args = run(
        lambda: GpuDeployment("a", GpuDeploymentArgs(spec=deployment_spec(), rolling_update_defaults=False))
    )
    assert as_dict.one(DEPLOYMENT).inputs == as_args.one(DEPLOYMENT).inputs


def test_both_args_share_one_definition_and_take_only_spec_by_position() -> None:
    # The shared fields come after spec and before each component's own; by keyword only,
    # so a positional call written against another order fails instead of meaning else.
    from dataclasses import fields

    from infra.workloads.component import GpuWorkloadArgs

    shared = [f.name for f in fields(GpuWorkloadArgs)]
    for args in (GpuDeploymentArgs, GpuJobArgs):
        assert issubclass(args, GpuWorkloadArgs)
        assert [f.name for f in fields(args)][: len(shared)] == shared
    assert GpuJobArgs(JOB_SPEC).spec == JOB_SPEC
    with pytest.raises(TypeError, match="positional"):
        GpuJobArgs(JOB_SPEC, None)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        (
            {"spec": deployment_spec(), "replica": 2},
            TypeError,
            "unexpected keyword argument 'replica'; allowed: ",
        ),
        (
            {"spec": deployment_spec(), "podDisruptionBudget": True, "pod_disruption_budget": False},
            TypeError,
            "given twice",
        ),
        ({"gpus": 1}, TypeError, "spec is required"),
        (
            {"spec": deployment_spec(), "podDisruptionBudget": "false"},
            PodSpecError,
            "pod_disruption_budget must be true or false",
        ),
        (
            {"spec": deployment_spec(), "checkImageArchitecture": "false"},
            PodSpecError,
            "check_image_architecture must be true or false",
        ),
        ({"spec": deployment_spec(), "gpus": 1.5}, PodSpecError, "gpus must be a whole number >= 1"),
    ],
)
def test_bad_dict_args_are_refused_naming_the_setting(run, args: dict, error: type, message: str) -> None:
    caught = []

    def program() -> None:
        with pytest.raises(error) as raised:
            GpuDeployment("bad", args)
        caught.append(str(raised.value))

    assert run(program).resources == []
    assert caught[0].startswith("GpuDeployment('bad'): ") and message in caught[0]


class _DocumentedMocks(pulumi.runtime.Mocks):
    """Pulumi's documented unit-test mocks, as a consumer writes them: outputs are the inputs."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        return args.name + "_id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        return {}


def test_a_consumers_test_with_the_documented_mocks_can_read_the_childs_metadata_name() -> None:
    # No metadata given: the children still carry metadata, so metadata.name is readable (None
    # under mocks; the auto-name in a real deployment), not an AttributeError on None.
    pulumi.runtime.reset_options()
    pulumi.runtime.set_mocks(_DocumentedMocks(), preview=False)
    seen: list[tuple] = []

    @pulumi.runtime.test
    def check() -> pulumi.Output:
        llm = GpuDeployment("llm", spec=deployment_spec(), check_image_architecture=False)
        train = GpuJob("train", spec=JOB_SPEC, check_image_architecture=False)
        names = [llm.deployment.metadata.name, train.job.metadata.name, llm.name, train.name]
        return pulumi.Output.all(*names).apply(lambda values: seen.append(tuple(values)))

    check()
    assert seen == [(None, None, "llm", "train")]


TIMEOUT_SECONDS = "pulumi.com/timeoutSeconds"


def _annotated(seconds: object) -> dict[str, Any]:
    return {"annotations": {TIMEOUT_SECONDS: seconds}}


def test_the_users_timeout_seconds_annotation_is_honoured_for_every_operation(run) -> None:
    # pulumi-kubernetes takes customTimeouts over the annotation (metadata/overrides.go
    # TimeoutDuration), and the components always set create and update: the annotation
    # would be ignored unless it becomes the children's custom timeouts.
    result = run(
        lambda: (
            GpuDeployment("llm", spec=deployment_spec(), metadata=_annotated("5400")),
            GpuJob("train", spec=JOB_SPEC, metadata=_annotated("600")),
        )
    )
    assert result.one(DEPLOYMENT).custom_timeouts == ("5400s", "5400s", "5400s")
    assert result.one(DEPLOYMENT).inputs["spec"]["progressDeadlineSeconds"] == 5400  # as long as Pulumi waits
    assert result.one(JOB).custom_timeouts == ("600s", "600s", "600s")
    assert result.one(JOB).inputs["metadata"] == _annotated("600")  # kept on the object as written


def test_the_annotation_and_a_timeout_given_otherwise_must_agree(run) -> None:
    same = run(lambda: GpuJob("train", spec=JOB_SPEC, metadata=_annotated("3600"), create_timeout="1h"))
    assert same.one(JOB).custom_timeouts == ("1h", "3600s", "3600s")
    caught: list[str] = []

    def program() -> None:
        opts = pulumi.ResourceOptions(custom_timeouts=pulumi.CustomTimeouts(delete="5m"))
        with pytest.raises(PodSpecError) as raised:
            GpuDeployment("llm", spec=deployment_spec(), metadata=_annotated("3600"), opts=opts)
        caught.append(str(raised.value))

    assert run(program).resources == []
    assert caught == [
        "GpuDeployment('llm'): opts.custom_timeouts.delete is '5m' but "
        "metadata.annotations['pulumi.com/timeoutSeconds'] is '3600': drop one of them"
    ]


@pytest.mark.parametrize("value", ["10m", "-5", "0", "1.5", "", 600, pulumi.Output.from_input("600")])
def test_a_timeout_seconds_annotation_that_cannot_be_honoured_is_refused(run, value: object) -> None:
    """pulumi-kubernetes would silently wait its default 10 minutes for a value it cannot parse."""
    caught: list[str] = []

    def program() -> None:
        for component, spec in ((GpuDeployment, deployment_spec()), (GpuJob, JOB_SPEC)):
            with pytest.raises(PodSpecError) as raised:
                component("x", spec=spec, metadata=_annotated(value))
            caught.append(str(raised.value))

    assert run(program).resources == []
    expected = (
        "plain value, not an Output"
        if isinstance(value, pulumi.Output)
        else "whole number of seconds above 0"
    )
    assert all(f"metadata.annotations['pulumi.com/timeoutSeconds'] must be a {expected}" in m for m in caught)


def test_a_timeout_seconds_annotation_seen_only_once_outputs_resolve_fails_then(run) -> None:
    for component, spec in ((GpuDeployment, deployment_spec()), (GpuJob, JOB_SPEC)):
        with pytest.raises(Exception, match=r"timeoutSeconds'\] is known only once Outputs resolve"):
            run(
                lambda c=component, s=spec: c(
                    "x", spec=s, metadata=pulumi.Output.from_input(_annotated("600"))
                )
            )


def test_a_timeout_seconds_annotation_is_read_as_pulumi_kubernetes_reads_it(run) -> None:
    """pulumi-kubernetes parses it with Go's ``strconv.Atoi`` (``metadata/overrides.go`` ``TimeoutDuration``),
    which takes a leading ``+`` and leading zeros: those wait as long there, so they are honoured, not refused."""
    result = run(lambda: GpuJob("train", spec=JOB_SPEC, metadata=_annotated("+0600")))
    assert result.one(JOB).custom_timeouts == ("600s", "600s", "600s")
