"""The real Cluster Autoscaler deciding on the local cluster, against moto's AWS on loopback.

``running(run, region, kube)`` empties moto's server (one per control plane, reset between runs:
:func:`moto_for_a_run`), seeds it from the platform's registrations (``aws_seed``), writes the
priority expander's ConfigMap where the chart would, and starts the autoscaler built from
``localcluster/autoscaler`` with the arguments the platform's Helm values render to
(``chart_args``), plus only what points it at this cluster and at moto (flags the run needs only
because AWS is moto here): ``--kubeconfig``, ``--cloud-config`` with a ``[ServiceOverride]`` per
service (ec2, autoscaling, eks), no leader election, a loopback ``--address`` and dummy
credentials; and one difference in timing, never in what it decides: ``--scan-interval=1s``
(``TEST_RUN_ARGS``; docs/local-cluster.md says why it is the only one). No static instance list:
1.33.0's SDK v1 session carries the overrides' resolver (aws_sdk_provider.go
createAWSSDKProvider), so DescribeInstanceTypes reaches moto as it reaches EC2 in production,
which never sets ``--aws-use-static-instance-list``.
The binary is 1.33.0, the newest the Go proxy serves; the platform deploys 1.35.2, which always runs
DRA and labels its template nodes ``cluster-autoscaler.kubernetes.io/template-node``: neither is
exercised here (docs/decisions/0075 lists what differs and stays untested).
Instances moto launches become kwok nodes (``registrar``). Leaving ``running`` ends the autoscaler;
moto ends with the control plane.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache, partial
from typing import Any

import requests
from kubernetes.client.rest import ApiException

from infra.tooling.offline import Run
from localcluster import chart_args, services
from localcluster.aws_seed import SeededGroup, seed
from localcluster.cluster import BIN, HOST, KUBECONFIG, ROOT, RUN, ClusterError, _get, free_port
from localcluster.kube import Kube
from localcluster.nodes import NODE_GROUP, RELEASE, mirror
from localcluster.registrar import Registrar

MOTO, AUTOSCALER = "moto", "cluster-autoscaler"
NAMESPACE = "kube-system"
CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
# The test run's one difference from the chart: the autoscaler looks every second instead of its
# default 10 s (config/const.go DefaultScanInterval), so a scenario waits one short loop, not ten
# seconds, for each decision. The loop's decisions are the same; the other timing flags stay the
# chart's (docs/local-cluster.md, "the real Cluster Autoscaler", says why each).
SCAN_INTERVAL_SECONDS = 1
TEST_RUN_ARGS = (f"--scan-interval={SCAN_INTERVAL_SECONDS}s",)


def autoscaler_values(run: Run) -> dict[str, Any]:
    """The autoscaler release's Helm values, as the platform program declares them."""
    releases = [r for r in run.of_type(RELEASE) if r.inputs.get("chart") == "cluster-autoscaler"]
    if len(releases) != 1:
        raise ClusterError("the program declares no cluster-autoscaler release (autoscaler.enabled: false?)")
    return releases[0].inputs["values"]


@cache
def boto3_client(endpoint: str, region: str, service: str) -> Any:
    """One client per endpoint, region and service, kept: making one costs about 10 ms of CPU, and
    the registrar and the tests' waits ask several times a second. Clients are thread-safe; boto3's
    default session, which makes them, is not, hence the lock."""
    import boto3

    with _CLIENTS_LOCK:
        return boto3.client(service, endpoint_url=endpoint, region_name=region, **_boto3_credentials())


_CLIENTS_LOCK = threading.Lock()


def _boto3_credentials() -> dict[str, str]:
    return {
        "aws_access_key_id": CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
    }


def start_moto(port: int | None = None, name: str = MOTO) -> str:
    """moto's server on loopback (``port`` or a free one) as service ``name``; returns its endpoint.
    It answers EC2's instance-type catalogue from memory after the first request (``moto_server``)."""
    port = port or free_port()
    endpoint = f"http://{HOST}:{port}"
    services.start(
        name,
        [sys.executable, "-m", "localcluster.moto_server", HOST, str(port)],
        ready=lambda: _get(f"{endpoint}/moto-api/", tls=False) == 200,
        env={"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))},
    )
    return endpoint


def moto_for_a_run() -> str:
    """moto with nothing in it: the one this control plane's earlier runs used, reset, or a new one.

    A new server loads each service's backend and EC2's instance-type tables on first use, about 3 s
    of CPU per run; ``POST /moto-api/reset`` empties every backend of a running one, as new. One that
    died or refuses the reset is replaced (``services.start`` stops a recorded one first). Stopped
    with the control plane (``services.stop_all``)."""
    global _moto_endpoint
    if _moto_endpoint and services.alive(MOTO):
        with contextlib.suppress(requests.RequestException):
            if requests.post(f"{_moto_endpoint}/moto-api/reset", timeout=30).ok:
                return _moto_endpoint
    _moto_endpoint = start_moto()
    return _moto_endpoint


_moto_endpoint: str | None = None


def check_moto(endpoint: str, region: str) -> None:
    """A clear failure naming moto when nothing answers at ``endpoint``."""
    from botocore.exceptions import EndpointConnectionError

    try:
        boto3_client(endpoint, region, "autoscaling").describe_auto_scaling_groups(MaxRecords=1)
    except EndpointConnectionError as error:
        raise ClusterError(f"moto (the AWS emulator) does not answer at {endpoint}: {error}") from error


def cloud_config(endpoint: str, region: str) -> str:
    """The AWS provider's gcfg: each service the autoscaler calls, overridden to ``endpoint``."""
    sections = [
        f'[ServiceOverride "{i}"]\nService={service}\nRegion={region}\nURL={endpoint}\nSigningRegion={region}\n'
        for i, service in enumerate(("ec2", "autoscaling", "eks"), start=1)
    ]
    return "[Global]\n" + "".join(sections)


def autoscaler_argv(values: dict[str, Any], cloud_config_path: str, port: int) -> list[str]:
    chart = chart_args.container_args(values, NAMESPACE)
    given = {arg.split("=", 1)[0] for arg in chart}
    return [
        str(BIN / AUTOSCALER),
        *chart,
        f"--kubeconfig={KUBECONFIG}",
        f"--cloud-config={cloud_config_path}",
        "--leader-elect=false",
        f"--address={HOST}:{port}",
        *(arg for arg in TEST_RUN_ARGS if arg.split("=", 1)[0] not in given),  # the platform's own win
    ]


def start_autoscaler(values: dict[str, Any], endpoint: str, region: str, port: int | None = None) -> None:
    if not (BIN / AUTOSCALER).is_file():
        raise ClusterError(f"not built: {AUTOSCALER} in {BIN}; run localcluster/build autoscaler")
    check_moto(endpoint, region)
    path = RUN / "cloud-config"
    path.write_text(cloud_config(endpoint, region))
    env = {
        **CREDENTIALS,
        "AWS_REGION": values.get("awsRegion") or region,  # the chart's env (deployment.yaml 155-157)
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    services.start(
        AUTOSCALER,
        autoscaler_argv(values, str(path), port or free_port()),
        ready=lambda: "Starting main loop" in log(),
        env=env,
    )


def log() -> str:
    try:
        return services.log_path(AUTOSCALER).read_text(errors="replace")
    except OSError:
        return ""


def check_running() -> None:
    """Raise, naming the component and its log, if the autoscaler or moto is no longer running."""
    for name in (AUTOSCALER, MOTO):
        if not services.alive(name):
            raise ClusterError(
                f"{name} is not running; its log {services.log_path(name)} ends:\n{services.log_tail(name)}"
            )


@dataclass
class Autoscaling:
    """One run: moto seeded from ``run``, the autoscaler on it, new instances registered as nodes."""

    endpoint: str
    region: str
    groups: dict[str, SeededGroup]
    """By Pulumi resource name (``gpu-platform-gpu-inference``)."""
    registrar: Registrar

    def client(self, service: str) -> Any:
        return boto3_client(self.endpoint, self.region, service)

    def asg(self, group: str) -> dict[str, Any]:
        name = self.groups[group].asg
        return self.client("autoscaling").describe_auto_scaling_groups(AutoScalingGroupNames=[name])[
            "AutoScalingGroups"
        ][0]

    def desired(self, group: str) -> int:
        return int(self.asg(group)["DesiredCapacity"])

    def set_desired(self, group: str, size: int) -> None:
        self.client("autoscaling").set_desired_capacity(
            AutoScalingGroupName=self.groups[group].asg, DesiredCapacity=size
        )

    def check(self) -> None:
        check_running()
        self.registrar.check()


@contextmanager
def running(
    run: Run,
    region: str,
    kube: Kube,
    *,
    describe_nodegroup: bool = True,
    priorities: bool = True,
    sizes: Mapping[str, int] | None = None,
    before_start: Callable[[Autoscaling], object] | None = None,
) -> Iterator[Autoscaling]:
    """moto (reset) + the autoscaler for the registrations in ``run``; the autoscaler stopped and its nodes
    removed after (moto stays for the next run, :func:`moto_for_a_run`).

    ``sizes``: desired capacities by group, set (and their nodes registered) before the autoscaler
    starts, as for nodes already running when it comes up. Set later, the autoscaler would learn the
    instances only at its next ASG refresh, a minute apart (aws_manager.go ``refreshInterval``).
    ``before_start``: called with the run once those nodes are registering, before the autoscaler
    starts (pods already running on them when it comes up).

    ``describe_nodegroup=False``: EKS no longer knows the node groups (DescribeNodegroup answers
    ResourceNotFoundException, as it fails when denied), so only the ASG tags tell the autoscaler a
    group's labels and taints. ``priorities=False``: the priority expander's ConfigMap is not written.
    """
    registrar = None
    try:
        endpoint = moto_for_a_run()
        seeded = {g.registration: g for g in seed(partial(boto3_client, endpoint, region), run, region)}
        if not describe_nodegroup:
            forget_node_groups(partial(boto3_client, endpoint, region), seeded.values())
        values = autoscaler_values(run)
        configmap = chart_args.priority_configmap(values, NAMESPACE)
        if configmap and priorities:
            kube.apply(configmap)
        gpu = {name: mirror(run.one(NODE_GROUP, name), run, 0) for name in seeded}
        registrar = Registrar(
            kube, partial(boto3_client, endpoint, region), seeded, {k: v for k, v in gpu.items() if v.gpus}
        )
        scaling = Autoscaling(endpoint, region, seeded, registrar)
        for group, size in (sizes or {}).items():
            scaling.set_desired(group, size)
        registrar.start()
        if before_start is not None:
            before_start(scaling)
        start_autoscaler(values, endpoint, region)
        yield scaling
    finally:
        services.stop(AUTOSCALER)
        if registrar is not None:
            registrar.stop()
        _delete_configmap(kube)


def forget_node_groups(client: Any, groups: Any) -> None:
    """Delete the node groups from moto's EKS, leaving their ASGs (and tags) as they are."""
    eks = client("eks")
    cluster = eks.list_clusters()["clusters"][0]
    for group in groups:
        eks.delete_nodegroup(clusterName=cluster, nodegroupName=group.node_group)


def _delete_configmap(kube: Kube) -> None:
    try:
        kube.core.delete_namespaced_config_map(chart_args.PRIORITY_CONFIGMAP, NAMESPACE)
    except ApiException as error:
        if error.status != 404:
            raise
