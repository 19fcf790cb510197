"""Security profiles for GPU pods: secure defaults that never stop the images people use.

Most ML images (CUDA, PyTorch, vLLM, Triton) run as root. ``runAsNonRoot: true``
makes the kubelet refuse them ("image will run as root"), so the default profile is
the Pod Security Standards' *baseline*, hardened only where a root image cannot
notice; *restricted* applies when the pod already runs as non-root, or on request.
The user's own values always win, key by key, and the defaults never produce a
combination the Kubernetes API refuses.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from infra.workloads.values import UNKNOWN, PodSpecError, known

SECURITY_PROFILES = ("baseline", "restricted", "none")
"""``baseline``: root images start; ``restricted``: non-root, no capabilities; ``none``: nothing added."""

RUNTIME_DEFAULT_SECCOMP: Mapping[str, Any] = {"type": "RuntimeDefault"}
# Inference and training pods seldom talk to the Kubernetes API: no token unless asked for.
POD_DEFAULTS: Mapping[str, Any] = {"automountServiceAccountToken": False}
# baseline: the container runtime's seccomp filter (what Docker applies by default) and
# no setuid escalation. A root process keeps its default capabilities, so images that
# chown, bind low ports or switch users on start still start.
BASELINE_POD_SECURITY: Mapping[str, Any] = {"seccompProfile": RUNTIME_DEFAULT_SECCOMP}
BASELINE_CONTAINER_SECURITY: Mapping[str, Any] = {"allowPrivilegeEscalation": False}
# restricted: the Pod Security Standards' restricted profile. GPU workloads need no
# capabilities: the device plugin hands the GPU device files to the container.
RESTRICTED_POD_SECURITY: Mapping[str, Any] = {"runAsNonRoot": True, "seccompProfile": RUNTIME_DEFAULT_SECCOMP}
RESTRICTED_CONTAINER_SECURITY: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "runAsNonRoot": True,
    "seccompProfile": RUNTIME_DEFAULT_SECCOMP,
}
# allowPrivilegeEscalation: false is refused by the API beside privileged: true or an added
# CAP_SYS_ADMIN (ValidateSecurityContext); the defaults stay away from SYS_ADMIN in either spelling.
SYS_ADMIN = ("SYS_ADMIN", "CAP_SYS_ADMIN")


def check_profile(security_profile: object) -> str | None:
    """The profile to apply (``None``: baseline, or restricted when the pod runs as non-root)."""
    if security_profile is not None and security_profile not in SECURITY_PROFILES:
        raise PodSpecError(
            f"security_profile must be one of {', '.join(map(repr, SECURITY_PROFILES))}, "
            f"got {security_profile!r}"
        )
    return security_profile  # type: ignore[return-value]


def _containers(pod: Mapping[str, Any]) -> list[Any] | Any:
    """Every init container and container, or UNKNOWN if a list is not known yet."""
    found: list[Any] = []
    for field in ("initContainers", "containers"):
        items = pod.get(field)
        if not known(items):
            return UNKNOWN
        found.extend(items or [])
    return found


def runs_as_non_root(pod: Mapping[str, Any]) -> bool:
    """True when every container already runs as non-root (runAsNonRoot or a non-zero runAsUser).

    Then restricted costs nothing: the image was never going to run as root.
    """
    pod_sc = pod.get("securityContext") or {}
    containers = _containers(pod)
    if not known(pod_sc) or not isinstance(pod_sc, Mapping) or not known(containers) or not containers:
        return False
    for container in containers:
        if not isinstance(container, Mapping) or not known(container.get("securityContext")):
            return False
        sc = container.get("securityContext") or {}
        user = sc.get("runAsUser", pod_sc.get("runAsUser"))
        non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
        if isinstance(user, int) and not isinstance(user, bool) and user != 0:
            continue
        if non_root is True and user is None:
            continue
        return False
    return True


def _merge(defaults: Mapping[str, Any], user: Any) -> Any:
    """User keys win; defaults fill only what the user left out (``capabilities`` one level down)."""
    if not known(user) or (user is not None and not isinstance(user, Mapping)):
        return user
    merged = copy.deepcopy(dict(defaults))
    user = dict(user or {})
    caps = user.get("capabilities")
    if "capabilities" in merged and known(caps) and isinstance(caps, Mapping):
        combined = {**merged["capabilities"], **caps}
        mine, ours = caps.get("drop"), merged["capabilities"].get("drop")
        if known(mine) and isinstance(mine, list) and ours:
            # restricted requires ALL among the dropped: a user's own drop list
            # (["NET_RAW"]) is kept and ALL added beside it, not replaced by it.
            combined["drop"] = [*mine, *(c for c in ours if c not in mine)]
        user["capabilities"] = combined
    merged.update(user)
    return merged


def in_user_namespace(pod: Mapping[str, Any]) -> bool:
    """True if the pod runs in a user namespace (``hostUsers: false``), or may (not known yet).

    Pod Security's restricted level allows root there from policy version 1.35
    (pod-security-admission ``policy/check_runAsNonRoot.go`` and ``check_runAsUser.go``,
    ``relaxPolicyForUserNamespacePod``): root in the pod is not root on the node. An
    unknown value counts as one, so nothing is refused or added for it before it is known.
    """
    host_users = pod.get("hostUsers")
    return host_users is False or not known(host_users)


def _container_defaults(
    profile: str, sc: Any, pod_sc: Mapping[str, Any], user_namespace: bool = False
) -> dict[str, Any]:
    """The defaults a container may take without becoming one the API or the kubelet refuses."""
    defaults = dict(RESTRICTED_CONTAINER_SECURITY if profile == "restricted" else BASELINE_CONTAINER_SECURITY)
    if user_namespace:
        defaults.pop("runAsNonRoot", None)  # root is allowed there and most ML images need it
    sc = sc if isinstance(sc, Mapping) else {}
    privileged = sc.get("privileged")
    caps = sc.get("capabilities") or {}
    added = caps.get("add") if known(caps) and isinstance(caps, Mapping) else UNKNOWN
    may_be_privileged = privileged not in (None, False)  # True, or not known yet
    may_add_sys_admin = not known(added) or any(not known(c) or c in SYS_ADMIN for c in added or [])
    if may_be_privileged or may_add_sys_admin:
        defaults.pop("allowPrivilegeEscalation")
    user = sc.get("runAsUser", pod_sc.get("runAsUser"))
    if not known(user) or user == 0:
        defaults.pop("runAsNonRoot", None)  # the kubelet would refuse to start an explicit root user
    return defaults


def _some_user_is_root(pod: Mapping[str, Any]) -> bool:
    """True if the pod or any container sets runAsUser 0 (or one not known yet)."""
    pod_sc = pod.get("securityContext")
    if not known(pod_sc) or (isinstance(pod_sc, Mapping) and pod_sc.get("runAsUser") in (0, UNKNOWN)):
        return True
    containers = _containers(pod)
    if not known(containers):
        return True
    for container in containers:
        sc = container.get("securityContext") if isinstance(container, Mapping) else UNKNOWN
        if not known(sc) or (isinstance(sc, Mapping) and sc.get("runAsUser") in (0, UNKNOWN)):
            return True
    return False


def _refuse_root_under_restricted(pod: Mapping[str, Any], where: str) -> None:
    """``restricted`` chosen explicitly beside an explicit root user: refused, not weakened.

    The Pod Security Standards' restricted level forbids ``runAsUser: 0`` and
    ``runAsNonRoot: false`` outside a user namespace; a namespace enforcing it would
    refuse the pod, and quietly applying baseline instead would make ``restricted``
    mean nothing. Not called for pods with ``hostUsers: false`` (:func:`in_user_namespace`).
    """
    pod_sc = pod.get("securityContext")
    places: list[tuple[str, Any]] = [(f"{where}.securityContext", pod_sc)]
    for field in ("initContainers", "containers"):
        items = pod.get(field)
        if known(items) and isinstance(items, list):
            for index, container in enumerate(items):
                sc = container.get("securityContext") if isinstance(container, Mapping) else None
                places.append((f"{where}.{field}[{index}].securityContext", sc))
    for path, sc in places:
        if not known(sc) or not isinstance(sc, Mapping):
            continue
        user, non_root = sc.get("runAsUser"), sc.get("runAsNonRoot")
        if (user == 0 and not isinstance(user, bool)) or non_root is False:
            setting = "runAsUser: 0" if user == 0 and not isinstance(user, bool) else "runAsNonRoot: false"
            raise PodSpecError(
                f"{path}.{setting} runs as root, which security_profile='restricted' forbids (Pod "
                "Security Standards: restricted); run as a non-root user (runAsUser: 1000) or use "
                "security_profile='baseline'"
            )


def apply_profile(pod: dict[str, Any], profile: str | None, where: str = "spec") -> str:
    """Fill ``pod`` (Kubernetes form, a copy the caller owns) with the profile's defaults.

    Returns the profile applied (``None`` resolves to baseline or restricted). An
    explicit ``restricted`` beside a root user is refused, except in a user namespace
    (``hostUsers: false``), where restricted allows root and ``runAsNonRoot`` is not added.
    """
    user_namespace = in_user_namespace(pod)
    if profile == "restricted" and not user_namespace:
        _refuse_root_under_restricted(pod, where)
    if profile is None:
        profile = "restricted" if runs_as_non_root(pod) else "baseline"
    if profile == "none":
        return profile
    for key, value in POD_DEFAULTS.items():
        pod.setdefault(key, value)
    pod_defaults = dict(RESTRICTED_POD_SECURITY if profile == "restricted" else BASELINE_POD_SECURITY)
    pod_sc = pod.get("securityContext")
    if user_namespace or _some_user_is_root(pod):
        pod_defaults.pop("runAsNonRoot", None)  # every container inherits it; one may run as root
    pod["securityContext"] = _merge(pod_defaults, pod_sc)
    pod_sc = pod["securityContext"] if known(pod["securityContext"]) else {}
    for field in ("initContainers", "containers"):
        items = pod.get(field)
        if not known(items) or not isinstance(items, list):
            continue
        for container in items:
            if isinstance(container, dict) and known(container.get("securityContext")):
                sc = container.get("securityContext")
                defaults = _container_defaults(profile, sc, pod_sc, user_namespace)
                container["securityContext"] = _merge(defaults, sc)
    return profile
