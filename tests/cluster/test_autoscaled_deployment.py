"""``GpuDeployment(autoscaled=True)`` beside a real HorizontalPodAutoscaler, through the built Pulumi CLI.

The program (``tests/cluster/autoscaled``) creates the Deployment at one replica and an
``autoscaling/v2`` HPA with ``minReplicas: 2``. The local kube-controller-manager runs the real
HPA controller: below ``minReplicas`` it scales the target up without any metrics
(k8s.io/kubernetes v1.35.4 ``pkg/controller/podautoscaler/horizontal.go`` ~849, "Current number
of replicas below Spec.MinReplicas"), through the ``scale`` subresource (~903), as its own field
manager. Then the
engine and pulumi-kubernetes must leave that count alone: ``pulumi preview`` (before and after
a ``pulumi refresh``) finds nothing to change, and a ``pulumi up`` that changes the pod template rolls the
Deployment out at the HPA's count (docs/decisions/0055).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import yaml
from kubernetes import client

from infra.tooling.offline import PLATFORM_ROOT, run_project
from localcluster import cluster as local
from localcluster.kube import Kube, wait_for
from localcluster.pulumi_cli import Stack

PROJECT = local.ROOT / "tests" / "cluster" / "autoscaled"
STACK = "local"
NAMESPACE = "autoscaled"
CONFIG = "autoscaled-gpu-deployment"
HPA_MIN = 2


def _write_config(revision: str) -> None:
    placement = run_project(PLATFORM_ROOT, "dev").stack_outputs["placement"]
    config = {
        f"{CONFIG}:placement": placement,
        f"{CONFIG}:namespace": NAMESPACE,
        f"{CONFIG}:revision": revision,
    }
    path = PROJECT / f"Pulumi.{STACK}.yaml"
    existing = yaml.safe_load(path.read_text()) if path.exists() else {}
    existing.setdefault("config", {}).update(config)
    path.write_text(yaml.safe_dump(existing))


@pytest.fixture(scope="module")
def stack(kube: Kube) -> Iterator[Stack]:
    """The program's stack from nothing (no state left by an interrupted run, no objects); destroyed after."""
    deployed = Stack(PROJECT, STACK)
    deployed.remove()
    (PROJECT / f"Pulumi.{STACK}.yaml").unlink(missing_ok=True)
    kube.delete_namespace(NAMESPACE)
    _write_config("1")
    deployed.init(secrets={f"{CONFIG}:kubeconfig": local.KUBECONFIG.read_text()})
    yield deployed
    deployed.destroy()
    deployed.remove()


def _deployment(kube: Kube) -> Any:
    return client.AppsV1Api(kube.api).read_namespaced_deployment("llm", NAMESPACE)


def _replicas_owners(deployment: Any) -> set[str]:
    """The field managers that own ``spec.replicas`` (and through which subresource)."""
    return {
        f"{entry.manager}/{entry.subresource or ''}"
        for entry in deployment.metadata.managed_fields or []
        if "f:replicas" in (entry.fields_v1 or {}).get("f:spec", {})
    }


def test_the_hpas_count_survives_preview_refresh_and_an_update(kube: Kube, stack: Stack) -> None:
    stack.up()  # pulumi-kubernetes waits until the Deployment is Available at 1 replica
    hpa = client.AutoscalingV2Api(kube.api).read_namespaced_horizontal_pod_autoscaler("llm", NAMESPACE)
    assert (
        hpa.spec.scale_target_ref.name == "llm" and hpa.spec.min_replicas == HPA_MIN
    )  # accepted as declared

    # The real HPA controller raises the count to minReplicas through the scale subresource.
    scaled = wait_for(
        "the HPA to scale the Deployment", lambda: _deployment(kube).spec.replicas == HPA_MIN, 120
    )
    assert scaled
    owners = _replicas_owners(_deployment(kube))
    assert owners and all(owner.endswith("/scale") for owner in owners), owners  # the HPA's, not Pulumi's

    stack.preview("--expect-no-changes")  # the engine fills the ignored path from the old inputs
    stack.run("refresh", "--yes", "--skip-preview")  # state now holds the live count, 2
    stack.preview("--expect-no-changes")  # live replicas 2 vs inputs 1: dropped from the provider's Diff

    # A change of the pod template is an update (server-side apply) and a rollout.
    _write_config("2")
    stack.up()  # waits for the rollout, at the HPA's count
    deployment = _deployment(kube)
    assert deployment.spec.replicas == HPA_MIN
    assert deployment.spec.template.metadata.annotations["example.com/revision"] == "2"
    assert deployment.status.ready_replicas == HPA_MIN
    assert _replicas_owners(deployment) == owners  # Pulumi's apply left the field to the HPA
    stack.preview("--expect-no-changes")


OFF_NAMESPACE = "autoscaled-off"
PULUMI_MANAGER = "pulumi-kubernetes-0123abcd"
"""Stands for pulumi-kubernetes' server-side apply field manager (an Apply, as its updates are)."""


def _apply_replicas(kube: Kube, replicas: int, force: bool) -> Any:
    """The Deployment as Pulumi applies it, ``force`` being what ``pulumi.com/patchForce: "true"`` sets."""
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "llm", "namespace": OFF_NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "llm"}},
            "template": {
                "metadata": {"labels": {"app": "llm"}},
                "spec": {"containers": [{"name": "llm", "image": "registry.invalid/llm:1"}]},
            },
        },
    }
    return kube.resource(manifest).server_side_apply(
        body=manifest,
        name="llm",
        namespace=OFF_NAMESPACE,
        field_manager=PULUMI_MANAGER,
        force_conflicts=force,
    )


def test_turning_autoscaled_off_needs_the_live_count_or_patch_force(kube: Kube) -> None:
    """What docs/components.md says of turning ``autoscaled`` off, on the real API server: the
    autoscaler's write through the ``scale`` subresource keeps its field manager the owner of
    ``spec.replicas`` after the autoscaler is gone (managedFields are the object's, not the HPA's), so
    Pulumi's next apply of another count is refused as a conflict; ``patchForce`` takes the field back."""
    kube.delete_namespace(OFF_NAMESPACE)
    kube.namespace(OFF_NAMESPACE)
    try:
        _apply_replicas(kube, 1, force=False)  # created by Pulumi
        apps = client.AppsV1Api(kube.api)
        apps.patch_namespaced_deployment_scale(  # as the HPA controller writes it; no HPA exists any more
            "llm", OFF_NAMESPACE, {"spec": {"replicas": HPA_MIN}}, field_manager="horizontal-pod-autoscaler"
        )
        assert _replicas_owners(_deployment_in(kube, OFF_NAMESPACE)) == {"horizontal-pod-autoscaler/scale"}

        _apply_replicas(kube, HPA_MIN, force=False)  # the live count: no conflict (same value)
        with pytest.raises(client.ApiException) as refused:
            _apply_replicas(kube, 3, force=False)
        assert refused.value.status == 409 and ".spec.replicas" in refused.value.body, refused.value.body

        _apply_replicas(kube, 3, force=True)
        deployment = _deployment_in(kube, OFF_NAMESPACE)
        assert deployment.spec.replicas == 3
        assert _replicas_owners(deployment) == {f"{PULUMI_MANAGER}/"}
    finally:
        kube.delete_namespace(OFF_NAMESPACE)


def _deployment_in(kube: Kube, namespace: str) -> Any:
    return client.AppsV1Api(kube.api).read_namespaced_deployment("llm", namespace)
