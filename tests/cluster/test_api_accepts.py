"""Every Kubernetes object the platform and the consumer stacks declare is accepted by the API server.

Server-side apply, for real, in namespaces that enforce the Pod Security level the
project claims: ``restricted`` for a pod that runs as non-root, ``baseline``
otherwise (``infra.workloads.security``). Helm releases (the device plugin's chart)
are covered by the chart tests; here are the objects Pulumi sends, as
``infra.tooling.manifests`` turns them into manifests.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.tooling.manifests import is_manifest_type, manifest_of
from infra.tooling.offline import PLATFORM_ROOT, run_project
from infra.workloads.security import runs_as_non_root
from localcluster.kube import Kube

PROJECTS = {"platform": PLATFORM_ROOT, "inference": PLATFORM_ROOT / "stacks" / "inference"}


def _objects(project: str) -> list[dict[str, Any]]:
    run = run_project(PROJECTS[project], "dev")
    # No name given: pulumi-kubernetes auto-names it <resource name>-<random suffix>.
    return [
        manifest_of(r.type, f"{r.name}-1a2b3c4d", r.inputs) for r in run.resources if is_manifest_type(r.type)
    ]


def _claimed_level(objects: list[dict[str, Any]]) -> str:
    """The strictest level every pod template of these objects claims."""
    pods = [o["spec"]["template"]["spec"] for o in objects if "template" in (o.get("spec") or {})]
    if not pods:
        return "restricted"
    return "restricted" if all(runs_as_non_root(p) for p in pods) else "baseline"


@pytest.mark.parametrize("project", sorted(PROJECTS))
def test_the_api_server_accepts_every_object_under_the_claimed_pod_security(kube: Kube, project: str) -> None:
    objects = _objects(project)
    namespaced = [o for o in objects if o["kind"] != "Namespace"]
    declared = [o for o in objects if o["kind"] == "Namespace"]
    namespaces = {o["metadata"]["name"] for o in declared}
    level = _claimed_level(namespaced)
    assert objects, f"{project} declares no Kubernetes objects"
    try:
        for namespace in declared:  # as declared, plus the enforcement the claim implies
            labels = {**namespace["metadata"].get("labels", {}), "pod-security.kubernetes.io/enforce": level}
            kube.apply({**namespace, "metadata": {**namespace["metadata"], "labels": labels}})
        for manifest in namespaced:
            kube.apply(manifest)  # raises with the API server's refusal, Pod Security's included
    finally:
        for name in namespaces:
            kube.delete_namespace(name)
