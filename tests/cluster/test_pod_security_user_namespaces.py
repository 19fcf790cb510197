"""``restricted`` with a root user in a user namespace: Pod Security 1.35 allows it, as the package assumes.

``infra.workloads.security`` adds no ``runAsNonRoot`` and accepts ``runAsUser: 0`` under
``security_profile="restricted"`` when the pod sets ``hostUsers: false``, because Pod
Security's restricted level relaxes runAsNonRoot and runAsUser for such a pod from policy
version 1.35 (``relaxPolicyForUserNamespacePod``, unconditional there). The real API server,
in a namespace enforcing ``restricted`` (latest), must accept the placed pod, and refuse the
same pod once ``hostUsers: false`` is gone: the relaxation is what lets it in. A namespace
pinned to an older policy (``enforce-version: v1.34``) refuses it even with ``hostUsers:
false``: the relaxation exists only in the 1.35 checks (k8s.io/pod-security-admission v0.35.4,
``policy/check_runAsNonRoot.go`` ``runAsNonRoot1_35``, ``check_runAsUser.go`` likewise).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.dynamic.exceptions import DynamicApiError

from infra.workloads.podspec import place_pod_spec
from localcluster.kube import Kube

NAMESPACE = "user-namespaces"
PINNED = "user-namespaces-v1-34"
OLDER_POLICY = "v1.34"
ROOT_POD = {
    "hostUsers": False,
    "containers": [{"name": "m", "image": "registry.invalid/m:1", "securityContext": {"runAsUser": 0}}],
}


def _pod(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "root-in-userns"}, "spec": spec}


@pytest.fixture(scope="module")
def restricted(kube: Kube) -> Any:
    kube.namespace(NAMESPACE, pod_security="restricted")
    yield NAMESPACE
    kube.delete_namespace(NAMESPACE)


def test_a_root_pod_in_a_user_namespace_passes_restricted(kube: Kube, restricted: str) -> None:
    placed = place_pod_spec(ROOT_POD, security_profile="restricted")
    assert placed["hostUsers"] is False and "runAsNonRoot" not in str(placed)  # the relaxation taken
    kube.apply(_pod(placed), restricted, dry_run=True)  # raises with the API server's refusal


def test_the_same_pod_without_hostusers_false_is_refused_by_pod_security(kube: Kube, restricted: str) -> None:
    placed = place_pod_spec(ROOT_POD, security_profile="restricted")
    del placed["hostUsers"]
    with pytest.raises(DynamicApiError) as refused:
        kube.apply(_pod(placed), restricted, dry_run=True)
    assert refused.value.status == 403, refused.value.summary()
    message = json.loads(refused.value.body)["message"]
    assert 'violates PodSecurity "restricted:latest"' in message, message
    assert "runAsUser=0" in message and "runAsNonRoot != true" in message, message


@pytest.fixture(scope="module")
def restricted_at_an_older_version(kube: Kube) -> Any:
    kube.namespace(PINNED, pod_security="restricted", version=OLDER_POLICY)
    yield PINNED
    kube.delete_namespace(PINNED)


def test_a_namespace_pinned_below_policy_1_35_refuses_it_even_in_a_user_namespace(
    kube: Kube, restricted_at_an_older_version: str
) -> None:
    placed = place_pod_spec(ROOT_POD, security_profile="restricted")
    assert placed["hostUsers"] is False
    with pytest.raises(DynamicApiError) as refused:
        kube.apply(_pod(placed), restricted_at_an_older_version, dry_run=True)
    assert refused.value.status == 403, refused.value.summary()
    message = json.loads(refused.value.body)["message"]
    assert f'violates PodSecurity "restricted:{OLDER_POLICY}"' in message, message
    assert "runAsUser=0" in message and "runAsNonRoot != true" in message, message
