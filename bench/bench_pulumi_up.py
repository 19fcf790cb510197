"""``pulumi up`` of a GpuDeployment vs the same Deployment written by hand, on the local cluster.

    PYTHONPATH=. .venv/bin/python bench/bench_pulumi_up.py [python|yaml ...]   # default: both

Both programs send the same Deployment object (the hand-written one is
``place_deployment_spec``'s output, so only the component's own work differs) and
the provider waits until it is Available in both. In Python the component runs in the
program's process; in YAML the CLI starts the ``eks-gpu`` package's plugin
(``provider/pulumi-resource-eks-gpu``, Python) and the YAML host asks it to construct
the component, while the hand-written program is a plain ``kubernetes:apps/v1:Deployment``
with the nodeSelector, toleration and GPU limits typed out. Median of ``RUNS``
up/destroy cycles each. Starts the local cluster with the dev stack's nodes (as
``bin/local-cluster start``) when it is not running, and stops it afterwards only then;
also run by bench_localcluster.py --up.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from localcluster import cluster as local
from localcluster.kube import Kube
from localcluster.pulumi_cli import Stack

RUNS = 3
PROGRAM = """
import pulumi, pulumi_kubernetes as k8s
from infra import GpuDeployment, GpuDeploymentArgs
from infra.tooling.offline import platform_contract
from infra.workloads.deployment import place_deployment_spec

provider = k8s.Provider("local", kubeconfig=open({kubeconfig!r}).read())
opts = pulumi.ResourceOptions(provider=provider)
placement = platform_contract("dev")
labels = {{"app": "bench"}}
spec = {{
    "replicas": 1,
    "selector": {{"matchLabels": labels}},
    "template": {{"metadata": {{"labels": labels}}, "spec": {{"containers": [
        {{"name": "m", "image": "registry.invalid/m:1", "securityContext": {{"runAsUser": 1000}}}}]}}}},
}}
meta = {{"name": "bench", "namespace": "default"}}
if {component!r}:
    GpuDeployment("bench", GpuDeploymentArgs(metadata=meta, spec=spec, gpus=1, pool="inference",
                  placement=placement, check_image_architecture=False), opts=opts)
else:
    k8s.apps.v1.Deployment("bench", metadata=meta,
                           spec=place_deployment_spec(spec, placement, 1, pool="inference"), opts=opts)
"""


def _python_project(component: bool) -> dict[str, str]:
    return {
        "Pulumi.yaml": "name: bench-up\nruntime: python\n",
        "__main__.py": f"import sys; sys.path.insert(0, {str(local.ROOT)!r})\n"
        + PROGRAM.format(kubeconfig=str(local.KUBECONFIG), component=component),
    }


def _yaml_project(component: bool) -> dict[str, str]:
    """The same Deployment in Pulumi YAML: through the eks-gpu package, or typed out by hand."""
    from infra.tooling.offline import platform_contract
    from infra.workloads.deployment import place_deployment_spec

    placement = platform_contract("dev")
    labels = {"app": "bench"}
    container = {"name": "m", "image": "registry.invalid/m:1", "securityContext": {"runAsUser": 1000}}
    spec = {
        "replicas": 1,
        "selector": {"matchLabels": labels},
        "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
    }
    meta = {"name": "bench", "namespace": "default"}
    if component:
        properties: dict[str, Any] = {
            "metadata": meta,
            "spec": spec,
            "gpus": 1,
            "pool": "inference",
            "placement": placement,
            "checkImageArchitecture": False,
        }
        resource = {
            "type": "eks-gpu:GpuDeployment",
            "properties": properties,
            "options": {"providers": ["${local}"]},
        }
    else:
        placed = place_deployment_spec(spec, placement, 1, pool="inference")
        properties = {"metadata": meta, "spec": placed}
        resource = {
            "type": "kubernetes:apps/v1:Deployment",
            "properties": properties,
            "options": {"provider": "${local}"},
        }
    program = {
        "name": "bench-up-yaml",
        "runtime": "yaml",
        "packages": {"eks-gpu": str(local.ROOT / "provider")},
        "resources": {
            "local": {
                "type": "pulumi:providers:kubernetes",
                "properties": {"kubeconfig": {"fn::readFile": str(local.KUBECONFIG)}},
            },
            "bench": resource,
        },
    }
    return {"Pulumi.yaml": yaml.dump(program, Dumper=_NoAliases, sort_keys=False)}


class _NoAliases(yaml.SafeDumper):
    """Every value written out where it is used: Pulumi YAML refuses YAML aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


PROJECTS: dict[str, Callable[[bool], Mapping[str, str]]] = {"python": _python_project, "yaml": _yaml_project}
"""Each language's project: ``project(component)`` -> its files."""


def _time_up(files: Mapping[str, str]) -> float:
    with tempfile.TemporaryDirectory(prefix="bench-up-") as directory:
        project = Path(directory)
        for name, text in files.items():
            (project / name).write_text(text)
        return median_up(project)


def median_up(project: Path) -> float:
    """Median seconds of ``RUNS`` ``pulumi up`` of ``project``'s ``bench`` stack, each destroyed after."""
    stack = Stack(project, "bench")
    stack.init()
    times = []
    try:
        for _ in range(RUNS):
            start = time.perf_counter()
            try:
                stack.up()
                times.append(time.perf_counter() - start)
            finally:
                stack.destroy()  # what a failed up did create goes too
    finally:
        stack.remove()
    return statistics.median(times)


def running() -> bool:
    state = local.status()
    return bool(state) and all(state.values())


def start_cluster() -> None:
    """``bin/local-cluster start``: the control plane plus the dev stack's mirrored nodes, Ready."""
    result = subprocess.run(
        [sys.executable, "-m", "localcluster", "start"], cwd=local.ROOT, capture_output=True, text=True
    )
    if result.returncode != 0:
        local.stop(lambda _: None)  # whatever did start
        raise SystemExit(f"bin/local-cluster start failed:\n{result.stdout}\n{result.stderr}")


def compare(language: str = "python") -> tuple[float, float]:
    """(GpuDeployment, plain Deployment) median ``pulumi up`` seconds in ``language``; starts the
    cluster if needed, and then stops it again (a cluster that was running is left running)."""
    project = PROJECTS[language]
    started = not running()
    if started:
        start_cluster()
    try:
        Kube(local.KUBECONFIG)  # fails early on a bad kubeconfig
        return _time_up(project(True)), _time_up(project(False))
    finally:
        if started:
            local.stop(lambda _: None)


def report(language: str, gpu: float, plain: float) -> str:
    return (
        f"pulumi up GpuDeployment / Deployment ({language}): {gpu:.1f} s / {plain:.1f} s = {gpu / plain:.2f}x"
    )


if __name__ == "__main__":
    for language in sys.argv[1:] or list(PROJECTS):
        print(report(language, *compare(language)))
