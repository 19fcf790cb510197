"""Refuse x86-only images before a GPU node is paid for."""

from __future__ import annotations

import dataclasses
import functools
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

# Verdict statuses.
ARM64 = "arm64"  # the image runs on the GPU nodes
NO_ARM64 = "no-arm64"  # refused: the registry says it has no linux/arm64
NOT_CHECKED = "not-checked"  # could not judge (offline, unreachable, 429, unauthorized, not found)
PENDING = "pending"  # an Output not known yet: checked when it is

REASONS = {
    "unreachable": "registry unreachable",
    "rate-limited": "rate limited",
    "unauthorized": "unauthorized",
    "not-found": "not found in the registry",
    "insecure": "refused: plain HTTP to a remote registry",
    "credentials": "no registry credentials",
    "protocol": "unexpected registry answer",
}
"""A :class:`RegistryError`'s kind as a verdict's short reason."""


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

    def summary(self) -> str:
        """Short form for tables: ``arm64 ok``, ``amd64 only``, ``not checked (offline)``."""
        if self.status == ARM64:
            return "arm64 ok"
        if self.status == NO_ARM64:
            return f"{', '.join(p.removeprefix('linux/') for p in self.platforms) or 'no platforms'} only"
        return f"not checked ({'not known yet' if self.status == PENDING else self.reason})"

    def message(self) -> str:
        """The sentence a user reads: the container, the image, what it has and what to do."""
        who = (f"container {self.container!r} " if self.container else "") + f"image {self.image!r}"
        if self.status == NO_ARM64:
            return (
                f"{who} has no {GPU_PLATFORM} build (it offers: {', '.join(self.platforms) or 'no platform'}); "
                f"the GPU nodes are {GPU_PLATFORM} (g5g), so the pod would fail with `exec format error` "
                "after a GPU node started for it. Fix: build for linux/arm64 with "
                "`docker buildx build --platform linux/arm64,linux/amd64`, or pick an arm64 tag"
            )
        if self.status == NOT_CHECKED:
            return f"{who} was NOT checked for {GPU_PLATFORM}: {self.reason}"
        return f"{who}: {self.summary()}"


def image_check_mode() -> tuple[str, bool]:
    """(mode, explicit): ``EKS_GPU_IMAGE_CHECK`` wins over config ``eks-gpu:imageCheck``; default ``warn``."""
    value = os.environ.get(ENV_VAR)
    where = f"environment variable {ENV_VAR}"
    if not value:
        value = pulumi.Config(CONFIG_NAMESPACE).get(CONFIG_KEY)
        where = f"config {CONFIG_NAMESPACE}:{CONFIG_KEY}"
    if not value:
        return DEFAULT_MODE, False
    mode = value.strip().lower()
    if mode not in MODES:
        raise ImageArchitectureError(f"{where} must be one of {', '.join(MODES)}, got {value!r}")
    return mode, True


class ImageChecker:
    """Looks images up once each (per instance) and turns the answers into verdicts."""

    def __init__(self, client: RegistryClient | None = None, *, online: bool | None = None) -> None:
        self.client = client or RegistryClient(
            credentials=EcrCredentials(pulumi.Config("aws").get("profile"))
        )
        self.online = online
        self._results: dict[str, Platforms | RegistryError] = {}
        self._down: dict[str, RegistryError] = {}
        self._lock = threading.Lock()

    def _may_ask(self, ref: Reference) -> bool:
        if self.online is not None:
            return self.online or is_loopback(ref.host)
        return real_engine() or (is_loopback(ref.host) and image_check_mode()[1])

    def check(self, image: Any, container: str = "") -> ImageVerdict:
        """The verdict for one image reference (a string; anything else is pending)."""
        if not isinstance(image, str):
            return ImageVerdict(container, "<unknown>", PENDING, reason="not known yet")
        try:
            ref = parse_reference(image)
        except ReferenceError as error:
            return ImageVerdict(container, image, NOT_CHECKED, reason=str(error))
        if not self._may_ask(ref):
            return ImageVerdict(container, image, NOT_CHECKED, reason="offline")
        result = self.lookup(ref)
        if isinstance(result, RegistryError):
            reason = f"{REASONS.get(result.kind, result.kind)}: {result}"
            return ImageVerdict(container, image, NOT_CHECKED, reason=reason)
        if not result.platforms:  # nothing known: no ground to refuse on
            return ImageVerdict(
                container, image, NOT_CHECKED, reason="unexpected registry answer: no platform"
            )
        status = ARM64 if ARM64_PLATFORMS.intersection(result.platforms) else NO_ARM64
        return ImageVerdict(container, image, status, result.platforms, digest=result.digest)

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


@functools.cache
def default_checker() -> ImageChecker:
    """The process-wide checker: one registry lookup per image per run."""
    return ImageChecker()


def reset_default_checker() -> None:
    """Forget every answer (tests)."""
    default_checker.cache_clear()


def check_pod_images(pod_spec: Mapping[str, Any], checker: ImageChecker) -> list[ImageVerdict]:
    """One verdict per container (init containers first) of a Kubernetes-form pod spec, for any pod landing
    on GPU nodes."""
    found: list[ImageVerdict] = []
    for field_name, suffix in (("initContainers", " (init)"), ("containers", "")):
        containers = pod_spec.get(field_name) or []
        if not isinstance(containers, list):
            found.append(checker.check(UNKNOWN, f"{field_name}[*]"))
            continue
        for index, container in enumerate(containers):
            if not isinstance(container, Mapping):
                container = {"image": UNKNOWN}
            name = container.get("name")
            label = f"{name}{suffix}" if isinstance(name, str) and name else f"{field_name}[{index}]"
            found.append(checker.check(container.get("image"), label))
    return found


def image_check_status(image: str, checker: ImageChecker | None = None) -> str:
    """One line for a preview table: ``arm64 ok``, ``amd64 only``, ``not checked (offline)``, ``check off``."""
    if image_check_mode()[0] == "off":
        return "check off"
    verdict = (checker or default_checker()).check(image)
    if verdict.status == NOT_CHECKED and verdict.reason != "offline":
        return f"not checked ({verdict.reason.split(':', 1)[0]})"
    return verdict.summary()


# -- the components' hook --------------------------------------------------------------------------------

A = TypeVar("A")


def _template_pod(spec: Any) -> Any:
    """``spec.template.spec`` of a Deployment/Job spec in Kubernetes form: ``{}`` if absent, else unknown."""
    pod = spec
    for key in ("template", "spec"):
        if not isinstance(pod, Mapping):
            return UNKNOWN
        pod = pod.get(key)
        if pod is None:
            return {}
    return pod if isinstance(pod, Mapping) else UNKNOWN


def _enforce(owner: str, verdicts: list[ImageVerdict], mode: str, reported: set[tuple[str, str]]) -> None:
    refused = [v for v in verdicts if v.status == NO_ARM64]
    unchecked = [v for v in verdicts if v.status == NOT_CHECKED and v.reason != "offline"]
    if refused or (mode == "strict" and unchecked):
        lines = [v.message() for v in refused]
        if mode == "strict":
            lines += [f"{v.message()} ({ENV_VAR}=strict refuses images it cannot check)" for v in unchecked]
        raise ImageArchitectureError(
            f"{owner}: {'; '.join(lines)}. To skip the check for this component: check_image_architecture=False."
        )
    for verdict in unchecked:
        if (verdict.container, verdict.image) not in reported:
            reported.add((verdict.container, verdict.image))
            pulumi.log.warn(
                f"{owner}: {verdict.message()}. Deploying anyway; {ENV_VAR}=strict makes this an error, "
                f"=off silences it."
            )


def check_workload_images(owner: str, args: A, spec_type: Any) -> A:
    """The components' one call: check ``args.spec``'s pod template images; return the args to use."""
    if not args.check_image_architecture:  # type: ignore[attr-defined]
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

    gated = pulumi.Output.from_input(spec).apply(_after_resolution)
    return dataclasses.replace(args, spec=gated)  # type: ignore[type-var]
