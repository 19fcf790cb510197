"""Talking to the local API server: server-side apply, and waiting for what controllers do.

Thin over the official Python client (``kubernetes``): its dynamic client applies
any kind by ``apiVersion``/``kind``, exactly as ``kubectl apply --server-side`` does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from kubernetes import client, config, dynamic
from kubernetes.client.rest import ApiException

FIELD_MANAGER = "eks-gpu-tests"


class Kube:
    """A connection to one cluster, by kubeconfig."""

    def __init__(self, kubeconfig: Path) -> None:
        self.api = config.new_client_from_config(config_file=str(kubeconfig))
        self.dynamic = dynamic.DynamicClient(self.api)
        self.core = client.CoreV1Api(self.api)

    def resource(self, manifest: Mapping[str, Any]) -> Any:
        return self.dynamic.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])

    def apply(self, manifest: Mapping[str, Any], namespace: str | None = None, dry_run: bool = False) -> Any:
        """Server-side apply one object; raises ``ApiException`` with the API server's refusal."""
        resource = self.resource(manifest)
        ns = manifest.get("metadata", {}).get("namespace") or (namespace if resource.namespaced else None)
        return resource.server_side_apply(
            body=dict(manifest),
            name=manifest["metadata"]["name"],
            namespace=ns,
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
            dry_run="All" if dry_run else None,
        )

    def apply_all(self, manifests: Iterable[Mapping[str, Any]], namespace: str | None = None) -> None:
        for manifest in manifests:
            self.apply(manifest, namespace)

    def create_node(self, manifest: Mapping[str, Any]) -> None:
        """Nodes take their status on create (as a kubelet registers); apply would drop it."""
        try:
            self.core.create_node(body=dict(manifest))
        except ApiException as error:
            if error.status != 409:
                raise

    def register_nodes(self, manifests: Iterable[Mapping[str, Any]], what: str, timeout: float = 60) -> None:
        """Nodes as kubelets register them (one already there is left as it is), waited for until kwok
        reports them Ready and the node lifecycle controller's taints are gone."""
        names = set()
        for manifest in manifests:
            self.create_node(manifest)
            names.add(manifest["metadata"]["name"])
        wait_for(what, lambda: names <= {n.metadata.name for n in self.nodes() if settled(n)}, timeout)

    def namespace(self, name: str, pod_security: str | None = None, version: str | None = None) -> None:
        """A namespace, enforcing (and warning on) the Pod Security level given, at ``version`` (``v1.34``) if given.

        One of that name still terminating (``delete_namespace(wait=False)``) is waited out first; it
        returns once its pods can be admitted (its default ServiceAccount made).
        """
        labels = {}
        if pod_security:
            labels = {f"pod-security.kubernetes.io/{mode}": pod_security for mode in ("enforce", "warn")}
        if pod_security and version:
            labels.update(
                {f"pod-security.kubernetes.io/{mode}-version": version for mode in ("enforce", "warn")}
            )
        wait_for(f"namespace {name} to finish terminating", lambda: not self._terminating(name))
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
        # Until the controller has made it, the ServiceAccount admission plugin refuses the namespace's
        # pods after a second of retries: a pod applied right after this would be refused on a busy machine.
        wait_for(
            f"namespace {name}'s default ServiceAccount", lambda: self._default_account(name), every=0.05
        )

    def _default_account(self, namespace: str) -> list[Any]:
        found = self.core.list_namespaced_service_account(namespace, field_selector="metadata.name=default")
        return found.items

    def delete_namespace(self, name: str, timeout: float = 60, wait: bool = True) -> None:
        """Delete a namespace: its pods at once (grace 0), then the rest by the namespace controller.

        The pods go first so that nothing runs on, or waits for, a node once this returns. The
        controller starts 5 s after the delete (``namespaceDeletionGracePeriod``, a constant in
        ``pkg/controller/namespace``); ``wait=False`` leaves that to run beside what follows
        (:meth:`namespace` waits for it if the name comes back).
        """
        try:
            self.core.delete_namespace(name)  # Terminating first: no new pod is admitted in it
            self.core.delete_collection_namespaced_pod(name, grace_period_seconds=0)
        except ApiException as error:
            if error.status != 404:
                raise
        wait_for(f"the pods of namespace {name} to be deleted", lambda: not self.pods(name), timeout=timeout)
        if wait:
            wait_for(f"namespace {name} to be deleted", lambda: self._phase(name) is None, timeout=timeout)

    def _phase(self, name: str) -> str | None:
        try:
            return self.core.read_namespace(name).status.phase
        except ApiException as error:
            if error.status == 404:
                return None
            raise

    def _terminating(self, name: str) -> bool:
        return self._phase(name) == "Terminating"

    def pods(self, namespace: str, selector: str = "") -> list[Any]:
        return self.core.list_namespaced_pod(namespace, label_selector=selector).items

    def nodes(self, selector: str = "") -> list[Any]:
        return self.core.list_node(label_selector=selector).items


def wait_for(what: str, check: Callable[[], Any], timeout: float = 60, every: float = 0.25) -> Any:
    """Poll ``check`` until it returns something truthy; the error says what never happened."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(every)


def node_ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions or [])


def settled(node: Any) -> bool:
    """Ready, and no ``node.kubernetes.io/*`` taint left: TaintNodesByCondition taints every new
    node not-ready at admission, and the node lifecycle controller lifts it a moment later."""
    return node_ready(node) and not any(
        t.key.startswith("node.kubernetes.io/") for t in node.spec.taints or []
    )
