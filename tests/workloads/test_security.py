"""Security profiles: the images people use start, and hardening goes as far as the spec allows."""

from __future__ import annotations

import pytest

from infra import GpuDeployment, PodSpecError
from infra.workloads.podspec import place_pod_spec
from infra.workloads.security import SECURITY_PROFILES
from tests.conftest import deployment_spec

ROOT_IMAGE = {"containers": [{"name": "vllm", "image": "vllm/vllm-openai:v0.6.3"}]}
RESTRICTED_CONTAINER = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": {"type": "RuntimeDefault"},
}


def _security(pod: dict) -> tuple:
    return (
        pod.get("automountServiceAccountToken"),
        pod.get("securityContext"),
        [c.get("securityContext") for c in pod.get("initContainers", [])],
        [c.get("securityContext") for c in pod["containers"]],
    )


def test_by_default_a_root_image_gets_baseline_which_lets_it_start() -> None:
    # No runAsNonRoot (the kubelet would refuse a root image), no dropped capabilities
    # (root entrypoints chown and switch users); seccomp and no setuid escalation.
    assert _security(place_pod_spec(ROOT_IMAGE)) == (
        False,
        {"seccompProfile": {"type": "RuntimeDefault"}},
        [],
        [{"allowPrivilegeEscalation": False}],
    )


@pytest.mark.parametrize(
    "pod",
    [
        {"securityContext": {"runAsUser": 1000}, "containers": [{"name": "m"}]},
        {"securityContext": {"runAsNonRoot": True}, "containers": [{"name": "m"}]},
        {"containers": [{"name": "m", "securityContext": {"runAsUser": 1000}}]},
    ],
)
def test_a_spec_that_already_runs_as_non_root_gets_restricted(pod: dict) -> None:
    placed = place_pod_spec(pod)
    user = pod["containers"][0].get("securityContext", {})
    assert placed["containers"][0]["securityContext"] == {**RESTRICTED_CONTAINER, **user}
    assert placed["securityContext"] == {
        "runAsNonRoot": True,
        "seccompProfile": {"type": "RuntimeDefault"},
        **pod.get("securityContext", {}),
    }


def test_restricted_needs_every_container_non_root_init_containers_included() -> None:
    pod = {
        "initContainers": [{"name": "fetch", "image": "amazon/aws-cli"}],
        "containers": [{"name": "m", "securityContext": {"runAsUser": 1000}}],
    }
    placed = place_pod_spec(pod)
    assert placed["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert placed["initContainers"][0]["securityContext"] == {"allowPrivilegeEscalation": False}
    non_root = place_pod_spec({**pod, "securityContext": {"runAsUser": 1000}})
    assert non_root["initContainers"][0]["securityContext"] == RESTRICTED_CONTAINER


@pytest.mark.parametrize(
    ("pod", "path"),
    [
        (
            {"containers": [{"name": "a"}, {"name": "b", "securityContext": {"runAsUser": 0}}]},
            r"spec.containers\[1\].securityContext.runAsUser: 0 runs as root",
        ),
        (
            {"securityContext": {"runAsUser": 0}, "containers": [{"name": "a"}]},
            r"spec.securityContext.runAsUser: 0 runs as root",
        ),
        (
            {
                "initContainers": [{"name": "i", "securityContext": {"runAsNonRoot": False}}],
                "containers": [{"name": "a"}],
            },
            r"spec.initContainers\[0\].securityContext.runAsNonRoot: false runs as root",
        ),
    ],
)
def test_restricted_on_request_refuses_a_root_user(pod: dict, path: str) -> None:
    # The restricted level forbids root; weakening it quietly would make the choice meaningless.
    with pytest.raises(PodSpecError, match=path + r".*forbids \(Pod Security Standards: restricted\)"):
        place_pod_spec(pod, security_profile="restricted")
    place_pod_spec(pod)  # the default (baseline) still starts root images


def test_restricted_with_a_root_user_is_refused_before_anything_is_declared(run) -> None:
    caught: list[str] = []

    def program() -> None:
        spec = deployment_spec()
        spec["template"]["spec"]["securityContext"] = {"runAsUser": 0}
        with pytest.raises(PodSpecError) as raised:
            GpuDeployment("x", spec=spec, security_profile="restricted")
        caught.append(str(raised.value))

    assert run(program).resources == []
    assert caught[0].startswith("GpuDeployment('x'): spec.template.spec.securityContext.runAsUser: 0")


@pytest.mark.parametrize("user", [{"runAsUser": 0}, {"runAsNonRoot": False}, {}])
def test_restricted_in_a_user_namespace_allows_root_and_adds_no_run_as_non_root(user: dict) -> None:
    # Pod Security 1.35 relaxes runAsNonRoot/runAsUser for hostUsers: false
    # (pod-security-admission policy/check_runAsNonRoot.go, check_runAsUser.go)
    pod = {"hostUsers": False, "securityContext": user, "containers": [{"name": "m", "image": "i"}]}
    placed = place_pod_spec(pod, security_profile="restricted")
    assert placed["securityContext"] == {**user, "seccompProfile": {"type": "RuntimeDefault"}}
    assert placed["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def test_restricted_with_host_users_true_still_refuses_root() -> None:
    pod = {"hostUsers": True, "securityContext": {"runAsUser": 0}, "containers": [{"name": "m"}]}
    with pytest.raises(PodSpecError, match=r"spec.securityContext.runAsUser: 0 runs as root"):
        place_pod_spec(pod, security_profile="restricted")


def test_restricted_adds_all_to_the_capabilities_the_user_drops() -> None:
    pod = {"containers": [{"name": "m", "securityContext": {"capabilities": {"drop": ["NET_RAW"]}}}]}
    placed = place_pod_spec(pod, security_profile="restricted")
    assert placed["containers"][0]["securityContext"]["capabilities"] == {"drop": ["NET_RAW", "ALL"]}
    already = {"containers": [{"name": "m", "securityContext": {"capabilities": {"drop": ["ALL"]}}}]}
    assert place_pod_spec(already, security_profile="restricted")["containers"][0]["securityContext"][
        "capabilities"
    ] == {"drop": ["ALL"]}
    baseline = place_pod_spec(pod)  # baseline drops nothing of its own: yours as given
    assert baseline["containers"][0]["securityContext"]["capabilities"] == {"drop": ["NET_RAW"]}


def test_restricted_keeps_capabilities_the_user_adds_and_still_drops_the_rest() -> None:
    pod = {"containers": [{"name": "m", "securityContext": {"capabilities": {"add": ["NET_BIND_SERVICE"]}}}]}
    placed = place_pod_spec(pod, security_profile="restricted")
    assert placed["containers"][0]["securityContext"]["capabilities"] == {
        "drop": ["ALL"],
        "add": ["NET_BIND_SERVICE"],
    }


def test_an_explicit_baseline_stays_baseline_and_none_adds_nothing() -> None:
    non_root = {"securityContext": {"runAsUser": 1000}, "containers": [{"name": "m"}]}
    assert place_pod_spec(non_root, security_profile="baseline")["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False
    }
    none = place_pod_spec(ROOT_IMAGE, security_profile="none")
    assert _security(none) == (None, None, [], [None])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"security_profile": "strict"},
            r"security_profile must be one of 'baseline', 'restricted', 'none', got 'strict'",
        ),
    ],
)
def test_profile_names_are_checked(kwargs: dict, message: str) -> None:
    with pytest.raises(PodSpecError, match=message):
        place_pod_spec(ROOT_IMAGE, **kwargs)


def test_the_profiles_are_the_three_documented() -> None:
    assert SECURITY_PROFILES == ("baseline", "restricted", "none")


def test_gpu_deployment_refuses_an_unknown_profile_before_declaring(run) -> None:
    errors = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            GpuDeployment("x", spec=deployment_spec(), security_profile="Restricted")
        errors.append(str(raised.value))

    assert run(program).resources == []
    assert errors[0].startswith(
        "GpuDeployment('x'): security_profile must be one of 'baseline', 'restricted'"
    )


def test_gpu_deployment_passes_the_profile_through(run) -> None:
    result = run(lambda: GpuDeployment("x", spec=deployment_spec(), security_profile="restricted"))
    pod = result.one("kubernetes:apps/v1:Deployment").inputs["spec"]["template"]["spec"]
    assert pod["containers"][0]["securityContext"] == RESTRICTED_CONTAINER
