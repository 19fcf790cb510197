"""Every refusal the workloads package makes for Kubernetes' sake, asked of the real API server.

For each case, the package's verdict on the spec a user wrote (refused with a
``PodSpecError``, or placed) must be the API server's verdict on the same object
(a server-side dry-run apply): a spec we refuse must be one the API refuses, and
what we place must be accepted. A disagreement means a rule of ours is wrong.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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
# for that alone, and a wrong refusal of ours would pass as agreement.
JOB_TEMPLATE = {"metadata": {"labels": LABELS}, "spec": {**POD, "restartPolicy": "Never"}}


def _pod_with(**container: Any) -> dict[str, Any]:
    return {"containers": [{"name": "t", "image": "registry.invalid/t:1", **container}]}


def _gpus(quantity: object) -> dict[str, Any]:
    return _pod_with(resources={"limits": {"nvidia.com/gpu": quantity}})


def _with_pod(**pod: Any) -> dict[str, Any]:
    return {"metadata": {"labels": LABELS}, "spec": {**POD, "restartPolicy": "Never", **pod}}


def _deployment(**spec: Any) -> dict[str, Any]:
    return {"selector": {"matchLabels": LABELS}, "template": TEMPLATE, **spec}


# (kind, the spec as the user wrote it)
CASES: list[tuple[str, dict[str, Any]]] = [
    ("Pod", _pod_with(securityContext={"privileged": True, "allowPrivilegeEscalation": False})),
    (
        "Pod",
        _pod_with(
            securityContext={"capabilities": {"add": ["CAP_SYS_ADMIN"]}, "allowPrivilegeEscalation": False}
        ),
    ),
    ("Pod", _pod_with(securityContext={"privileged": True})),
    *[("Pod", _gpus(q)) for q in ["1.5", "500m", "1500m", "1e-1", "1000m", "1e0", "2", "+2", "0.9995", "1n"]],
    ("Pod", {"initContainers": [{"name": "t", "image": "i"}], "containers": [{"name": "t", "image": "i"}]}),
    (
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
    ),
    ("Deployment", _deployment(strategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}})),
    ("Deployment", _deployment(strategy={"rollingUpdate": {"maxSurge": "0%", "maxUnavailable": 0}})),
    (
        "Deployment",
        _deployment(selector={"matchExpressions": [{"key": "app", "operator": "In", "values": ["x"]}]}),
    ),
    ("Deployment", _deployment(selector={})),
    ("Deployment", _deployment(template=_with_pod(restartPolicy="Never"))),
    ("Deployment", _deployment(minReadySeconds=600)),
    ("Deployment", _deployment(replicas=-1)),
    ("Job", {"manualSelector": True, "template": JOB_TEMPLATE}),
    ("Job", {"manualSelector": True, "selector": {"matchLabels": {"app": "eval"}}, "template": JOB_TEMPLATE}),
    ("Job", {"manualSelector": True, "selector": {"matchLabels": LABELS}, "template": JOB_TEMPLATE}),
    ("Job", {"template": _with_pod(restartPolicy="Always")}),
    ("Job", {"podFailurePolicy": {"rules": []}, "template": _with_pod(restartPolicy="OnFailure")}),
    ("Job", {"podFailurePolicy": {"rules": []}, "podReplacementPolicy": "Failed", "template": JOB_TEMPLATE}),
    (
        "Job",
        {
            "podFailurePolicy": {"rules": []},
            "podReplacementPolicy": "TerminatingOrFailed",
            "template": JOB_TEMPLATE,
        },
    ),
    ("Job", {"podReplacementPolicy": "TerminatingOrFailed", "template": JOB_TEMPLATE}),
    ("Job", {"podReplacementPolicy": "Always", "template": JOB_TEMPLATE}),
    ("Job", {"completionMode": "Indexed", "template": JOB_TEMPLATE}),
    ("Job", {"completionMode": "indexed", "template": JOB_TEMPLATE}),
    ("Job", {"backoffLimitPerIndex": 1, "template": JOB_TEMPLATE}),
    ("Job", {"selector": {"matchLabels": LABELS}, "template": JOB_TEMPLATE}),
    ("Job", {"manualSelector": False, "selector": {"matchLabels": LABELS}, "template": JOB_TEMPLATE}),
    ("Job", {"completionMode": "Indexed", "completions": 4, "maxFailedIndexes": 1, "template": JOB_TEMPLATE}),
    (
        "Job",
        {
            "completionMode": "Indexed",
            "completions": 4,
            "backoffLimitPerIndex": 1,
            "maxFailedIndexes": 5,
            "template": JOB_TEMPLATE,
        },
    ),
    (
        "Job",
        {
            "completionMode": "Indexed",
            "completions": 4,
            "backoffLimitPerIndex": 1,
            "maxFailedIndexes": 4,
            "template": JOB_TEMPLATE,
        },
    ),
    ("Job", {"activeDeadlineSeconds": -1, "template": JOB_TEMPLATE}),
    ("Job", {"activeDeadlineSeconds": 0, "template": JOB_TEMPLATE}),
    ("Job", {"parallelism": -1, "template": JOB_TEMPLATE}),
]

PLACE: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "Pod": lambda spec: place_pod_spec(spec),
    "Deployment": lambda spec: place_deployment_spec(spec),
    "Job": lambda spec: place_job_spec(spec),
}
API_VERSION = {"Pod": "v1", "Deployment": "apps/v1", "Job": "batch/v1"}


def _object(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION[kind],
        "kind": kind,
        "metadata": {"name": "case", "labels": LABELS},
        "spec": spec,
    }


def _api_accepts(kube: Kube, kind: str, spec: dict[str, Any]) -> bool:
    try:
        kube.apply(_object(kind, spec), NAMESPACE, dry_run=True)
    except DynamicApiError as error:
        if error.status not in (400, 422):
            raise
        return False
    return True


@pytest.fixture(scope="module")
def namespace(kube: Kube):
    kube.namespace(NAMESPACE, pod_security="privileged")  # judge the API's rules, not Pod Security's
    yield NAMESPACE
    kube.delete_namespace(NAMESPACE)


@pytest.mark.parametrize(("kind", "spec"), CASES, ids=[f"{k}-{i}" for i, (k, _) in enumerate(CASES)])
def test_the_package_and_the_api_server_agree(
    kube: Kube, namespace: str, kind: str, spec: dict[str, Any]
) -> None:
    try:
        placed = PLACE[kind](spec)
    except PodSpecError as error:
        assert not _api_accepts(kube, kind, spec), f"we refuse what the API accepts: {error}"
        return
    assert _api_accepts(kube, kind, placed), "we placed a spec the API refuses"
