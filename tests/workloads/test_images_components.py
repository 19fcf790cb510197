"""GpuDeployment refuses images without linux/arm64 before anything is declared; the opt-outs work.

Runs on Pulumi's mock engine with the loopback registries of ``registry_fixtures``;
``EKS_GPU_IMAGE_CHECK`` set explicitly is what lets the check ask a loopback registry
there. Nothing but loopback is ever contacted (``loopback_only``).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from infra.workloads import images
from infra.workloads.images import ImageArchitectureError
from tests.workloads import registry as fixture_registry

pytestmark = pytest.mark.usefixtures("loopback_only")


def _image(reg: fixture_registry.LocalRegistry, name: str) -> str:
    return f"{reg.host}/{name}"


# -- GpuDeployment: refused before anything is declared ---------------------------------------------


def _deployment(name: str, image: Any, **kwargs: Any) -> Any:
    from infra.workloads.gpu_deployment import GpuDeployment, GpuDeploymentArgs

    spec = {
        "selector": {"matchLabels": {"app": name}},
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {
                "initContainers": [{"name": "fetch", "image": kwargs.pop("init_image", image)}],
                "containers": [{"name": "server", "image": image}],
            },
        },
    }
    return GpuDeployment(name, GpuDeploymentArgs(spec=spec, **kwargs))


def _kinds(run: Any) -> list[str]:
    return [r.type for r in run.resources]


@pytest.mark.parametrize("mode", [None, "strict", "warn"])
def test_under_the_mock_engine_no_registry_but_loopback_is_ever_contacted(
    run: Any, monkeypatch: pytest.MonkeyPatch, loopback_only: list[str], mode: str | None
) -> None:
    if mode:
        monkeypatch.setenv(images.ENV_VAR, mode)
    declared = run(lambda: _deployment("llm", "nvcr.io/nvidia/tritonserver:24.08-py3"))
    assert "kubernetes:apps/v1:Deployment" in _kinds(declared)
    assert loopback_only == []  # not even a DNS lookup of nvcr.io


def test_an_amd64_only_image_is_refused_before_anything_is_declared(
    run: Any, registries: fixture_registry.Registries, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(images.ENV_VAR, "warn")
    image = _image(registries.token, "ml/amd64-only:v1")
    errors: list[Exception] = []

    def program() -> None:
        with pytest.raises(ImageArchitectureError) as raised:
            _deployment("llm", _image(registries.token, "ml/multiarch:v1"), init_image=image)
        errors.append(raised.value)

    assert run(program).resources == []
    assert str(errors[0]).startswith(
        f"GpuDeployment('llm'): container 'fetch (init)' image '{image}' has no linux/arm64 build "
        "(it offers: linux/amd64)"
    )
    assert "check_image_architecture=False" in str(errors[0])


def test_arm64_images_pass_and_the_opt_out_skips_the_lookup(
    run: Any, registries: fixture_registry.Registries, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(images.ENV_VAR, "strict")
    declared = run(
        lambda: [
            _deployment("multi", _image(registries.open, "ml/multiarch-docker:v1")),
            _deployment("x86", _image(registries.open, "ml/amd64-only:v1"), check_image_architecture=False),
        ]
    )
    assert _kinds(declared).count("kubernetes:apps/v1:Deployment") == 2
    looked_up = {str(ref) for ref in images.default_checker()._results}
    assert looked_up == {f"{registries.open.host}/ml/multiarch-docker:v1"}


def test_warn_mode_declares_what_it_could_not_check_and_says_so(
    run: Any, registries: fixture_registry.Registries, monkeypatch: pytest.MonkeyPatch
) -> None:
    warnings: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, *args, **kwargs: warnings.append(message))
    monkeypatch.setenv(images.ENV_VAR, "warn")
    image = _image(registries.token, "private/model:v1")
    declared = run(lambda: _deployment("private", image))
    assert "kubernetes:apps/v1:Deployment" in _kinds(declared)
    assert warnings == [
        f"GpuDeployment('private'): container 'fetch (init)' image '{image}' was NOT checked for linux/arm64: "
        f"unauthorized: {image}: the registry refused access (HTTP 401); private image?. Deploying anyway; "
        "EKS_GPU_IMAGE_CHECK=strict makes this an error, =off silences it.",
        f"GpuDeployment('private'): container 'server' image '{image}' was NOT checked for linux/arm64: "
        f"unauthorized: {image}: the registry refused access (HTTP 401); private image?. Deploying anyway; "
        "EKS_GPU_IMAGE_CHECK=strict makes this an error, =off silences it.",
    ]


def test_strict_mode_refuses_what_it_could_not_check(
    run: Any, registries: fixture_registry.Registries, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(images.ENV_VAR, "strict")
    image = _image(registries.open, "ml/multiarch:not-pushed")

    def program() -> None:
        with pytest.raises(
            ImageArchitectureError, match=r"was NOT checked.*EKS_GPU_IMAGE_CHECK=strict refuses"
        ):
            _deployment("llm", image)

    assert run(program).resources == []


def test_off_mode_looks_nothing_up(
    run: Any, registries: fixture_registry.Registries, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(images.ENV_VAR, "off")
    declared = run(lambda: _deployment("llm", _image(registries.open, "ml/amd64-only:v1")))
    assert "kubernetes:apps/v1:Deployment" in _kinds(declared)
    assert images.default_checker()._results == {}


class _RecordingMocks(pulumi.runtime.Mocks):
    def __init__(self) -> None:
        self.created: list[str] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        self.created.append(args.typ)
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        return {}, []


def test_an_output_image_is_checked_when_known_and_gates_the_deployment(
    registries: fixture_registry.Registries, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(images.ENV_VAR, "warn")
    mocks = _RecordingMocks()
    pulumi.runtime.reset_options(preview=False)  # a fresh root Stack
    pulumi.runtime.set_mocks(mocks, preview=False)
    image = pulumi.Output.from_input(_image(registries.open, "ml/no-arm64:v1"))

    @pulumi.runtime.test
    def program() -> None:
        _deployment("llm", image, init_image=_image(registries.open, "ml/multiarch:v1"))

    with pytest.raises(
        ValueError, match=r"GpuDeployment\('llm'\): container 'server' .* linux/amd64, linux/arm/v7"
    ):
        program()  # the engine reports the ImageArchitectureError through the Deployment's spec
    assert "eks-gpu:index:GpuDeployment" in mocks.created
    assert "kubernetes:apps/v1:Deployment" not in mocks.created  # its spec waited for the check


def test_a_gpu_job_is_checked_the_same_way(
    run: Any, registries: fixture_registry.Registries, monkeypatch: pytest.MonkeyPatch
) -> None:
    from infra.workloads.gpu_job import GpuJob, GpuJobArgs

    monkeypatch.setenv(images.ENV_VAR, "warn")
    image = _image(registries.open, "ml/no-arm64:v1")

    def job(name: str, **kwargs: Any) -> Any:
        spec = {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "train", "image": image}]}
            }
        }
        return GpuJob(name, GpuJobArgs(spec=spec, **kwargs))

    def program() -> None:
        with pytest.raises(
            ImageArchitectureError, match=r"GpuJob\('train'\): container 'train' .* linux/arm/v7"
        ):
            job("train")
        job("opted-out", check_image_architecture=False)

    assert _kinds(run(program)) == ["eks-gpu:index:GpuJob", "kubernetes:batch/v1:Job"]
