"""Start, check and stop the local control plane: etcd, the Kubernetes control plane, kwok.

Everything listens on 127.0.0.1 only, on ports picked free at start. State (pids,
ports, certificates, etcd's data, logs, the kubeconfig) lives in
``.cache/localcluster/run``; ``stop`` ends every process it started and removes it.
A start over a half-dead cluster (a killed API server, a crashed start) stops the
rest first, so a retry is always clean.
"""

from __future__ import annotations

import dataclasses
import json
import random
import shutil
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from localcluster import pki, processes, services
from localcluster.gomod import BIN, module_dir
from localcluster.processes import RUN, ClusterError, alive, start_time

ROOT = Path(__file__).resolve().parents[1]
STATE = RUN / "state.json"
KUBECONFIG = RUN / "kubeconfig"
HOST = "127.0.0.1"
SERVICE_RANGE = "10.96.0.0/16"
# EKS turns on ExtendedResourceToleration (a pod asking for nvidia.com/gpu tolerates a
# taint of that name); PodSecurity is on by default and enforced per namespace label.
ADMISSION = "ExtendedResourceToleration"
STARTUP_SECONDS = 90


@dataclass(frozen=True)
class Ports:
    etcd: int
    etcd_peer: int
    apiserver: int
    controller_manager: int
    scheduler: int
    kwok: int


def free_port() -> int:
    """A loopback port free now, below the kernel's ephemeral range. ``bind(0)`` would pick one inside
    it, where every new outgoing connection of the run takes its local port: one could take it between
    this pick and the service's own bind ("address already in use", seen under load)."""
    low = _ephemeral_low()
    for _ in range(200 if low - PORTS_FROM >= 1000 else 0):  # else the ephemeral range starts low
        port = random.randrange(PORTS_FROM, low)
        with socket.socket() as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            return port
    with socket.socket() as s:  # the kernel's pick, as before
        s.bind((HOST, 0))
        return s.getsockname()[1]


PORTS_FROM = 10000  # above the ports other development servers usually take
EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (Linux's default 32768; 49152 elsewhere)."""
    try:
        return int(EPHEMERAL.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _pki(name: str) -> str:
    return str(RUN / "pki" / name)


def _etcd(p: Ports) -> list[str]:
    """etcd's command line: one member, its data in the run folder."""
    return [
        str(BIN / "etcd"),
        f"--data-dir={RUN / 'etcd'}",
        f"--listen-client-urls=http://{HOST}:{p.etcd}",
        f"--advertise-client-urls=http://{HOST}:{p.etcd}",
        f"--listen-peer-urls=http://{HOST}:{p.etcd_peer}",
        f"--initial-advertise-peer-urls=http://{HOST}:{p.etcd_peer}",
        f"--initial-cluster=default=http://{HOST}:{p.etcd_peer}",
        "--unsafe-no-fsync",  # a throwaway test store: durability is not wanted
        "--log-level=warn",
    ]


def _kwok(p: Ports, kubeconfig: str) -> list[str]:
    """kwok's command line: it manages the nodes annotated fake and runs the stages below."""
    return [
        str(BIN / "kwok"),
        f"--kubeconfig={kubeconfig}",
        "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
        "--node-lease-duration-seconds=40",
        f"--server-address={HOST}:{p.kwok}",  # its /healthz, served once its controllers run
        *(f"--config={stage}" for stage in _kwok_stages()),
    ]


def _commands(p: Ports) -> dict[str, list[str]]:
    """Each component's command line, in start order."""
    kubeconfig = str(KUBECONFIG)
    return {
        "etcd": _etcd(p),
        "kube-apiserver": [
            str(BIN / "kube-apiserver"),
            f"--etcd-servers=http://{HOST}:{p.etcd}",
            f"--bind-address={HOST}",
            f"--advertise-address={HOST}",
            f"--secure-port={p.apiserver}",
            f"--tls-cert-file={_pki('apiserver.crt')}",
            f"--tls-private-key-file={_pki('apiserver.key')}",
            f"--client-ca-file={_pki('ca.crt')}",
            f"--service-account-key-file={_pki('sa.pub')}",
            f"--service-account-signing-key-file={_pki('sa.key')}",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-cluster-ip-range={SERVICE_RANGE}",
            "--authorization-mode=Node,RBAC",
            f"--enable-admission-plugins={ADMISSION}",
            "--allow-privileged=true",
            # The kubernetes Service would point at 127.0.0.1, which Endpoints refuse.
            "--endpoint-reconciler-type=none",
        ],
        "kube-controller-manager": [
            str(BIN / "kube-controller-manager"),
            f"--kubeconfig={kubeconfig}",
            f"--bind-address={HOST}",
            f"--secure-port={p.controller_manager}",
            "--leader-elect=false",
            f"--service-account-private-key-file={_pki('sa.key')}",
            f"--root-ca-file={_pki('ca.crt')}",
            f"--service-cluster-ip-range={SERVICE_RANGE}",
            "--controllers=*",
            "--kube-api-qps=200",  # hundreds of generated nodes: the default 20/s makes tests wait
            "--kube-api-burst=400",
        ],
        "kube-scheduler": [
            str(BIN / "kube-scheduler"),
            f"--kubeconfig={kubeconfig}",
            f"--authentication-kubeconfig={kubeconfig}",
            f"--authorization-kubeconfig={kubeconfig}",
            f"--bind-address={HOST}",
            f"--secure-port={p.scheduler}",
            "--leader-elect=false",
            "--kube-api-qps=200",
            "--kube-api-burst=400",
        ],
        "kwok": _kwok(p, kubeconfig),
    }


KWOK_STAGES = (
    # Our nodes are registered Ready (localcluster/nodes.py), so these two stages find nothing
    # to do; what keeps them Ready is kwok's own lease renewal (--node-lease-duration-seconds).
    "node/fast/node-initialize.yaml",
    "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
    "pod/fast/pod-ready.yaml",  # a bound pod runs and is Ready
    "pod/fast/pod-complete.yaml",  # a Job's pod succeeds
    "pod/fast/pod-delete.yaml",  # a deleted pod goes away
)


# A Job's pod annotated with kwok's own delay annotation (its general pod-complete stage reads the same
# one: a Go duration such as "1h") succeeds only after that delay, so it holds its node and its quota
# until then (Kueue's preemption scenarios); every other Job's pod still succeeds at once.
HOLD_ANNOTATION = "pod-complete.stage.kwok.x-k8s.io/delay"


def _held(stage: Path) -> list[Path]:
    """The fast pod-complete stage split in two, written to the run folder: unchanged for pods without
    ``HOLD_ANNOTATION``, and after the annotation's delay for pods with it."""
    key = f'.metadata.annotations["{HOLD_ANNOTATION}"]'
    out: list[Path] = []
    for suffix, operator in (("", "DoesNotExist"), ("-held", "Exists")):
        document = yaml.safe_load(stage.read_text())
        document["metadata"]["name"] += suffix
        document["spec"]["selector"]["matchExpressions"].append({"key": key, "operator": operator})
        if suffix:
            document["spec"]["delay"] = {"durationMilliseconds": 0, "durationFrom": {"expressionFrom": key}}
        path = RUN / "kwok-stages" / f"{document['metadata']['name']}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(document))
        out.append(path)
    return out


def _kwok_stages() -> list[str]:
    """kwok's own stage files, from its module at the pinned version (kwok runs none by default)."""
    root = module_dir("tools", "sigs.k8s.io/kwok") / "kustomize" / "stage"
    return [
        str(path)
        for stage in KWOK_STAGES
        for path in (_held(root / stage) if stage.endswith("pod-complete.yaml") else [root / stage])
    ]


def _kubeconfig(p: Ports) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "local",
                    "cluster": {
                        "server": f"https://{HOST}:{p.apiserver}",
                        "certificate-authority": _pki("ca.crt"),
                    },
                }
            ],
            "users": [
                {
                    "name": "admin",
                    "user": {"client-certificate": _pki("admin.crt"), "client-key": _pki("admin.key")},
                }
            ],
            "contexts": [{"name": "local", "context": {"cluster": "local", "user": "admin"}}],
            "current-context": "local",
        },
        indent=2,
    )


def _get(url: str, *, tls: bool | None) -> int:
    """The HTTP status of ``url`` (0: no answer). tls: True as admin, None unverified, False plain."""
    context = None
    if tls is None:
        context = ssl._create_unverified_context()  # self-signed serving certs of our own components
    elif tls:
        context = ssl.create_default_context(cafile=_pki("ca.crt"))
        context.load_cert_chain(_pki("admin.crt"), _pki("admin.key"))
    try:
        with urllib.request.urlopen(url, context=context, timeout=2) as response:
            return response.status
    except OSError:
        return 0


def _ready_checks(p: Ports) -> dict[str, Callable[[], bool]]:
    api = f"https://{HOST}:{p.apiserver}"
    return {
        "etcd": lambda: _get(f"http://{HOST}:{p.etcd}/health", tls=False) == 200,
        "kube-apiserver": lambda: _get(f"{api}/readyz", tls=True) == 200,
        "kube-controller-manager": lambda: (
            _get(f"https://{HOST}:{p.controller_manager}/healthz", tls=None) == 200
        ),
        "kube-scheduler": lambda: _get(f"https://{HOST}:{p.scheduler}/healthz", tls=None) == 200,
        "kwok": lambda: _get(f"http://{HOST}:{p.kwok}/healthz", tls=False) == 200,
    }


def _read_state() -> dict | None:
    try:
        return json.loads(STATE.read_text())
    except (OSError, ValueError):
        return None


def status() -> dict[str, bool]:
    """Each started component and whether its process is alive; empty when nothing was started."""
    state = _read_state() or {}
    started = state.get("started", {})
    return {name: alive(pid, started.get(name)) for name, pid in state.get("pids", {}).items()}


def _wait(name: str, check: Callable[[], bool], pid: int) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if not alive(pid):
            raise ClusterError(f"{name} exited during start-up; its log: {RUN / 'logs' / (name + '.log')}")
        if check():
            return
        time.sleep(0.2)
    raise ClusterError(
        f"{name} not ready after {STARTUP_SECONDS} s; its log: {RUN / 'logs' / (name + '.log')}"
    )


COMPONENTS = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def _missing_binaries() -> list[str]:
    return [name for name in COMPONENTS if not (BIN / name).is_file()]


def start(log: Callable[[str], None] = print) -> Path:
    """Start the control plane and kwok (or find it running); returns the kubeconfig path."""
    running = status()
    if running and all(running.values()):
        log(f"local cluster already running; kubeconfig: {KUBECONFIG}")
        return KUBECONFIG
    if running:
        dead = ", ".join(n for n, ok in running.items() if not ok)
        log(f"stale local cluster ({dead} not running): stopping the rest before a clean start")
        stop(log)
    missing = _missing_binaries()
    if missing:
        raise ClusterError(f"not built: {', '.join(missing)} in {BIN}; run localcluster/build first")
    services.stop_all()  # moto, the autoscaler: whatever a killed run left beside the control plane
    shutil.rmtree(RUN, ignore_errors=True)
    (RUN / "logs").mkdir(parents=True)
    pki.write(RUN / "pki")
    ports = Ports(*(free_port() for _ in range(len(dataclasses.fields(Ports)))))
    KUBECONFIG.write_text(_kubeconfig(ports))
    pids: dict[str, int] = {}
    started: dict[str, str | None] = {}
    checks = _ready_checks(ports)
    try:
        for name, argv in _commands(ports).items():
            log(f"starting {name}")
            with open(RUN / "logs" / f"{name}.log", "wb") as out:
                proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            pids[name] = proc.pid
            started[name] = start_time(proc.pid)
            STATE.write_text(json.dumps({"pids": pids, "started": started, "ports": ports.__dict__}))
            if name in checks:
                _wait(name, checks[name], proc.pid)
    except BaseException:
        stop(lambda _: None)
        raise
    return KUBECONFIG


def stop(log: Callable[[str], None] = print) -> None:
    """End every process the last start began (their whole process groups) and remove the state."""
    services.stop_all()  # moto, the autoscaler: whatever a killed run left beside the control plane
    state = _read_state()
    if state is None:
        log("local cluster not running")
        return
    started = state.get("started", {})
    ours = {name: pid for name, pid in state.get("pids", {}).items() if alive(pid, started.get(name))}
    for name in reversed(list(ours)):
        log(f"stopping {name}")
    processes.end({pid: started.get(name) for name, pid in reversed(ours.items())})
    STATE.unlink(missing_ok=True)
