"""GpuJob: exactly what Kubernetes receives for a Job, under Pulumi's mock engine."""

from __future__ import annotations

import re

import pulumi
import pulumi_kubernetes as k8s
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from infra import GpuJob, GpuJobArgs, PodSpecError, place_job_spec
from infra.tooling.manifests import manifest_of, validate_manifest
from infra.workloads.gpu_job import REPLACE_ON_CHANGES, REPLACE_UNREADY, SKIP_AWAIT, TYPE_TOKEN, WAIT_FOR
from infra.workloads.placement import DEFAULT_PLACEMENT
from infra.workloads.scheduling import Node, placeable_on
from tests.conftest import KUBERNETES_VERSION, gpu_node, system_node

JOB = "kubernetes:batch/v1:Job"
TOLERATION = DEFAULT_PLACEMENT.toleration()


def job_spec(**pod: object) -> dict:
    pod.setdefault("containers", [{"name": "train", "image": "nvcr.io/nvidia/pytorch:24.08-py3"}])
    return {"template": {"spec": pod}}


def _job(result) -> dict:
    return result.one(JOB).inputs


def test_declares_one_child_job_parented_to_the_component(run) -> None:
    result = run(lambda: GpuJob("train", spec=job_spec()))
    component = result.one(TYPE_TOKEN, "train")
    assert TYPE_TOKEN == "eks-gpu:index:GpuJob"
    assert [r.type for r in result.children_of(component)] == [JOB]


def test_child_job_spec_is_exactly_the_placed_spec(run) -> None:
    assert _job(run(lambda: GpuJob("train", spec=job_spec())))["spec"] == {
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "train",
                        "image": "nvcr.io/nvidia/pytorch:24.08-py3",
                        "resources": {"limits": {"nvidia.com/gpu": 1}, "requests": {"nvidia.com/gpu": 1}},
                        "securityContext": {"allowPrivilegeEscalation": False},
                    }
                ],
                "automountServiceAccountToken": False,
                "nodeSelector": {"GPU": "true"},
                "restartPolicy": "Never",
                "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                "tolerations": [TOLERATION],
            }
        }
    }


def test_indexed_job_settings_pass_through_untouched(run) -> None:
    spec = {
        "completionMode": "Indexed",
        "completions": 8,
        "parallelism": 2,
        "backoffLimit": 3,
        "ttlSecondsAfterFinished": 3600,
        **job_spec(restartPolicy="OnFailure"),
    }
    job = _job(run(lambda: GpuJob("sweep", spec=spec, gpus=2)))["spec"]
    assert {k: v for k, v in job.items() if k != "template"} == {
        "completionMode": "Indexed",
        "completions": 8,
        "parallelism": 2,
        "backoffLimit": 3,
        "ttlSecondsAfterFinished": 3600,
    }
    assert job["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert job["template"]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}


def test_typed_args_with_outputs_and_every_emitted_object_is_schema_valid(run) -> None:
    spec = k8s.batch.v1.JobSpecArgs(
        backoff_limit=1,
        template=k8s.core.v1.PodTemplateSpecArgs(
            metadata=k8s.meta.v1.ObjectMetaArgs(labels={"job": "train"}),
            spec=k8s.core.v1.PodSpecArgs(
                containers=[
                    k8s.core.v1.ContainerArgs(name="t", image=pulumi.Output.from_input("repo/train:1"))
                ]
            ),
        ),
    )
    result = run(lambda: GpuJob("train", GpuJobArgs(spec=spec, metadata={"namespace": "ml"})))
    kinds = []
    for r in result.resources:
        if r.type.startswith("kubernetes:"):
            validate_manifest(manifest_of(r.type, r.name, r.inputs), KUBERNETES_VERSION)
            kinds.append(r.inputs["kind"])
    assert kinds == ["Job"]
    pod = _job(result)["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == "repo/train:1"
    assert placeable_on(pod, [gpu_node(), system_node()]) == ["gpu"]


def test_not_waiting_for_completion_adds_skip_await_beside_the_users_annotations(run) -> None:
    metadata = {"namespace": "ml", "annotations": {"team": "ml"}}
    job = _job(run(lambda: GpuJob("t", spec=job_spec(), metadata=metadata, wait_for_completion=False)))
    assert job["metadata"] == {
        "namespace": "ml",
        "annotations": {"team": "ml", "pulumi.com/skipAwait": "true"},
    }
    waiting = _job(run(lambda: GpuJob("t", spec=job_spec(), metadata={**metadata, "name": "train"})))
    assert waiting["metadata"] == {**metadata, "name": "train"}


def _deadline(seconds: int = 7200, **pod: object) -> dict:
    return {**job_spec(**pod), "activeDeadlineSeconds": seconds}


def test_replace_unready_annotates_the_job_so_a_failed_one_is_replaced(run) -> None:
    metadata = {"name": "train", "annotations": {"team": "ml"}}
    job = _job(run(lambda: GpuJob("t", spec=_deadline(), metadata=metadata, replace_unready=True)))
    assert job["metadata"] == {"name": "train", "annotations": {"team": "ml", REPLACE_UNREADY: "true"}}
    assert _job(run(lambda: GpuJob("t", spec=job_spec())))["metadata"] == {}  # default: no annotation


@pytest.mark.parametrize(
    ("spec", "kwargs", "waits"),
    [
        (_deadline(7200), {}, ("123m", "123m")),  # 7200 + 30 s grace + 120 s margin, rounded up
        (_deadline(1800), {}, ("60m", "60m")),  # the Job budget is longer already
        (_deadline(3600, terminationGracePeriodSeconds=600), {}, ("72m", "72m")),
        (_deadline(7200), {"create_timeout": "3h"}, ("3h", "123m")),
    ],
)
def test_with_replace_unready_pulumi_up_waits_until_the_job_cannot_still_be_running(
    run, spec: dict, kwargs: dict, waits: tuple
) -> None:
    # pulumi-kubernetes replaces any live Job that is not Complete (provider.go Diff), a running
    # one too: the wait must outlast activeDeadlineSeconds, so a later pulumi up finds it
    # completed or failed (DeadlineExceeded), never running.
    job = run(lambda: GpuJob("t", spec=spec, replace_unready=True, **kwargs)).one(JOB)
    assert job.custom_timeouts[:2] == waits


@pytest.mark.parametrize(
    ("spec", "kwargs", "message"),
    [
        (job_spec(), {}, r"replace_unready=True needs spec.activeDeadlineSeconds, a plain number"),
        (
            {**job_spec(), "activeDeadlineSeconds": pulumi.Output.from_input(600)},
            {},
            r"replace_unready=True needs spec.activeDeadlineSeconds, a plain number of seconds \(not an Output\)",
        ),
        (
            {**_deadline(), "suspend": True},
            {},
            r"replace_unready=True with spec.suspend True: .*allowed: false or unset",
        ),
        (
            _deadline(terminationGracePeriodSeconds=pulumi.Output.from_input(30)),
            {},
            r"needs spec.template.spec.terminationGracePeriodSeconds unset or a plain whole number",
        ),
        (
            _deadline(),
            {"update_timeout": "1h"},
            r"update_timeout '1h' is shorter than replace_unready=True needs: at least 7350s",
        ),
        (_deadline(), {"wait_for_completion": False}, "replace_unready=True needs wait_for_completion"),
        (_deadline(), {"replace_unready": "yes"}, "replace_unready must be true or false"),
        (
            _deadline(),
            {"metadata": {"annotations": {REPLACE_UNREADY: "false"}}},
            r"is 'false' but replace_unready=True means 'true'",
        ),
    ],
)
def test_replace_unready_is_refused_where_it_could_replace_a_running_job(
    run, spec: dict, kwargs: dict, message: str
) -> None:
    caught: list[str] = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            GpuJob("t", spec=spec, **{"replace_unready": True, **kwargs})
        caught.append(str(raised.value))

    assert run(program).resources == []
    assert re.search(message, caught[0]), caught[0]


def test_the_annotation_written_by_hand_is_refused_in_favour_of_replace_unready(run) -> None:
    caught: list[str] = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            GpuJob("t", spec=job_spec(), metadata={"annotations": {REPLACE_UNREADY: "true"}})
        caught.append(str(raised.value))

    assert run(program).resources == []
    assert caught == [
        "GpuJob('t'): metadata.annotations['pulumi.com/replaceUnready'] 'true': use replace_unready=True "
        "instead, which also makes sure pulumi-kubernetes can never replace the Job while it still runs; "
        "allowed here: 'false' or unset"
    ]


def test_the_child_job_is_replaced_on_immutable_fields_and_deleted_first(run) -> None:
    # pulumi-kubernetes patches these in place and the API refuses the patch; a
    # create-before-delete replacement of an auto-named Job would run it twice.
    job = run(lambda: GpuJob("t", spec=job_spec())).one(JOB)
    assert job.replace_on_changes == list(REPLACE_ON_CHANGES)
    assert set(REPLACE_ON_CHANGES) >= {
        "spec.completionMode",
        "spec.podFailurePolicy",
        "spec.backoffLimitPerIndex",
    }
    assert job.delete_before_replace is True


def test_the_users_replace_options_are_merged_into_the_child_job(run) -> None:
    opts = pulumi.ResourceOptions(replace_on_changes=["spec.backoffLimit"], delete_before_replace=False)
    job = run(lambda: GpuJob("t", spec=job_spec(), opts=opts)).one(JOB)
    assert job.replace_on_changes == ["spec.backoffLimit", *REPLACE_ON_CHANGES]
    assert job.delete_before_replace is False  # yours wins


def test_not_waiting_with_a_fixed_name_is_refused_before_anything_is_declared(run) -> None:
    caught: list[str] = []

    def program() -> None:
        for metadata in ({"name": "train"}, {"name": pulumi.Output.from_input("train")}):
            with pytest.raises(PodSpecError) as raised:
                GpuJob("t", spec=job_spec(), metadata=metadata, wait_for_completion=False)
            caught.append(str(raised.value))

    assert run(program).resources == []
    assert len(caught) == 2
    assert all("fixed metadata.name" in message and "AlreadyExists" in message for message in caught)


def test_not_waiting_with_a_name_inside_output_metadata_fails_when_known(run) -> None:
    with pytest.raises(Exception, match=r"fixed metadata\.name"):
        run(
            lambda: GpuJob(
                "t",
                spec=job_spec(),
                metadata=pulumi.Output.from_input({"name": "train"}),
                wait_for_completion=False,
            )
        )


def test_args_as_the_provider_hands_them_over_camel_case_and_floats(run) -> None:
    args = {"spec": job_spec(), "gpus": 2.0, "securityProfile": "restricted", "waitForCompletion": False}
    job = _job(run(lambda: GpuJob("t", args)))
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 2}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert job["metadata"] == {"annotations": {"pulumi.com/skipAwait": "true"}}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"spec": job_spec(restartPolicy="Always")}, PodSpecError, "the API refuses Always for Jobs"),
        (
            {"spec": {**job_spec(), "replicas": 2}},
            PodSpecError,
            r"not a Job spec: unknown field\(s\) \['replicas'\]",
        ),
        ({"spec": job_spec(), "gpus": 1.5}, PodSpecError, "gpus must be a whole number >= 1"),
        (
            {"spec": job_spec(nodeSelector={"GPU": "false"})},
            PodSpecError,
            "contradicts the GPU placement contract",
        ),
        ({"spec": job_spec(), "pool": "training"}, PodSpecError, "the platform exports no GPU pools"),
        ({"spec": job_spec(), "security_profile": "strict"}, PodSpecError, "security_profile must be one of"),
        (
            {"spec": job_spec(), "wait_for_completion": "no"},
            PodSpecError,
            "wait_for_completion must be true or false",
        ),
        (
            {
                "spec": job_spec(),
                "metadata": {"annotations": {"pulumi.com/skipAwait": "false"}},
                "wait_for_completion": False,
            },
            PodSpecError,
            r"metadata.annotations\['pulumi.com/skipAwait'\] is 'false' but wait_for_completion=False means 'true'",
        ),
        ({"spec": job_spec(), "completions": 3}, TypeError, "unexpected keyword argument 'completions'"),
    ],
)
def test_bad_input_is_refused_before_anything_is_declared(
    run, kwargs: dict, error: type, message: str
) -> None:
    caught = []

    def program() -> None:
        with pytest.raises(error) as raised:
            GpuJob("bad", **kwargs)
        caught.append(str(raised.value))

    assert run(program).resources == []
    assert caught[0].startswith("GpuJob('bad'): ")
    assert re.search(message, caught[0]), caught[0]


# --- property: over generated pod specs, the Job is valid, lands only on GPU nodes, keeps the user's entries ---

_name = st.from_regex(r"[a-z][a-z0-9]{0,8}", fullmatch=True)
_security = st.fixed_dictionaries(
    {},
    optional={
        "runAsUser": st.integers(0, 70000),
        "runAsNonRoot": st.booleans(),
        "privileged": st.booleans(),
        "capabilities": st.fixed_dictionaries(
            {"add": st.lists(st.sampled_from(["SYS_ADMIN", "NET_ADMIN"]), max_size=1)}
        ),
    },
)
_container = st.builds(
    lambda gpu, security: {
        **({"resources": {"limits": {"nvidia.com/gpu": gpu}}} if gpu else {}),
        **({"securityContext": security} if security is not None else {}),
    },
    st.one_of(st.none(), st.integers(1, 4)),
    st.one_of(st.none(), _security),
)
_pod = st.builds(
    lambda names, containers, extra: {
        "containers": [
            {"name": n, "image": "repo/i:1", **c} for n, c in zip(names, containers, strict=False)
        ],
        **extra,
    },
    st.lists(_name, min_size=4, max_size=4, unique=True),
    st.lists(_container, min_size=1, max_size=4),
    st.fixed_dictionaries(
        {},
        optional={
            "restartPolicy": st.sampled_from(["Never", "OnFailure"]),
            "nodeSelector": st.dictionaries(_name.filter(lambda k: k != "GPU"), _name, max_size=3),
            "securityContext": _security.map(
                lambda s: {k: v for k, v in s.items() if k in ("runAsUser", "runAsNonRoot")}
            ),
            "tolerations": st.lists(
                st.fixed_dictionaries({"key": _name, "operator": st.just("Exists")}), max_size=2
            ),
        },
    ),
)


def _gpu_node_for(pod: dict) -> Node:
    """A GPU node with plenty of GPUs and the labels the user's own nodeSelector asks for."""
    labels = {**pod.get("nodeSelector", {}), **DEFAULT_PLACEMENT.node_labels()}
    return Node(
        "gpu", labels=labels, taints=(DEFAULT_PLACEMENT.node_taint(),), allocatable={"nvidia.com/gpu": 64}
    )


@settings(max_examples=150, deadline=None)
@given(pod=_pod)
def test_property_every_generated_job_is_valid_and_lands_only_on_gpu_nodes(pod: dict) -> None:
    spec = place_job_spec({"template": {"spec": pod}})
    placed = spec["template"]["spec"]
    validate_manifest(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec}, KUBERNETES_VERSION
    )
    assert placeable_on(placed, [_gpu_node_for(pod), system_node(**pod.get("nodeSelector", {}))]) == ["gpu"]
    assert placed["restartPolicy"] == pod.get("restartPolicy", "Never")
    assert placed["tolerations"].count(TOLERATION) == 1
    assert all(t in placed["tolerations"] for t in pod.get("tolerations", []))
    assert {**pod.get("nodeSelector", {}), "GPU": "true"} == placed["nodeSelector"]
    for before, after in zip(pod["containers"], placed["containers"], strict=True):
        security = after.get("securityContext", {})
        for key, value in (before.get("securityContext") or {}).items():
            if key == "capabilities":  # restricted adds drop: [ALL] beside the user's add
                assert security[key]["add"] == value["add"]
            else:
                assert security[key] == value  # the user's values always win
        if security.get("privileged") or "SYS_ADMIN" in security.get("capabilities", {}).get("add", []):
            assert "allowPrivilegeEscalation" not in security  # the API would refuse it
        limits = after.get("resources", {}).get("limits", {})
        assert limits.get("nvidia.com/gpu") == after.get("resources", {}).get("requests", {}).get(
            "nvidia.com/gpu"
        )


def _refused(run, **kwargs: object) -> str:
    """The refusal GpuJob gives for ``kwargs``, after checking nothing was declared."""
    caught: list[str] = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            GpuJob("t", **kwargs)
        caught.append(str(raised.value))

    assert run(program).resources == []
    return caught[0]


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        (
            {SKIP_AWAIT: "true"},
            r"\['pulumi.com/skipAwait'\] 'true' beside replace_unready=True: pulumi up would",
        ),
        (
            {SKIP_AWAIT: pulumi.Output.from_input("true")},
            r"\['pulumi.com/skipAwait'\] UNKNOWN beside replace",
        ),
        (
            {WAIT_FOR: "condition=Complete"},
            r"\['pulumi.com/waitFor'\] beside replace_unready=True: it replaces",
        ),
        ({WAIT_FOR: "jsonpath={.status.active}=1"}, r"replace the running Job"),
    ],
)
def test_replace_unready_is_refused_beside_an_annotation_that_ends_the_wait_early(
    run, annotations: dict, message: str
) -> None:
    # pulumi-kubernetes: skipAwait returns at once, waitFor replaces the wait for completion
    # (metadata/overrides.go ReadyCondition, await/await.go `!custom`); then the next up's
    # Diff replaces the Job that is not Complete (provider.go), a running one too.
    error = _refused(run, spec=_deadline(), metadata={"annotations": annotations}, replace_unready=True)
    assert re.search(message, error), error


def test_replace_unready_beside_skip_await_in_output_metadata_fails_when_known(run) -> None:
    metadata = pulumi.Output.from_input({"annotations": {SKIP_AWAIT: "true"}})
    with pytest.raises(Exception, match=r"'pulumi.com/skipAwait'\] 'true' beside replace_unready=True"):
        run(lambda: GpuJob("t", spec=_deadline(), metadata=metadata, replace_unready=True))


def test_the_users_own_skip_await_gets_the_fixed_name_rule(run) -> None:
    error = _refused(run, spec=job_spec(), metadata={"name": "train", "annotations": {SKIP_AWAIT: "true"}})
    assert "fixed metadata.name" in error and "AlreadyExists" in error
    auto_named = _job(
        run(lambda: GpuJob("t", spec=job_spec(), metadata={"annotations": {SKIP_AWAIT: "true"}}))
    )
    assert auto_named["metadata"] == {"annotations": {SKIP_AWAIT: "true"}}
    not_skipping = {"name": "train", "annotations": {SKIP_AWAIT: "false"}}
    assert _job(run(lambda: GpuJob("t", spec=job_spec(), metadata=not_skipping)))["metadata"] == not_skipping


def test_wait_for_beside_not_waiting_is_refused_since_pulumi_kubernetes_ignores_it(run) -> None:
    error = _refused(
        run,
        spec=job_spec(),
        metadata={"annotations": {WAIT_FOR: "condition=Complete"}},
        wait_for_completion=False,
    )
    assert error == (
        "GpuJob('t'): metadata.annotations['pulumi.com/waitFor'] beside wait_for_completion=False: "
        "pulumi-kubernetes ignores it under pulumi.com/skipAwait; drop the annotation, or wait_for_completion=False"
    )
    waiting = {"annotations": {WAIT_FOR: "condition=Complete"}}
    assert _job(run(lambda: GpuJob("t", spec=job_spec(), metadata=waiting)))["metadata"] == waiting
