"""Every Kubernetes object the platform and the consumer stacks declare is accepted by the API server.

Server-side apply, for real, in namespaces that enforce the Pod Security level the
project claims: ``restricted`` for a pod that runs as non-root, ``baseline``
otherwise (``infra.workloads.security``). Helm releases (the device plugin's chart)
are covered by the chart tests; here are the objects Pulumi sends, as
``infra.tooling.manifests`` turns them into manifests. The Kueue objects the platform declares
with ``teams:`` are checked against the CRDs of the pinned Kueue chart (rendered with the values the
platform gives it), installed for the module and removed after: the API server applies Kueue's own
schemas, CEL rules included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from infra.tooling.manifests import is_manifest_type, manifest_of
from infra.tooling.offline import PLATFORM_ROOT, Run, run_project
from infra.workloads.security import runs_as_non_root
from localcluster import kueue
from localcluster.karpenter import apply_crds
from localcluster.kube import Kube

PROJECTS = {"platform": PLATFORM_ROOT, "inference": PLATFORM_ROOT / "stacks" / "inference"}


def _objects(run: Run) -> list[dict[str, Any]]:
    # No name given: pulumi-kubernetes auto-names it <resource name>-<random suffix>.
    return [
        manifest_of(r.type, f"{r.name}-1a2b3c4d", r.inputs) for r in run.resources if is_manifest_type(r.type)
    ]


@pytest.fixture(scope="module")
def custom_resource_definitions(kube: Kube) -> Iterator[None]:
    """The CRDs of the custom resources the dev platform declares, for the module's length: Kueue's
    from its pinned chart with the platform's values. (The dev stack declares no Karpenter pool, so no
    NodePool; the Karpenter scenarios check theirs against the pinned CRDs, tests/cluster/test_karpenter.py.)
    Installed once: a CRD deleted and made again at once can leave the API server's storage for it
    re-initializing, and its next deletion then waits on the finalizer's backoff."""
    releases = run_project(PLATFORM_ROOT, "dev").of_type("kubernetes:helm.sh/v3:Release")
    crds = kueue.crds(next(r for r in releases if r.name == "kueue").inputs["values"])
    apply_crds(kube, crds)
    yield
    kueue.remove_crds(kube, crds)


def _claimed_level(objects: list[dict[str, Any]]) -> str:
    """The strictest level every pod template of these objects claims."""
    pods = [o["spec"]["template"]["spec"] for o in objects if "template" in (o.get("spec") or {})]
    if not pods:
        return "restricted"
    return "restricted" if all(runs_as_non_root(p) for p in pods) else "baseline"


@pytest.mark.parametrize("project", sorted(PROJECTS))
@pytest.mark.usefixtures("custom_resource_definitions")
def test_the_api_server_accepts_every_object_under_the_claimed_pod_security(kube: Kube, project: str) -> None:
    run = run_project(PROJECTS[project], "dev")
    objects = _objects(run)
    namespaced = [o for o in objects if o["kind"] != "Namespace"]
    declared = [o for o in objects if o["kind"] == "Namespace"]
    namespaces = {o["metadata"]["name"] for o in declared}
    level = _claimed_level(namespaced)
    assert objects, f"{project} declares no Kubernetes objects"
    try:
        for namespace in declared:  # as declared, plus the enforcement the claim implies
            labels = {
                **namespace["metadata"].get("labels", {}),
                "pod-security.kubernetes.io/enforce": level,
            }
            kube.apply({**namespace, "metadata": {**namespace["metadata"], "labels": labels}})
        for manifest in namespaced:
            kube.apply(manifest)  # raises with the API server's refusal, Pod Security's included
    finally:
        for name in namespaces:
            kube.delete_namespace(name)


@pytest.mark.usefixtures("custom_resource_definitions")
def test_the_kueue_objects_meet_kueues_own_schema_rules(kube: Kube) -> None:
    """The pinned CRDs' CEL rules are really applied: a team's ClusterQueue that borrows is accepted in
    the platform's cohort and refused without one."""
    run = run_project(PLATFORM_ROOT, "dev")
    queues = [o for o in _objects(run) if o["kind"] == "ClusterQueue"]
    (borrower,) = [q for q in queues if q["metadata"]["name"] == "vision"]  # training: borrowingLimit 2
    alone = {**borrower, "spec": {k: v for k, v in borrower["spec"].items() if k != "cohortName"}}
    kube.apply(borrower, dry_run=True)
    with pytest.raises(ApiException) as refused:
        kube.apply(alone, dry_run=True)
    assert refused.value.status == 422
    assert "borrowingLimit must be nil when cohort is empty" in refused.value.body
