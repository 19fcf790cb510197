"""``GpuJob(queue=...)``: labelled for Kueue, placed as the team's flavor places it, refused with words."""

from __future__ import annotations

import pulumi
import pytest

from infra import GpuJob
from infra.workloads.gpu_job import QUEUED_JOB_TIMEOUT
from infra.workloads.placement import GpuPool, Placement
from infra.workloads.queues import MIN_PARALLELISM, PRIORITY_LABEL, QUEUE_LABEL, TeamQueue
from tests.workloads.test_gpu_job import _refused as refused_job

JOB = "kubernetes:batch/v1:Job"
PLACEMENT = Placement(
    pools=(GpuPool("inference", 1, time_slicing_replicas=4), GpuPool("training", 2)),
    queues=(
        TeamQueue("vision", "vision", ("inference", "training")),
        TeamQueue("speech", "speech", ("training",), priority="high", partial_admission=True),
    ),
)
EXPORTED = PLACEMENT.to_dict()  # as a consumer gets it from the platform's stack output


def job_spec(**spec: object) -> dict:
    return {
        "template": {"spec": {"containers": [{"name": "t", "image": "nvcr.io/nvidia/pytorch:24.08-py3"}]}},
        **spec,
    }


def _job(run, **kwargs: object) -> dict:
    kwargs.setdefault("spec", job_spec())
    kwargs.setdefault("placement", EXPORTED)
    if kwargs.get("queue") and kwargs["placement"] is EXPORTED:
        kwargs.setdefault("pool", "training")  # a queued Job names its pool (vision has two)
    return run(lambda: GpuJob("t", **kwargs)).one(JOB)


def _refused(run, **kwargs: object) -> str:
    """The refusal of a queued GpuJob, on the exported placement by default (test_gpu_job's check)."""
    kwargs.setdefault("spec", job_spec())
    kwargs.setdefault("placement", EXPORTED)
    if kwargs.get("queue") and kwargs["placement"] is EXPORTED and "no_pool" not in kwargs:
        kwargs.setdefault("pool", "training")
    kwargs.pop("no_pool", None)
    return refused_job(run, **kwargs)


def test_a_queued_job_is_labelled_for_kueue_with_the_teams_priority(run) -> None:
    job = _job(run, metadata={"namespace": "vision"}, queue="default", pool="training")
    assert job.inputs["metadata"]["labels"] == {QUEUE_LABEL: "default", PRIORITY_LABEL: "normal"}
    speech = _job(run, metadata={"namespace": "speech"}, queue="default", pool="training")
    assert speech.inputs["metadata"]["labels"][PRIORITY_LABEL] == "high"  # that team's default


def test_its_own_priority_wins_and_the_users_labels_stay(run) -> None:
    metadata = {"namespace": "vision", "labels": {"app": "train"}}
    job = _job(run, metadata=metadata, queue="default", priority="low")
    assert job.inputs["metadata"]["labels"] == {"app": "train", QUEUE_LABEL: "default", PRIORITY_LABEL: "low"}


def test_it_keeps_the_placement_the_flavor_gives(run) -> None:
    pod = _job(run, metadata={"namespace": "vision"}, queue="default", pool="training").inputs["spec"][
        "template"
    ]["spec"]
    assert pod["nodeSelector"] == PLACEMENT.pool_labels("training")
    assert pod["tolerations"] == [PLACEMENT.toleration()]
    assert "suspend" not in _job(run, metadata={"namespace": "vision"}, queue="default").inputs["spec"]


def test_an_unqueued_job_has_no_kueue_label(run) -> None:
    assert "labels" not in _job(run, metadata={"namespace": "training"}).inputs["metadata"]


def test_an_unqueued_job_in_a_teams_namespace_is_refused(run) -> None:
    """Kueue's LocalQueue default would queue it anyway, with none of a queued Job's waits and refusals."""
    message = _refused(run, metadata={"namespace": "vision"})
    assert "namespace 'vision' is team 'vision''s: Kueue queues every Job there" in message
    assert "pass queue='default'" in message


def test_its_wait_allows_for_the_queue(run) -> None:
    assert QUEUED_JOB_TIMEOUT == "240m"
    assert _job(run, metadata={"namespace": "vision"}, queue="default").custom_timeouts[:2] == (
        "240m",
        "240m",
    )
    assert _job(run, metadata={"namespace": "training"}).custom_timeouts[:2] == ("60m", "60m")
    mine = _job(run, metadata={"namespace": "vision"}, queue="default", create_timeout="8h")
    assert mine.custom_timeouts[:2] == ("8h", "240m")


def test_partial_admission_on_a_team_that_opted_in(run) -> None:
    job = _job(
        run,
        spec=job_spec(parallelism=4),
        metadata={"namespace": "speech"},
        queue="default",
        min_parallelism=2,
    )
    assert job.inputs["metadata"]["annotations"] == {MIN_PARALLELISM: "2"}
    # Kueue writes the admitted count into spec.parallelism; a refresh would otherwise replace the Job.
    assert job.ignore_changes == ["spec.parallelism"]
    assert _job(run, metadata={"namespace": "speech"}, queue="default").ignore_changes == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"metadata": {"namespace": "vision"}, "queue": "gpu"},
            "queue 'gpu' in namespace 'vision' is not a queue any team declares (declared: speech/default, vision/default)",
        ),
        (
            {"metadata": {"namespace": "ml"}, "queue": "default"},
            "queue 'default' in namespace 'ml' is not a queue any team declares",
        ),
        ({"queue": "default"}, "queue='default' needs metadata.namespace, a team's namespace"),
        # Kueue may admit it to either flavor, pinning its pods there, while the pool its pods can use
        # (their GPUs per container, their provisioner) may be the other: Pending, requeued forever.
        (
            {"metadata": {"namespace": "vision"}, "queue": "default", "no_pool": True},
            "queue='default' without pool: team 'vision' has quota on inference, training",
        ),
        (
            {"metadata": {"namespace": "speech"}, "queue": "default", "pool": "inference"},
            "pool 'inference': team 'speech' has no quota on it",
        ),
        (
            {
                "metadata": {"namespace": "vision"},
                "queue": "default",
                "spec": job_spec(parallelism=4),
                "min_parallelism": 2,
            },
            "team 'vision' has not opted in to partial admission (teams.vision.partialAdmission: true",
        ),
        (
            {
                "metadata": {"namespace": "speech"},
                "queue": "default",
                "spec": job_spec(parallelism=2),
                "min_parallelism": 2,
            },
            "min_parallelism=2 needs fewer than the Job's 2 pod(s)",
        ),
        (
            {
                "metadata": {"namespace": "vision"},
                "queue": "default",
                "spec": job_spec(activeDeadlineSeconds=60),
                "replace_unready": True,
            },
            "replace_unready=True on a queued Job (queue=...): while Kueue holds it suspended",
        ),
        (
            {"metadata": {"namespace": "vision"}, "queue": "default", "spec": job_spec(suspend=True)},
            "spec.suspend True on a queued Job",
        ),
        (
            {"metadata": {"namespace": "vision"}, "queue": "default", "priority": "urgent"},
            "allowed: low, normal, high",
        ),
        ({"metadata": {"namespace": "training"}, "priority": "high"}, "priority='high' needs queue="),
        ({"metadata": {"namespace": "vision"}, "queue": "Default"}, "queue must be a LocalQueue name"),
        (
            {"metadata": {"namespace": "vision", "labels": {QUEUE_LABEL: "default"}}},
            "'kueue.x-k8s.io/queue-name' 'default' written by hand: use queue= instead",
        ),
        (
            {
                "metadata": {"namespace": "speech"},
                "queue": "default",
                "placement": {"key": "GPU", "value": "true"},
                "spec": job_spec(parallelism=3),
                "min_parallelism": 1,
            },
            "min_parallelism needs the team's partialAdmission: true, and the placement lists no teams' queues",
        ),
    ],
)
def test_refused_with_words_before_anything_is_declared(run, kwargs: dict, message: str) -> None:
    assert message in _refused(run, **kwargs)


def test_without_teams_in_the_placement_the_queue_is_not_judged(run) -> None:
    job = _job(run, placement={"key": "GPU", "value": "true"}, queue="default")
    assert job.inputs["metadata"]["labels"] == {QUEUE_LABEL: "default"}


def test_an_output_placement_is_judged_once_it_resolves(run) -> None:
    with pytest.raises(Exception, match="queue 'default' in namespace 'ml' is not a queue any team declares"):
        run(
            lambda: GpuJob(
                "t",
                spec=job_spec(),
                metadata={"namespace": "ml"},
                queue="default",
                placement=pulumi.Output.from_input(EXPORTED),
            )
        )
    job = run(
        lambda: GpuJob(
            "t",
            spec=job_spec(),
            metadata={"namespace": pulumi.Output.from_input("vision")},
            queue="default",
            pool="training",
            placement=pulumi.Output.from_input(EXPORTED),
        )
    ).one(JOB)
    assert job.inputs["metadata"]["labels"] == {QUEUE_LABEL: "default", PRIORITY_LABEL: "normal"}
