"""Karpenter's real core on the local control plane, with its kwok cloud provider.

``karpenter-kwok`` is ``sigs.k8s.io/karpenter/kwok`` at the version ``localcluster/karpenter/go.mod``
pins (built by ``localcluster/build karpenter``): the core's provisioner, scheduler simulation,
limits and disruption, launching fake nodes (annotated for kwok) instead of EC2 instances. Its
instance types are generated from the platform's own table (infra/platform/instance_types.py),
its CRDs come from the same module, and its feature gates from the pinned chart rendered with the
values the platform program declares. The one thing changed in a declared NodePool is its node
class: kwok's instead of the EC2NodeClass (validated on its own against the AWS provider's CRD).
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from kubernetes.dynamic.exceptions import NotFoundError

from infra.platform import nodepool
from infra.platform.allocatable import allocatable
from infra.platform.instance_types import ARM_NVIDIA, X86_NVIDIA
from infra.tooling import gomod
from infra.tooling.manifests import KARPENTER_AWS, KARPENTER_PINS, yaml_documents
from infra.tooling.pinned_chart import render
from infra.workloads.placement import GPU_RESOURCE
from localcluster import netns
from localcluster.gomod import BIN, module_dir, pinned_version

PINS, CORE = "karpenter", "sigs.k8s.io/karpenter"
# The AWS provider at the same version: package data, since the preview checks CRDs with it.
AWS_PINS, AWS_PROVIDER = KARPENTER_PINS, KARPENTER_AWS
BINARY = BIN / "karpenter-kwok"
KWOK_NODE_CLASS = {
    "apiVersion": "karpenter.kwok.sh/v1alpha1",
    "kind": "KWOKNodeClass",
    "metadata": {"name": "default"},
}
ZONES = ("us-west-2a", "us-west-2b", "us-west-2c")
# On-demand prices are AWS's (instance_types.py; karpenter-provider-aws v1.15.0's own generated table,
# pkg/providers/pricing/zz_generated.pricing_aws.go, us-east-1, has the same figures). No spot price
# can be had offline: the AWS provider itself prices spot at on-demand until DescribeSpotPriceHistory
# answers (pricing.go SpotPrice, defaultPrice), and with both allowed it launches spot whatever the
# prices (instance.go). kwok instead takes the cheapest offering, at random among equal prices
# (kwok/cloudprovider/cloudprovider.go toNode), so spot is listed below on-demand to make kwok choose
# as the AWS provider does. The factor is this harness's, named here and in docs/local-cluster.md;
# no scenario depends on the number.
SPOT_PRICE_FACTOR = 0.4
# Settings of the chart's controller container that the core reads (operator/options/options.go).
CORE_ENV = (
    "FEATURE_GATES",
    "BATCH_MAX_DURATION",
    "BATCH_IDLE_DURATION",
    "PREFERENCE_POLICY",
    "MIN_VALUES_POLICY",
)


def version() -> str:
    """The pinned version, without its ``v``; the AWS provider is pinned at the same one (build.sh checks)."""
    return pinned_version(PINS, CORE).removeprefix("v")


def _documents(path: Path) -> list[dict[str, Any]]:
    return yaml_documents(path.read_text())


def crds() -> list[dict[str, Any]]:
    """The core's CRDs (NodePool, NodeClaim, NodeOverlay, ...) and kwok's node class, at the pinned version."""
    core = module_dir(PINS, CORE)
    files = [
        *sorted((core / "pkg" / "apis" / "crds").glob("*.yaml")),
        *sorted((core / "kwok" / "apis" / "crds").glob("*.yaml")),
    ]
    return [d for f in files for d in _documents(f)]


def aws_crds() -> list[dict[str, Any]]:
    """The AWS provider's EC2NodeClass CRD at the pinned version."""
    path = (
        gomod.module_dir(AWS_PINS, AWS_PROVIDER)
        / "pkg"
        / "apis"
        / "crds"
        / "karpenter.k8s.aws_ec2nodeclasses.yaml"
    )
    return _documents(path)


def chart() -> Path:
    return gomod.module_dir(AWS_PINS, AWS_PROVIDER) / "charts" / "karpenter"


# What kwok's provider takes off every type's resources (kwok/cloudprovider/helpers.go: KubeReserved).
KWOK_OVERHEAD_MILLICPU, KWOK_OVERHEAD_MIB = 100, 10


def _resources(instance_type: str, gpus: int) -> dict[str, str]:
    """A type's resources as kwok's provider reads them: nodeadm's allocatable (allocatable.py) plus
    kwok's own overhead, so the nodes Karpenter launches offer pods what a real AL2023 node does
    (their capacity is understated by the reserves; pods are scheduled on allocatable)."""
    offered = allocatable(instance_type, managed_node_group=False)
    return {
        "cpu": f"{offered.cpu_millis + KWOK_OVERHEAD_MILLICPU}m",
        "memory": f"{offered.memory_mib + KWOK_OVERHEAD_MIB}Mi",
        "pods": str(offered.pods),
        GPU_RESOURCE: str(gpus),
    }


def instance_types() -> list[dict[str, Any]]:
    """kwok's instance types: every NVIDIA type AWS sells near the pools, not only the pools' own: the
    Arm ones and x86 ones (g4dn.xlarge is cheaper than g5g.2xlarge), each with its architecture,
    what a real node of it offers pods (:func:`_resources`) and spot and on-demand offerings in each zone. Only the
    NodePools' requirements keep Karpenter off the types a pool does not list."""

    def offering(capacity: str, price: float, zone: str) -> dict[str, Any]:
        return {
            "Price": price,
            "Available": True,
            "Requirements": [
                {"key": nodepool.CAPACITY_TYPE_LABEL, "operator": "In", "values": [capacity]},
                {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]},
            ],
        }

    return [
        {
            "name": t.name,
            "architecture": arch,
            "operatingSystems": ["linux"],
            "resources": _resources(t.name, t.gpus),
            "offerings": [
                offering(capacity, price, zone)
                for zone in ZONES
                for capacity, price in (
                    ("on-demand", t.usd_per_hour),
                    ("spot", t.usd_per_hour * SPOT_PRICE_FACTOR),
                )
            ],
        }
        for arch, table in (("arm64", ARM_NVIDIA), ("amd64", X86_NVIDIA))
        for t in table.values()
        if t.usd_per_hour is not None
    ]


def for_kwok(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """A declared NodePool with kwok's node class in place of its EC2NodeClass; nothing else changed."""
    result = copy.deepcopy(dict(manifest))
    if result.get("kind") == "NodePool":
        group = KWOK_NODE_CLASS["apiVersion"].split("/")[0]
        ref = {"group": group, "kind": KWOK_NODE_CLASS["kind"], "name": KWOK_NODE_CLASS["metadata"]["name"]}
        result["spec"]["template"]["spec"]["nodeClassRef"] = ref
    return result


def controller_env(values: Mapping[str, Any]) -> dict[str, str]:
    """The core's settings as the pinned chart sets them from ``values`` (its Deployment's env)."""
    rendered = render(values, release="karpenter", namespace="kube-system", chart=chart())
    deployment = next(d for d in rendered if d["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    return {
        e["name"]: str(e["value"]) for e in container.get("env", []) if e["name"] in CORE_ENV and "value" in e
    }


class Controller:
    """One ``karpenter-kwok`` process against a kubeconfig; ``stop`` ends it."""

    def __init__(
        self, kubeconfig: Path, workdir: Path, env: Mapping[str, str], ports: tuple[int, int]
    ) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        types = workdir / "instance-types.json"
        types.write_text(json.dumps(instance_types(), indent=1))
        self.log = workdir / "karpenter.log"
        environment = {
            **os.environ,
            **env,
            "KUBECONFIG": str(kubeconfig),
            "DISABLE_LEADER_ELECTION": "true",
            "INSTANCE_TYPES_FILE_PATH": str(types),
            "METRICS_PORT": str(ports[0]),
            "HEALTH_PROBE_PORT": str(ports[1]),
            "LOG_LEVEL": "debug",
        }
        # In a network namespace of its own: it binds its ports on every interface (localcluster/netns.py).
        server = json.loads(kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
        port, sock = int(server.rsplit(":", 1)[1]), workdir / "api.sock"
        self.bridge = netns.bridge(sock, port)
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                netns.command(sock, port, [str(BINARY)]),
                cwd=Path(__file__).resolve().parents[1],
                env=environment,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        if self.alive():
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)  # its own session: the namespace's processes
                self.process.wait()
        self.bridge.close()

    def decisions(self) -> Iterator[str]:
        """Its log lines, for a failing test's message."""
        yield from self.log.read_text(errors="replace").splitlines()


def wait_until(what: str, check: Any, timeout: float, controller: Controller | None = None) -> Any:
    """Poll ``check``; the error says what never happened, with the controller's last words."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if controller is not None and not controller.alive():
            raise RuntimeError(f"karpenter-kwok exited while waiting for {what}; log: {controller.log}")
        if time.monotonic() > deadline:
            tail = "\n".join(list(controller.decisions())[-15:]) if controller else ""
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}\n{tail}")
        time.sleep(0.2)


# The dev stack's config plus two pools Karpenter provisions: what the scenarios run.
POOLS = {
    # Small models on a slice of a T4G, spot where it is to be had.
    "burst": {
        "provisioner": "karpenter",
        "instanceTypes": ["g5g.xlarge", "g5g.2xlarge", "g5g.4xlarge"],
        "maxSize": 2,
        "sharing": {"timeSlicing": {"replicas": 4}},
        "karpenter": {"capacityTypes": ["SPOT", "ON_DEMAND"], "consolidateAfter": "20s"},
    },
    # Whole GPUs on demand, at most two nodes; not the cheapest GPU types AWS sells (g5g.xlarge,
    # g4dn.xlarge), so a scenario shows that the pool's own types are what Karpenter picks from.
    "batch": {
        "provisioner": "karpenter",
        "instanceTypes": ["g5g.4xlarge", "g5g.2xlarge"],
        "maxSize": 2,
        "karpenter": {"consolidateAfter": "20s"},
    },
}


def platform_run(pools: Mapping[str, Any] = POOLS, top: Mapping[str, Any] | None = None) -> Any:
    """The platform program run offline on the dev stack's config with ``pools`` (and the top-level
    settings ``top``) added: (config, Run)."""
    import runpy
    import sys

    from infra.platform.config import load
    from infra.tooling.offline import PLATFORM_ROOT, load_project, run_program

    project, config = load_project(PLATFORM_ROOT, "dev")
    key = f"{project}:gpuPools"
    config[key] = json.dumps({**json.loads(config[key]), **pools})
    config.update(
        {f"{project}:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in (top or {}).items()}
    )
    raw = {
        k.removeprefix(f"{project}:"): json.loads(v) if v[:1] in "[{" else v
        for k, v in config.items()
        if k.startswith(f"{project}:")
    }
    settings = load(raw, region=config["aws:region"], default_cluster_name=f"{project}-dev")
    sys.path.insert(0, str(PLATFORM_ROOT))
    try:
        program = lambda: runpy.run_path(str(PLATFORM_ROOT / "__main__.py"), run_name="__main__")  # noqa: E731
        return settings, run_program(program, project=project, stack="dev", config=config, preview=True)
    finally:
        sys.path.remove(str(PLATFORM_ROOT))


def declared(run: Any, kind: str) -> list[dict[str, Any]]:
    """The ``kind`` objects (NodePool, EC2NodeClass, NodeOverlay) the run declared, as applied."""
    from infra.tooling.manifests import manifest_of

    return [manifest_of(r.type, r.name, r.inputs) for r in run.resources if r.type.endswith(f":{kind}")]


def release_values(run: Any) -> dict[str, Any]:
    """The values the program gives Karpenter's chart."""
    return dict(run.one("kubernetes:helm.sh/v3:Release", "karpenter").inputs["values"])


def _known(value: Any) -> Any:
    """Values without what only AWS can tell (the queue's name): the chart renders the rest."""
    if isinstance(value, dict):
        plain = (dict, list, str, int, float, bool)
        return {
            k: _known(v)
            for k, v in value.items()
            if isinstance(v, plain) and not str(v).startswith("computed(")
        }
    return value


def _established(kube: Any, name: str) -> bool:
    crd = kube.dynamic.resources.get(api_version="apiextensions.k8s.io/v1", kind="CustomResourceDefinition")
    return any(
        c.type == "Established" and c.status == "True" for c in crd.get(name=name).status.conditions or []
    )


def apply_crds(kube: Any, documents: list[dict[str, Any]]) -> None:
    """Apply CRDs and wait until the API server serves them."""
    for crd in documents:
        kube.apply(crd)
    for crd in documents:
        name = crd["metadata"]["name"]
        wait_until(f"CRD {name} established", lambda n=name: _established(kube, n), 30)
    kube.dynamic.resources.invalidate_cache()  # the client learns the new kinds (discovery is cached)


def _nodepool_ready(kube: Any, name: str) -> bool:
    pool = kube.resource({"apiVersion": nodepool.API, "kind": "NodePool"}).get(name=name)
    return any(c.type == "Ready" and c.status == "True" for c in (pool.status or {}).get("conditions") or [])


class DevicePlugin:
    """What the NVIDIA DaemonSet does on each node Karpenter brings: advertise its GPUs, time-sliced as the
    program's plugin config says for the node's config label (localcluster.nodes.advertised_gpus)."""

    def __init__(self, kube: Any, run: Any) -> None:
        import threading

        self.kube, self.run, self.stopped = kube, run, threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        import contextlib

        from kubernetes.client.rest import ApiException

        from localcluster.nodes import advertised_gpus

        while not self.stopped.wait(0.1):
            for node in self.kube.nodes(nodepool.NODEPOOL_LABEL):
                labels = node.metadata.labels
                gpus = str(
                    advertised_gpus(
                        labels, ARM_NVIDIA[labels["node.kubernetes.io/instance-type"]].gpus, self.run
                    )
                )
                if (node.status.allocatable or {}).get(GPU_RESOURCE) != gpus:
                    status = {"capacity": {GPU_RESOURCE: gpus}, "allocatable": {GPU_RESOURCE: gpus}}
                    with contextlib.suppress(ApiException):  # gone meanwhile: the next round sees it
                        self.kube.core.patch_node_status(node.metadata.name, {"status": status})

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join()


def install(kube: Any, run: Any) -> list[dict[str, Any]]:
    """The pinned CRDs, kwok's node class, and the run's NodeOverlays and NodePools (kwok's node class in)."""
    apply_crds(kube, crds())
    kube.apply(KWOK_NODE_CLASS)
    objects = [for_kwok(m) for m in (*declared(run, "NodeOverlay"), *declared(run, "NodePool"))]
    for manifest in objects:
        kube.apply(manifest)
    return objects


def start(kube: Any, run: Any, kubeconfig: Path, workdir: Path, ports: tuple[int, int]) -> Controller:
    """The controller with the chart's settings for the run's values; returns once every NodePool is Ready."""
    controller = Controller(kubeconfig, workdir, controller_env(_known(release_values(run))), ports)
    for manifest in declared(run, "NodePool"):
        name = manifest["metadata"]["name"]
        wait_until(f"NodePool {name} Ready", lambda n=name: _nodepool_ready(kube, n), 60, controller)
    return controller


def nodeclaims(kube: Any, pool: str | None = None) -> list[Any]:
    """Karpenter's NodeClaims (of ``pool``'s NodePool)."""
    selector = f"{nodepool.NODEPOOL_LABEL}={nodepool.name(pool)}" if pool else nodepool.NODEPOOL_LABEL
    return kube.resource({"apiVersion": nodepool.API, "kind": "NodeClaim"}).get(label_selector=selector).items


def delete_nodeclaims(kube: Any, controller: Controller) -> None:
    """Every NodeClaim deleted and gone (Karpenter ends each one's node first, its finalizer):
    a scenario, or a session killed before its NodePools were removed, leaves none to the next."""
    for claim in nodeclaims(kube):
        with contextlib.suppress(NotFoundError):  # Karpenter removed it meanwhile
            kube.resource({"apiVersion": nodepool.API, "kind": "NodeClaim"}).delete(name=claim.metadata.name)
    wait_until("the Karpenter nodes to go", lambda: not nodeclaims(kube), 120, controller)


def uninstall(kube: Any, objects: list[dict[str, Any]], controller: Controller) -> None:
    """Delete the NodePools and overlays; Karpenter removes their nodes before it is stopped."""
    for manifest in reversed(objects):
        kube.resource(manifest).delete(name=manifest["metadata"]["name"])
    try:
        wait_until("Karpenter to remove its nodes", lambda: not nodeclaims(kube), 120, controller)
    finally:
        controller.stop()
