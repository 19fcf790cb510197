"""The Kubernetes rules the workloads package leaves to the API server, and the ones it keeps, asked of it.

``LEFT_TO_THE_API``: specs the package once refused for Kubernetes' sake. It now
places them with every value the user wrote kept, and the real API server (a
server-side dry-run apply) refuses the placed object with an error naming the
field, so the user still hears of it at preview or up (decision record 0010).
``DECIDED_HERE``: the package's verdict (refused with a ``PodSpecError``, or
placed) must be the API server's; a disagreement means a kept rule is wrong. A case
with a field is refused by both, each naming it: among them the selectors and Job
restart policies, kept because changing them replaces the object (decision 0010).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest
from kubernetes.dynamic.exceptions import DynamicApiError

from infra.workloads.deployment import place_deployment_spec
from infra.workloads.job import place_job_spec
from infra.workloads.podspec import PodSpecError, place_pod_spec
from localcluster.kube import Kube

NAMESPACE = "refusals"
LABELS = {"app": "train"}
POD = {"containers": [{"name": "t", "image": "registry.invalid/t:1"}]}
TEMPLATE = {"metadata": {"labels": LABELS}, "spec": POD}
# A Job's pods must restart Never or OnFailure: without it every Job case would be refused
# for that alone, and a wrong verdict of ours would pass as agreement.
JOB_TEMPLATE = {"metadata": {"labels": LABELS}, "spec": {**POD, "restartPolicy": "Never"}}


class Case(NamedTuple):
    kind: str
    spec: dict[str, Any]
    field: str = ""
    """The field the API's refusal names (decided here: the package's too, and it must refuse)."""
    name: str = "case"


def _pod_with(**container: Any) -> dict[str, Any]:
    return {"containers": [{"name": "t", "image": "registry.invalid/t:1", **container}]}


def _gpus(quantity: object) -> dict[str, Any]:
    return _pod_with(resources={"limits": {"nvidia.com/gpu": quantity}})


def _with_pod(**pod: Any) -> dict[str, Any]:
    return {"metadata": {"labels": LABELS}, "spec": {**POD, "restartPolicy": "Never", **pod}}


def _deployment(**spec: Any) -> dict[str, Any]:
    return {"selector": {"matchLabels": LABELS}, "template": TEMPLATE, **spec}


def _job(**spec: Any) -> dict[str, Any]:
    return {"template": JOB_TEMPLATE, **spec}


def _zero_rollout(surge: object) -> dict[str, Any]:
    return _deployment(strategy={"rollingUpdate": {"maxSurge": surge, "maxUnavailable": 0}})


SECURITY = "spec.containers[0].securityContext"
INDEXED = {"completionMode": "Indexed", "completions": 4}

LEFT_TO_THE_API: list[Case] = [
    Case("Pod", _pod_with(securityContext={"privileged": True, "allowPrivilegeEscalation": False}), SECURITY),
    Case(
        "Pod",
        _pod_with(
            securityContext={"capabilities": {"add": ["CAP_SYS_ADMIN"]}, "allowPrivilegeEscalation": False}
        ),
        SECURITY,
    ),
    Case(
        "Pod",
        {"initContainers": [{"name": "t", "image": "i"}], "containers": [{"name": "t", "image": "i"}]},
        "spec.initContainers[0].name",
    ),
    Case(
        "Pod",
        {
            "initContainers": [
                {
                    "name": "w",
                    "image": "i",
                    "resources": {"requests": {"nvidia.com/gpu": 1}, "limits": {"nvidia.com/gpu": 2}},
                }
            ],
            "containers": [{"name": "t", "image": "i"}],
        },
        "spec.initContainers[0].resources.requests",
    ),
    Case("Deployment", _zero_rollout(0), "spec.strategy.rollingUpdate.maxUnavailable"),
    Case("Deployment", _zero_rollout("0%"), "spec.strategy.rollingUpdate.maxUnavailable"),
    Case(
        "Deployment",
        _deployment(template=_with_pod(restartPolicy="Never")),
        "spec.template.spec.restartPolicy",
    ),
    Case(
        "Deployment",
        _deployment(minReadySeconds=120, progressDeadlineSeconds=120),
        "spec.progressDeadlineSeconds",
    ),
    Case("Deployment", _deployment(revisionHistoryLimit=-1), "spec.revisionHistoryLimit"),
    Case(
        "Deployment",
        _deployment(
            template=_with_pod(restartPolicy="Always", ephemeralContainers=[{"name": "d", "image": "i"}])
        ),
        "spec.template.spec.ephemeralContainers",
    ),
    Case(
        "Job",
        _job(podFailurePolicy={"rules": []}, podReplacementPolicy="TerminatingOrFailed"),
        "spec.podReplacementPolicy",
    ),
    Case("Job", _job(podReplacementPolicy="Always"), "spec.podReplacementPolicy"),
    Case("Job", _job(completionMode="indexed"), "spec.completionMode"),
    Case("Job", _job(backoffLimitPerIndex=1), "spec.backoffLimitPerIndex"),
    Case("Job", _job(**INDEXED, maxFailedIndexes=1), "spec.backoffLimitPerIndex"),
    Case("Job", _job(**INDEXED, backoffLimitPerIndex=1, maxFailedIndexes=5), "spec.maxFailedIndexes"),
    Case("Job", _job(activeDeadlineSeconds=-1), "spec.activeDeadlineSeconds"),
    Case("Job", _job(parallelism=-1), "spec.parallelism"),
    Case("Job", _job(backoffLimit=-1), "spec.backoffLimit"),
    Case("Pod", {"containers": []}, "spec.containers"),
    Case(  # the total (1) passes the GPU checks; the negative count is the API's
        "Pod",
        {"containers": [*_gpus(2)["containers"], {**_gpus(-1)["containers"][0], "name": "b"}]},
        "spec.containers[1].resources",
    ),
    Case(
        "Deployment",
        _deployment(template={"metadata": {"labels": LABELS}, "spec": {"containers": []}}),
        "spec.template.spec.containers",
    ),
    Case(
        "Pod",
        {
            **POD,
            "affinity": {
                "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
            },
        },
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
    ),
    # <name>-99, the last pod's hostname, is 64 characters: no DNS label
    Case("Job", _job(completionMode="Indexed", completions=100), "metadata.name", name="s" * 61),
    # Without manualSelector the API adds its generated controller-uid label, then judges the selector.
    Case("Job", _job(selector={"matchLabels": LABELS}), "spec.selector"),
    Case("Job", _job(manualSelector=False, selector={"matchLabels": LABELS}), "spec.selector"),
]

DECIDED_HERE: list[Case] = [
    Case(
        "Pod", _pod_with(securityContext={"privileged": True})
    ),  # the defaults add no allowPrivilegeEscalation
    *[
        Case("Pod", _gpus(q))
        for q in ["1.5", "500m", "1500m", "1e-1", "1000m", "1e0", "2", "+2", "0.9995", "1n"]
    ],
    Case("Deployment", _deployment(minReadySeconds=600)),  # the default deadline grows beyond it
    Case("Deployment", _deployment(replicas=-1)),
    Case("Deployment", {"template": TEMPLATE}),
    # Fields whose change replaces the object, the running one deleted first (decision 0010):
    # refused here, before anything is deleted, naming the field the API names.
    Case(
        "Deployment",
        _deployment(selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]}),
        "spec.template.metadata.labels",
    ),
    Case(
        "Deployment", _deployment(selector={"matchLabels": {"app": "eval"}}), "spec.template.metadata.labels"
    ),
    Case("Deployment", _deployment(selector={}), "spec.selector"),
    Case("Deployment", _deployment(selector={"matchLabels": {}, "matchExpressions": []}), "spec.selector"),
    Case("Job", _job(manualSelector=True), "spec.selector"),
    Case(
        "Job",
        _job(manualSelector=True, selector={"matchLabels": {"app": "eval"}}),
        "spec.template.metadata.labels",
    ),
    Case("Job", {"template": _with_pod(restartPolicy="Always")}, "spec.template.spec.restartPolicy"),
    Case(
        "Job",
        {"podFailurePolicy": {"rules": []}, "template": _with_pod(restartPolicy="OnFailure")},
        "spec.template.spec.restartPolicy",
    ),
    Case("Job", _job(selector={})),  # the generated labels match it: accepted
    Case("Job", _job(selector={"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]})),
    Case("Job", _job(manualSelector=True, selector={"matchLabels": LABELS})),
    Case("Job", _job(podFailurePolicy={"rules": []}, podReplacementPolicy="Failed")),
    Case("Job", _job(podReplacementPolicy="TerminatingOrFailed")),
    Case("Job", _job(completionMode="Indexed")),
    Case("Job", _job(**INDEXED, backoffLimitPerIndex=1, maxFailedIndexes=4)),
    Case("Job", _job(activeDeadlineSeconds=0)),
    Case("Job", {"template": {"metadata": {"labels": LABELS}, "spec": POD}}),  # restartPolicy: Never added
]

PLACE: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "Pod": lambda spec: place_pod_spec(spec),
    "Deployment": lambda spec: place_deployment_spec(spec),
    "Job": lambda spec: place_job_spec(spec),
}
API_VERSION = {"Pod": "v1", "Deployment": "apps/v1", "Job": "batch/v1"}


def kept(user: Any, placed: Any) -> bool:
    """Every value the user wrote is in ``placed`` as written (the package only adds)."""
    if isinstance(user, dict):
        return isinstance(placed, dict) and all(k in placed and kept(v, placed[k]) for k, v in user.items())
    if isinstance(user, list):
        return isinstance(placed, list) and len(placed) >= len(user) and all(map(kept, user, placed))
    return user == placed


def _refusal(kube: Kube, case: Case, spec: dict[str, Any]) -> str | None:
    """The API server's refusal of ``spec`` (a dry-run apply), or None if it accepts it."""
    manifest = {
        "apiVersion": API_VERSION[case.kind],
        "kind": case.kind,
        "metadata": {"name": case.name, "labels": LABELS},
        "spec": spec,
    }
    try:
        kube.apply(manifest, NAMESPACE, dry_run=True)
    except DynamicApiError as error:
        if error.status not in (400, 422):
            raise
        return error.summary()
    return None


@pytest.fixture(scope="module")
def namespace(kube: Kube):
    kube.namespace(NAMESPACE, pod_security="privileged")  # judge the API's rules, not Pod Security's
    yield NAMESPACE
    kube.delete_namespace(NAMESPACE)


def _ids(cases: list[Case]) -> list[str]:
    return [f"{case.kind}-{i}" for i, case in enumerate(cases)]


@pytest.mark.parametrize("case", LEFT_TO_THE_API, ids=_ids(LEFT_TO_THE_API))
def test_the_package_passes_it_through_and_the_api_server_refuses_it_naming_the_field(
    kube: Kube, namespace: str, case: Case
) -> None:
    placed = PLACE[case.kind](case.spec)
    assert kept(case.spec, placed), "the package changed what the user wrote"
    refusal = _refusal(kube, case, placed)
    assert refusal is not None, "the API server accepts it"
    assert case.field in refusal, refusal


@pytest.mark.parametrize("case", DECIDED_HERE, ids=_ids(DECIDED_HERE))
def test_the_package_and_the_api_server_agree(kube: Kube, namespace: str, case: Case) -> None:
    try:
        placed = PLACE[case.kind](case.spec)
    except PodSpecError as error:
        refusal = _refusal(kube, case, case.spec)
        assert refusal is not None, f"we refuse what the API accepts: {error}"
        assert case.field in str(error) and case.field in refusal, (str(error), refusal)
        return
    assert not case.field, f"the API refuses it naming {case.field}, and so should we"
    assert _refusal(kube, case, placed) is None, "we placed a spec the API refuses"
