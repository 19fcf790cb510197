"""Security profiles for GPU pods: secure defaults that never stop the images people use."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from infra.workloads.values import UNKNOWN, PodSpecError, known

SECURITY_PROFILES = ("baseline", "restricted", "none")
"""``baseline``: root images start; ``restricted``: non-root, no capabilities; ``none``: nothing added."""

_SECCOMP: Mapping[str, Any] = {"type": "RuntimeDefault"}
# Inference and training pods seldom talk to the Kubernetes API: no token unless asked for.
POD_DEFAULTS: Mapping[str, Any] = {"automountServiceAccountToken": False}
# What each profile sets, and why: docs/components.md, "Security profiles". restricted drops every
# capability: GPU workloads need none (the device plugin hands the GPU device files to the container).
POD_SECURITY: Mapping[str, Mapping[str, Any]] = {
    "baseline": {"seccompProfile": _SECCOMP},
    "restricted": {"runAsNonRoot": True, "seccompProfile": _SECCOMP},
}
CONTAINER_SECURITY: Mapping[str, Mapping[str, Any]] = {
    "baseline": {"allowPrivilegeEscalation": False},
    "restricted": {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": True,
        "seccompProfile": _SECCOMP,
    },
}
# The API refuses allowPrivilegeEscalation: false beside privileged: true or an added CAP_SYS_ADMIN
# (ValidateSecurityContext); the defaults stay away from SYS_ADMIN in either spelling.
SYS_ADMIN = ("SYS_ADMIN", "CAP_SYS_ADMIN")


def check_profile(security_profile: object) -> str | None:
    """The profile to apply (``None``: baseline, or restricted when the pod runs as non-root)."""
    if security_profile is not None and security_profile not in SECURITY_PROFILES:
        raise PodSpecError(
            f"security_profile must be one of {', '.join(map(repr, SECURITY_PROFILES))}, "
            f"got {security_profile!r}"
        )
    return security_profile  # type: ignore[return-value]


def _contexts(pod: Mapping[str, Any], where: str = "spec") -> list[tuple[str, Any]]:
    """(path, securityContext) of the pod, then of each container; UNKNOWN for what is not known yet."""
    found = [(f"{where}.securityContext", pod.get("securityContext"))]
    for field in ("initContainers", "containers"):
        items = pod.get(field)
        if not known(items):
            found.append((f"{where}.{field}", UNKNOWN))
            continue
        for index, container in enumerate(items or []):
            sc = container.get("securityContext") if isinstance(container, Mapping) else UNKNOWN
            found.append((f"{where}.{field}[{index}].securityContext", sc))
    return found


def runs_as_non_root(pod: Mapping[str, Any]) -> bool:
    """True when every container already runs as non-root (runAsNonRoot or a non-zero runAsUser), so
    restricted costs nothing: the image was never going to run as root."""
    (_, pod_sc), *containers = _contexts(pod)
    pod_sc = pod_sc or {}
    if not known(pod_sc) or not isinstance(pod_sc, Mapping) or not containers:
        return False
    for _, sc in containers:
        if not known(sc):
            return False
        user = (sc or {}).get("runAsUser", pod_sc.get("runAsUser"))
        non_root = (sc or {}).get("runAsNonRoot", pod_sc.get("runAsNonRoot"))
        non_zero_user = isinstance(user, int) and not isinstance(user, bool) and user != 0
        if not (non_zero_user or (non_root is True and user is None)):
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


def _container_defaults(
    profile: str, sc: Any, pod_sc: Mapping[str, Any], user_namespace: bool
) -> dict[str, Any]:
    """The defaults a container may take without becoming one the API or the kubelet refuses."""
    defaults = dict(CONTAINER_SECURITY[profile])
    if user_namespace:
        defaults.pop("runAsNonRoot", None)  # root is allowed there and most ML images need it
    sc = sc if isinstance(sc, Mapping) else {}
    caps = sc.get("capabilities") or {}
    added = caps.get("add") if known(caps) and isinstance(caps, Mapping) else UNKNOWN
    may_be_privileged = sc.get("privileged") not in (None, False)  # True, or not known yet
    if may_be_privileged or not known(added) or any(not known(c) or c in SYS_ADMIN for c in added or []):
        defaults.pop("allowPrivilegeEscalation")
    user = sc.get("runAsUser", pod_sc.get("runAsUser"))
    if not known(user) or user == 0:
        defaults.pop("runAsNonRoot", None)  # the kubelet would refuse to start an explicit root user
    return defaults


def _refuse_root_under_restricted(pod: Mapping[str, Any], where: str) -> None:
    """``restricted`` chosen beside an explicit root user, which that level forbids: refused, since
    quietly applying baseline instead would make ``restricted`` mean nothing."""
    for path, sc in _contexts(pod, where):
        if not known(sc) or not isinstance(sc, Mapping):
            continue
        user = sc.get("runAsUser")
        root_user = user == 0 and not isinstance(user, bool)
        if root_user or sc.get("runAsNonRoot") is False:
            setting = "runAsUser: 0" if root_user else "runAsNonRoot: false"
            raise PodSpecError(
                f"{path}.{setting} runs as root, which security_profile='restricted' forbids (Pod "
                "Security Standards: restricted); run as a non-root user (runAsUser: 1000) or use "
                "security_profile='baseline'"
            )


def apply_profile(pod: dict[str, Any], profile: str | None, where: str = "spec") -> str:
    """Fill ``pod`` (Kubernetes form, a copy the caller owns) with the profile's defaults."""
    user_namespace = pod.get("hostUsers") is False or not known(pod.get("hostUsers"))
    if profile == "restricted" and not user_namespace:
        _refuse_root_under_restricted(pod, where)
    if profile is None:
        profile = "restricted" if runs_as_non_root(pod) else "baseline"
    if profile == "none":
        return profile
    for key, value in POD_DEFAULTS.items():
        pod.setdefault(key, value)
    pod_defaults = dict(POD_SECURITY[profile])
    some_user_is_root = any(
        not known(sc) or (isinstance(sc, Mapping) and sc.get("runAsUser") in (0, UNKNOWN))
        for _, sc in _contexts(pod)
    )
    if user_namespace or some_user_is_root:
        pod_defaults.pop("runAsNonRoot", None)  # every container inherits it; one may run as root
    pod["securityContext"] = _merge(pod_defaults, pod.get("securityContext"))
    pod_sc = pod["securityContext"] if known(pod["securityContext"]) else {}
    for field in ("initContainers", "containers"):
        items = pod.get(field)
        for container in items if known(items) and isinstance(items, list) else []:
            if isinstance(container, dict) and known(container.get("securityContext")):
                sc = container.get("securityContext")
                container["securityContext"] = _merge(
                    _container_defaults(profile, sc, pod_sc, user_namespace), sc
                )
    return profile
