"""Refuse x86-only images before a GPU node is paid for.

The GPU nodes are g5g (linux/arm64); an amd64-only image scales one up and dies with
``exec format error``. Each container image of a ``GpuDeployment``/``GpuJob`` is looked up
(:mod:`infra.workloads.oci`) once per process. What cannot be judged (unreachable, 429, no
credentials, no such tag yet) is a warning saying so, never a refusal; mode
``EKS_GPU_IMAGE_CHECK`` or config ``eks-gpu:imageCheck``: ``warn`` (default), ``strict``
(those become errors), ``off``. Registries are contacted only under a real engine; under
mocks or none, only loopback registries, and only when the mode is set explicitly.
``check_image_architecture=False`` on a component skips it there.
"""

from __future__ import annotations

import copy
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import pulumi

from infra.workloads.oci import (
    ARM64_PLATFORMS,
    EcrCredentials,
    Platforms,
    Reference,
    ReferenceError,
    RegistryClient,
    RegistryError,
    is_loopback,
    parse_reference,
)
from infra.workloads.sdk import real_engine
from infra.workloads.values import UNKNOWN
from infra.workloads.wire import to_wire

ENV_VAR = "EKS_GPU_IMAGE_CHECK"
CONFIG_NAMESPACE, CONFIG_KEY = "eks-gpu", "imageCheck"
MODES = ("strict", "warn", "off")
DEFAULT_MODE = "warn"
GPU_PLATFORM = "linux/arm64"
FIX = (
    "build for linux/arm64 with `docker buildx build --platform linux/arm64,linux/amd64`, "
    "or pick an arm64 tag"
)

# Verdict statuses.
ARM64 = "arm64"  # the image runs on the GPU nodes
NO_ARM64 = "no-arm64"  # refused: the registry says it has no linux/arm64
NOT_CHECKED = "not-checked"  # could not judge (offline, unreachable, 429, unauthorized, not found)
PENDING = "pending"  # an Output not known yet: checked when it is
OFF = "off"  # the check is turned off


class ImageArchitectureError(ValueError):
    """An image the GPU nodes cannot run (or, in strict mode, one that could not be checked)."""


@dataclass(frozen=True)
class ImageVerdict:
    """What the check found for one container's image; ``reason`` says why when it could not judge."""

    container: str
    image: str
    status: str
    platforms: tuple[str, ...] = ()
    reason: str = ""
    digest: str | None = None

    @property
    def refused(self) -> bool:
        return self.status == NO_ARM64

    def summary(self) -> str:
        """Short form for tables: ``arm64 ok``, ``amd64 only``, ``not checked (offline)``, ``check off``."""
        if self.status == ARM64:
            return "arm64 ok"
        if self.status == NO_ARM64:
            return f"{', '.join(_short(p) for p in self.platforms) or 'no platforms'} only"
        if self.status == OFF:
            return "check off"
        if self.status == PENDING:
            return "not checked (not known yet)"
        return f"not checked ({self.reason})"

    def message(self) -> str:
        """The sentence a user reads: the container, the image, what it has and what to do."""
        who = (
            f"container {self.container!r} image {self.image!r}"
            if self.container
            else f"image {self.image!r}"
        )
        if self.status == NO_ARM64:
            offers = ", ".join(self.platforms) or "no platform"
            return (
                f"{who} has no {GPU_PLATFORM} build (it offers: {offers}); the GPU nodes are {GPU_PLATFORM} "
                f"(g5g), so the pod would fail with `exec format error` after a GPU node started for it. "
                f"Fix: {FIX}"
            )
        if self.status == NOT_CHECKED:
            return f"{who} was NOT checked for {GPU_PLATFORM}: {self.reason}"
        return f"{who}: {self.summary()}"


def _short(platform: str) -> str:
    return platform[len("linux/") :] if platform.startswith("linux/") else platform


def runs_on_gpu_nodes(platform: str) -> bool:
    """linux/arm64 (variant none or v8): what Graviton2 (g5g) runs."""
    return platform in ARM64_PLATFORMS


# -- mode and engine ----------------------------------------------------------------------------


def image_check_mode() -> tuple[str, bool]:
    """(mode, explicit): ``EKS_GPU_IMAGE_CHECK`` wins over config ``eks-gpu:imageCheck``; default ``warn``."""
    value = os.environ.get(ENV_VAR)
    where = f"environment variable {ENV_VAR}"
    if not value:
        where = f"config {CONFIG_NAMESPACE}:{CONFIG_KEY}"
        try:
            value = pulumi.Config(CONFIG_NAMESPACE).get(CONFIG_KEY)
        except Exception:  # no project/stack settings at all (a plain script): no config
            value = None
    if not value:
        return DEFAULT_MODE, False
    mode = value.strip().lower()
    if mode not in MODES:
        raise ImageArchitectureError(f"{where} must be one of {', '.join(MODES)}, got {value!r}")
    return mode, True


# -- the checker ------------------------------------------------------------------------------------


class ImageChecker:
    """Looks images up once each (per instance) and turns the answers into verdicts.

    ``online``: None decides per lookup (real engine: any registry; otherwise loopback
    registries only, and only when the mode was set explicitly); True allows any
    registry (policy tooling, scripts); False allows loopback registries only.
    """

    def __init__(self, client: RegistryClient | None = None, *, online: bool | None = None) -> None:
        self.client = client or RegistryClient(credentials=EcrCredentials(_aws_profile()))
        self.online = online
        self._results: dict[str, Platforms | RegistryError] = {}
        self._down: dict[str, RegistryError] = {}
        self._lock = threading.Lock()

    def _offline_reason(self, ref: Reference) -> str | None:
        if self.online is True:
            return None
        if is_loopback(ref.host):
            if self.online is False or real_engine() or image_check_mode()[1]:
                return None
            return "offline"
        if self.online is None and real_engine():
            return None
        return "offline"

    def check(self, image: Any, container: str = "") -> ImageVerdict:
        """The verdict for one image reference (a string; anything else is pending)."""
        if not isinstance(image, str):
            return ImageVerdict(container, "<unknown>", PENDING, reason="not known yet")
        try:
            ref = parse_reference(image)
        except ReferenceError as error:
            return ImageVerdict(container, image, NOT_CHECKED, reason=str(error))
        offline = self._offline_reason(ref)
        if offline:
            return ImageVerdict(container, image, NOT_CHECKED, reason=offline)
        result = self.lookup(ref)
        if isinstance(result, RegistryError):
            return ImageVerdict(container, image, NOT_CHECKED, reason=_reason(result))
        if not result.platforms:  # nothing known: no ground to refuse on
            return ImageVerdict(
                container, image, NOT_CHECKED, reason="unexpected registry answer: no platform"
            )
        ok = any(runs_on_gpu_nodes(p) for p in result.platforms)
        return ImageVerdict(
            container, image, ARM64 if ok else NO_ARM64, result.platforms, digest=result.digest
        )

    def lookup(self, ref: Reference) -> Platforms | RegistryError:
        """The registry's answer for ``ref``, asked at most once per checker (failures too)."""
        key = str(ref)
        with self._lock:
            if key in self._results:
                return self._results[key]
            if ref.host in self._down:
                down = self._down[ref.host]
                return RegistryError(down.kind, f"{ref.host} unreachable earlier in this run: {down}")
            try:
                result: Platforms | RegistryError = self.client.platforms(ref)
            except RegistryError as error:
                result = error
                if error.kind == "unreachable":
                    self._down[ref.host] = error  # one timeout per dead registry, not one per image
            except Exception as error:  # a bug or an answer nobody foresaw: never fail the program
                result = RegistryError("protocol", f"{ref}: {type(error).__name__}: {error}")
            self._results[key] = result
            return result


def _reason(error: RegistryError) -> str:
    short = {
        "unreachable": "registry unreachable",
        "rate-limited": "rate limited",
        "unauthorized": "unauthorized",
        "not-found": "not found in the registry",
        "insecure": "refused: plain HTTP to a remote registry",
        "credentials": "no registry credentials",
        "protocol": "unexpected registry answer",
    }.get(error.kind, error.kind)
    return f"{short}: {error}"


def _aws_profile() -> str | None:
    try:
        return pulumi.Config("aws").get("profile")
    except Exception:
        return None


_DEFAULT: ImageChecker | None = None
_DEFAULT_LOCK = threading.Lock()


def default_checker() -> ImageChecker:
    """The process-wide checker: one registry lookup per image per run."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = ImageChecker()
        return _DEFAULT


def reset_default_checker(checker: ImageChecker | None = None) -> None:
    """Forget every answer (tests), or install ``checker`` as the process-wide one."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        _DEFAULT = checker


# -- pure API -----------------------------------------------------------------------------------------


def pod_images(pod_spec: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(container, image) for every init container and container of a Kubernetes-form pod spec.

    A container is named by its ``name`` (``"fetch (init)"`` for init containers),
    or by its position when it has none; an image not known yet is returned as is.
    """
    found: list[tuple[str, Any]] = []
    for field_name, suffix in (("initContainers", " (init)"), ("containers", "")):
        containers = pod_spec.get(field_name) if isinstance(pod_spec, Mapping) else UNKNOWN
        if containers is None:
            continue
        if not isinstance(containers, list):
            found.append((f"{field_name}[*]", UNKNOWN))
            continue
        for index, container in enumerate(containers):
            if not isinstance(container, Mapping):
                found.append((f"{field_name}[{index}]", UNKNOWN))
                continue
            name = container.get("name")
            label = f"{name}{suffix}" if isinstance(name, str) and name else f"{field_name}[{index}]"
            found.append((label, container.get("image")))
    return found


def check_pod_images(pod_spec: Mapping[str, Any], checker: ImageChecker) -> list[ImageVerdict]:
    """One verdict per container (init containers first), for any pod landing on GPU nodes.

    Pure apart from the checker's lookups: the policy tooling passes its own
    checker (e.g. ``ImageChecker(online=True)``); the components use
    :func:`default_checker`.
    """
    return [checker.check(image, label) for label, image in pod_images(pod_spec)]


def image_check_status(image: str, checker: ImageChecker | None = None) -> str:
    """One line for a preview table: ``arm64 ok``, ``amd64 only``, ``not checked (offline)``, ``check off``."""
    mode, _ = image_check_mode()
    if mode == "off":
        return "check off"
    verdict = (checker or default_checker()).check(image)
    if verdict.status == NOT_CHECKED and verdict.reason != "offline":
        return f"not checked ({verdict.reason.split(':', 1)[0]})"
    return verdict.summary()


# -- the components' hook --------------------------------------------------------------------------------

A = TypeVar("A")


def _template_pod(spec: Any) -> Any:
    """``spec.template.spec`` of a Deployment/Job/StatefulSet spec in Kubernetes form, or unknown."""
    if not isinstance(spec, Mapping):
        return UNKNOWN
    template = spec.get("template")
    if not isinstance(template, Mapping):
        return UNKNOWN if template is not None else {}
    pod = template.get("spec")
    return pod if isinstance(pod, Mapping) else (UNKNOWN if pod is not None else {})


def _enforce(owner: str, verdicts: list[ImageVerdict], mode: str, reported: set[tuple[str, str]]) -> None:
    refused = [v for v in verdicts if v.refused]
    unchecked = [v for v in verdicts if v.status == NOT_CHECKED and v.reason != "offline"]
    if refused or (mode == "strict" and unchecked):
        lines = [v.message() for v in refused]
        if mode == "strict":
            lines += [f"{v.message()} ({ENV_VAR}=strict refuses images it cannot check)" for v in unchecked]
        raise ImageArchitectureError(
            f"{owner}: "
            + "; ".join(lines)
            + ". To skip the check for this component: check_image_architecture=False."
        )
    for verdict in unchecked:
        if (verdict.container, verdict.image) in reported:
            continue
        reported.add((verdict.container, verdict.image))
        pulumi.log.warn(
            f"{owner}: {verdict.message()}. Deploying anyway; {ENV_VAR}=strict makes this an error, "
            f"=off silences it."
        )


def check_workload_images(owner: str, args: A, spec_type: Any) -> A:
    """The components' one call: check ``args.spec``'s pod template images; return the args to use.

    Known images are checked now, before anything is declared: a refusal raises
    :class:`ImageArchitectureError`. If some image is an Output, the returned
    args carry a spec that resolves only after those images passed, so the
    workload is never declared with an image that was refused. ``args`` is not
    modified. ``spec_type`` is the spec's Args class (``DeploymentSpecArgs``,
    ``JobSpecArgs``), so snake_case and typed Args are read as Kubernetes reads them.
    """
    if not getattr(args, "check_image_architecture", True):
        return args
    mode, explicit = image_check_mode()
    if mode == "off" or not (explicit or real_engine()):
        return args  # offline (mock engine, no engine): nothing could be looked up anyway
    spec = args.spec  # type: ignore[attr-defined]
    pod = _template_pod(to_wire(spec, spec_type, unknown=UNKNOWN))
    verdicts = check_pod_images(pod, default_checker()) if isinstance(pod, Mapping) else []
    reported: set[tuple[str, str]] = set()
    _enforce(owner, verdicts, mode, reported)
    if isinstance(pod, Mapping) and all(v.status != PENDING for v in verdicts):
        return args

    def _after_resolution(resolved: Any) -> Any:
        resolved_pod = _template_pod(to_wire(resolved, spec_type, unknown=UNKNOWN))
        if isinstance(resolved_pod, Mapping):
            _enforce(owner, check_pod_images(resolved_pod, default_checker()), mode, reported)
        return resolved

    gated = copy.copy(args)
    gated.spec = pulumi.Output.from_input(spec).apply(_after_resolution)  # type: ignore[attr-defined]
    return gated


__all__ = [
    "ARM64",
    "ENV_VAR",
    "FIX",
    "MODES",
    "NOT_CHECKED",
    "NO_ARM64",
    "OFF",
    "PENDING",
    "ImageArchitectureError",
    "ImageChecker",
    "ImageVerdict",
    "check_pod_images",
    "check_workload_images",
    "default_checker",
    "image_check_mode",
    "image_check_status",
    "pod_images",
    "real_engine",
    "reset_default_checker",
]
