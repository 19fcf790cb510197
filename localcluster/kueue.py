"""Kueue's real controller on the local control plane, with its real webhooks and cert management.

``kueue`` is ``sigs.k8s.io/kueue/cmd/kueue`` at the version ``localcluster/kueue/go.mod`` pins (built by
``localcluster/build kueue``). Everything it is given comes from the chart in the same module zip,
rendered with helm from the values the platform gives it: the CRDs (with the conversion
``clientConfig`` Kueue's cert-controller patches), the empty webhook Secret, the webhook
configurations (with their ``namespaceSelector`` and ``failurePolicy``), the controller's
Configuration (the chart's ConfigMap) and feature gates (the Deployment's arguments).

What differs from the chart, because there is no pod network here (docs/local-cluster.md, "Kueue"):
the process runs on the host with the admin kubeconfig (not the chart's ServiceAccount and RBAC);
the webhook Service is an ``ExternalName`` Service to 127.0.0.1, so the API server dials
127.0.0.1:<the webhook configurations' port> and checks the certificate against
``kueue-webhook-service.kueue-system.svc`` as it does in a cluster (k8s.io/apiserver ``pkg/util/proxy``
ResolveCluster, ``pkg/util/webhook`` client); that port is a free one of the control plane's (the chart
names none: 443, one for every control plane of a run), where the controller serves its webhooks (the
chart: the Service's 443 to the pod's 9443); health and metrics bind 127.0.0.1 on free ports; the certificates go to a folder of the run; the
visibility server (``VisibilityOnDemand``, which binds 0.0.0.0:8082 and writes its certificates to
``/visibility``) is off; leader election is on as the chart sets it, its Lease in ``kueue-system``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import time
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

from infra.platform.kueue_objects import API_VERSION
from infra.tooling.pinned_chart import render
from localcluster import services
from localcluster.cluster import free_port
from localcluster.gomod import BIN, module_dir, pinned_version
from localcluster.processes import RUN, ClusterError

PINS, MODULE = "kueue", "sigs.k8s.io/kueue"
BINARY = BIN / "kueue"
RELEASE = "kueue"  # the release name: the chart names its objects kueue-*
NAMESPACE = "kueue-system"
SERVICE = f"{RELEASE}-webhook-service"
HOST = "127.0.0.1"
API = API_VERSION
# Off here: it binds 0.0.0.0 and writes its certificates to /visibility (pkg/visibility/server.go).
GATES_OFF = ("VisibilityOnDemand",)
NAME = "kueue"  # the service's name in localcluster/services.py (its log: run/logs/kueue.log)


def version() -> str:
    return pinned_version(PINS, MODULE)


def chart() -> Path:
    return module_dir(PINS, MODULE) / "charts" / "kueue"


def rendered(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every object the pinned chart installs with ``values``."""
    return render(values, release=RELEASE, namespace=NAMESPACE, chart=chart())


def crds(values: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The CRDs of the pinned chart, as it installs them with ``values``."""
    return [o for o in rendered(values) if o["kind"] == "CustomResourceDefinition"]


def remove_crds(kube: Any, documents: list[dict[str, Any]], timeout: float = 60) -> None:
    """Delete CRDs (and so every object of their kinds) and wait until the API server has removed them."""
    from kubernetes.client.rest import ApiException

    api = kube.dynamic.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")

    def gone(name: str) -> bool:
        try:
            api.get(name=name)
        except ApiException as error:
            if error.status == 404:
                return True
            raise
        return False

    for crd in documents:  # else the CRD finalizer's first passes fail and back off for minutes
        wait(
            f"the API server's watch cache of {crd['metadata']['name']}",
            lambda c=crd: _cached(kube, c),
            timeout,
        )
    for crd in documents:
        try:
            api.delete(name=crd["metadata"]["name"])
        except ApiException as error:
            if error.status != 404:
                raise
    for crd in documents:
        name = crd["metadata"]["name"]
        wait(f"CRD {name} removed", lambda n=name: gone(n), timeout)
    kube.dynamic.resources.invalidate_cache()


def _cached(kube: Any, crd: Mapping[str, Any]) -> bool:
    """The kind's objects are served from the API server's watch cache (a list at resourceVersion 0
    is refused with 429 "storage is (re)initializing" until then): what the CRD finalizer needs."""
    from kubernetes.client.rest import ApiException
    from kubernetes.dynamic.exceptions import ResourceNotFoundError

    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    try:
        resource = kube.resource({"apiVersion": f"{spec['group']}/{version}", "kind": spec["names"]["kind"]})
    except ResourceNotFoundError:
        return True  # the CRD is gone already: nothing for the finalizer to do
    try:
        resource.get(resource_version="0")  # a limit would send it to etcd while the cache is not ready
    except ApiException as error:
        if error.status == 429:
            return False
        raise
    return True


def _one(objects: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    return next(o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name))


def configuration(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """The controller's Configuration as the chart's ConfigMap gives it."""
    config_map = _one(objects, "ConfigMap", f"{RELEASE}-manager-config")
    return yaml.safe_load(config_map["data"]["controller_manager_config.yaml"])


def local_configuration(config: Mapping[str, Any], ports: Mapping[str, int], certs: Path) -> dict[str, Any]:
    """``config`` with every listener on loopback, the certificates in ``certs`` and the Lease's namespace
    named (in a pod, controller-runtime takes the pod's namespace); nothing else changed."""
    result = copy.deepcopy(dict(config))
    result["health"] = {**result.get("health", {}), "healthProbeBindAddress": f"{HOST}:{ports['health']}"}
    result["metrics"] = {**result.get("metrics", {}), "bindAddress": f"{HOST}:{ports['metrics']}"}
    result["webhook"] = {
        **result.get("webhook", {}),
        "host": HOST,
        "port": ports["webhook"],
        "certDir": str(certs),
    }
    result["leaderElection"] = {**result.get("leaderElection", {}), "resourceNamespace": NAMESPACE}
    result["namespace"] = NAMESPACE
    return result


def feature_gates(objects: list[dict[str, Any]]) -> str:
    """The chart's ``--feature-gates`` with the gates this harness turns off (``GATES_OFF``)."""
    deployment = _one(objects, "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0].get("args", [])
    given = next((a.split("=", 1)[1] for a in args if a.startswith("--feature-gates=")), "")
    gates = dict(g.split("=", 1) for g in given.split(",") if g)
    gates.update({g: "false" for g in GATES_OFF})
    return ",".join(f"{k}={v}" for k, v in gates.items())


def cluster_objects(objects: list[dict[str, Any]], webhook_port: int) -> list[dict[str, Any]]:
    """What the harness applies of the chart: the CRDs, the webhook Secret, the webhook configurations as
    rendered but for the port they name (``webhook_port``: the control planes of a run share 127.0.0.1,
    the chart's 443 would be one for all; the CRDs' conversion webhooks too), and the webhook Service made
    an ``ExternalName`` to 127.0.0.1 (no pod network here)."""
    kept: list[dict[str, Any]] = []
    for o in objects:
        if o["kind"] == "CustomResourceDefinition":
            o = copy.deepcopy(o)
            webhook = (o["spec"].get("conversion") or {}).get("webhook")
            if webhook:
                webhook["clientConfig"]["service"]["port"] = webhook_port
            kept.append(o)
    kept.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
    kept.append(_one(objects, "Secret", f"{RELEASE}-webhook-server-cert"))
    service = copy.deepcopy(_one(objects, "Service", SERVICE))
    service["spec"] = {"type": "ExternalName", "externalName": HOST, "ports": service["spec"]["ports"]}
    kept.append(service)
    for o in objects:
        if o["kind"] in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            o = copy.deepcopy(o)
            for hook in o["webhooks"]:
                hook["clientConfig"]["service"]["port"] = webhook_port
            kept.append(o)
    return kept


class SecretVolume:
    """What the kubelet does for the chart's pod: the webhook Secret's keys as files in ``folder``, kept in
    step with the Secret. Kueue's cert-controller writes the certificates to the Secret and waits for
    them to appear on disk (cert-controller ``rotator.go`` ensureCertsMounted), as a Secret volume."""

    def __init__(self, kube: Any, name: str, folder: Path) -> None:
        import threading

        self.kube, self.name, self.folder = kube, name, folder
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        import base64
        import contextlib

        from kubernetes.client.rest import ApiException

        written: dict[str, str] = {}
        while not self.stopped.wait(0.2):
            with contextlib.suppress(ApiException, OSError):
                data = self.kube.core.read_namespaced_secret(self.name, NAMESPACE).data or {}
                for key, value in data.items():
                    if written.get(key) != value:
                        self.folder.mkdir(parents=True, exist_ok=True)
                        part = self.folder / f".{key}.new"
                        part.write_bytes(base64.b64decode(value))
                        part.replace(self.folder / key)  # whole, as the kubelet swaps its ..data link
                        written[key] = value

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status
    except OSError:
        return 0


class Kueue:
    """The controller for one set of chart values: ``install`` the chart's objects once, then ``start``
    and ``stop`` the process (a scenario stops it to see what users see while it is down). While it
    runs, :class:`SecretVolume` plays the kubelet's Secret volume for its certificates."""

    def __init__(
        self,
        kube: Any,
        values: Mapping[str, Any],
        workdir: Path = RUN / "kueue",
        webhook_port: int | None = None,
    ) -> None:
        self.kube, self.workdir, self.values = kube, workdir, dict(values)
        self.objects = rendered(values)
        self.ports = {
            "health": free_port(),
            "metrics": free_port(),
            "webhook": webhook_port or free_port(),
        }
        config = local_configuration(configuration(self.objects), self.ports, workdir / "certs")
        workdir.mkdir(parents=True, exist_ok=True)
        self.config_file = workdir / "controller_manager_config.yaml"
        self.config_file.write_text(yaml.safe_dump(config))
        self.gates = feature_gates(self.objects)
        self.volume: SecretVolume | None = None

    def install(self) -> None:
        from localcluster.karpenter import apply_crds  # the same wait for Established

        crds = [
            o
            for o in cluster_objects(self.objects, self.ports["webhook"])
            if o["kind"] == "CustomResourceDefinition"
        ]
        apply_crds(self.kube, crds)
        for manifest in cluster_objects(self.objects, self.ports["webhook"]):
            if manifest["kind"] != "CustomResourceDefinition":
                self.kube.apply(manifest)

    def uninstall(self) -> None:
        """Remove what ``install`` applied: the webhook configurations first (they fail closed), the
        namespace with the Service, Secret and Lease, then the CRDs. Kueue's objects should be gone by
        then: their finalizers are the stopped controller's to remove."""
        from kubernetes.client.rest import ApiException

        applied = cluster_objects(self.objects, self.ports["webhook"])
        for manifest in applied:
            if manifest["kind"].endswith("WebhookConfiguration"):
                with contextlib.suppress(ApiException):
                    self.kube.resource(manifest).delete(name=manifest["metadata"]["name"])
        self.kube.delete_namespace(NAMESPACE)
        remove_crds(self.kube, [o for o in applied if o["kind"] == "CustomResourceDefinition"])

    def command(self) -> list[str]:
        return [
            str(BINARY),
            f"--config={self.config_file}",
            f"--feature-gates={self.gates}",
            "--zap-log-level=2",  # the chart's logLevel default
        ]

    def start(self, kubeconfig: Path, timeout: float = 120) -> None:
        """Start the controller; returns once it is ready and its CA is in every webhook configuration."""
        if not BINARY.is_file():
            raise ClusterError(f"not built: {BINARY}; run localcluster/build kueue first")
        try:
            self.volume = SecretVolume(self.kube, f"{RELEASE}-webhook-server-cert", self.workdir / "certs")
            services.start(
                NAME, self.command(), self.ready, env={"KUBECONFIG": str(kubeconfig)}, timeout=timeout
            )
        except BaseException:
            self.stop()  # the Secret volume too
            raise

    def ready(self) -> bool:
        """Ready as the chart's probe asks (``/readyz``), its CA in the webhook configurations, and leading:
        only the leader admits (a restart waits for the old Lease to be released or to expire)."""
        return (
            _status(f"http://{HOST}:{self.ports['health']}/readyz") == 200
            and self.ca_injected()
            and self.leading()
        )

    def leading(self) -> bool:
        """A process holds the chart's Lease (a stopped controller releases it: ReleaseOnCancel)."""
        from kubernetes import client
        from kubernetes.client.rest import ApiException

        config = configuration(self.objects)
        name = config.get("leaderElection", {}).get("resourceName", "c1f6bfd2.kueue.x-k8s.io")
        try:
            lease = client.CoordinationV1Api(self.kube.api).read_namespaced_lease(name, NAMESPACE)
        except ApiException:
            return False
        return bool(lease.spec.holder_identity)

    def ca_injected(self) -> bool:
        """Kueue's cert-controller has put its CA into both webhook configurations."""
        for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            api = self.kube.dynamic.resources.get(api_version="admissionregistration.k8s.io/v1", kind=kind)
            found = api.get(
                name=f"{RELEASE}-{kind[: -len('WebhookConfiguration')].lower()}-webhook-configuration"
            )
            if not all(w.clientConfig.get("caBundle") for w in found.webhooks):
                return False
        return True

    def alive(self) -> bool:
        return services.alive(NAME)

    def stop(self) -> None:
        services.stop(NAME)
        if self.volume is not None:
            self.volume.stop()
            self.volume = None

    def log_tail(self, lines: int = 30) -> str:
        return services.log_tail(NAME, lines)


@contextlib.contextmanager
def running(
    kube: Any, values: Mapping[str, Any], kubeconfig: Path, workdir: Path = RUN / "kueue"
) -> Iterator[Kueue]:
    """The chart's objects for ``values`` installed and the controller started; stopped and uninstalled
    after (its webhooks fail closed: left behind with no controller, they would refuse other tests' Jobs)."""
    controller = Kueue(kube, values, workdir)
    controller.install()
    try:
        controller.start(kubeconfig)
        yield controller
    finally:
        try:
            controller.stop()
        finally:
            controller.uninstall()


def wait(what: str, check: Any, timeout: float = 60, kueue: Kueue | None = None) -> Any:
    """Poll ``check``; the error says what never happened, with the controller's last words."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if kueue is not None and not kueue.alive():
            raise RuntimeError(f"kueue exited while waiting for {what}:\n{kueue.log_tail()}")
        if time.monotonic() > deadline:
            tail = kueue.log_tail(15) if kueue else ""
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}\n{tail}")
        time.sleep(0.2)


def dump(value: Any) -> str:
    return json.dumps(value, indent=1, default=str)
