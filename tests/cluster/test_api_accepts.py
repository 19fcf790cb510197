"""Every Kubernetes object the platform and the consumer stacks declare is accepted by the API server.

Server-side apply, for real, in namespaces that enforce the Pod Security level the
project claims: ``restricted`` for a pod that runs as non-root, ``baseline``
otherwise (``infra.workloads.security``), ``privileged`` for the device plugin's.
Helm releases are covered by the chart tests; here are the objects Pulumi sends.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.tooling.offline import PLATFORM_ROOT, Registration, run_project
from infra.workloads.security import runs_as_non_root
from localcluster.kube import Kube

PROJECTS = {"platform": PLATFORM_ROOT, "inference": PLATFORM_ROOT / "stacks" / "inference"}


def _manifest(resource: Registration) -> dict[str, Any]:
    manifest = {k: v for k, v in resource.inputs.items() if k in ("apiVersion", "kind", "metadata", "spec")}
    # No name given: pulumi-kubernetes auto-names it <resource name>-<random suffix>.
    manifest["metadata"] = {"name": f"{resource.name}-1a2b3c4d", **manifest.get("metadata", {})}
    return manifest


def _objects(project: str) -> list[dict[str, Any]]:
    run = run_project(PROJECTS[project], "dev")
    return [
        _manifest(r)
        for r in run.resources
        if r.type.startswith("kubernetes:") and r.type != "kubernetes:helm.sh/v3:Release"
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
