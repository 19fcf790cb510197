"""The policy pack on the real engine: ``pulumi preview --policy-pack policy/eks-gpu-guardrails``.

Run as the README and the CI workflows run it, by the built CLI, against the local cluster and
the stand-in platform stack: the CLI executes the pack file itself (pulumi/pulumi pkg/v3
``resource/plugin/analyzer_plugin.go``), the pack serves the Analyzer API, and the engine calls
``Analyze`` for each resource and ``AnalyzeStack`` once, with what the real providers (the
Kubernetes provider, the eks-gpu component package) return during preview. Why a file, and what
the engine-free tests in tests/tooling/ still cover: docs/decisions/0070-policy-pack-file.md.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping
from pathlib import Path

import pytest

from infra.tooling.offline import PLATFORM_ROOT
from localcluster import cluster as local
from localcluster.kube import Kube
from localcluster.pulumi_cli import Stack
from tests.cluster.test_pulumi_consumers import CONSUMERS as DEPLOYED
from tests.cluster.test_pulumi_consumers import JOBS, STACK
from tests.tooling.test_policy_contract import CONSUMER as CUSTOM_CONTRACT_CONSUMER

PACK = PLATFORM_ROOT / "policy" / "eks-gpu-guardrails"
# Every consumer stack the tests deploy (tests/cluster/test_pulumi_consumers.py); one added there is judged here.
CONSUMERS = {c.project.name: c.project for c in (*DEPLOYED.values(), *JOBS.values())}
# The teams' queued-Job examples are judged here; deploying them needs Kueue on the cluster, which
# tests/cluster/test_kueue.py starts for its own scenarios only (issue 35: not yet deployed by the CLI).
CONSUMERS |= {name: PLATFORM_ROOT / "stacks" / name for name in ("team-job", "team-job-yaml")}

UNPLACED = """
# A GPU Deployment written by hand without the GPU toleration and nodeSelector.
import pulumi_kubernetes as k8s

labels = {"app": "unplaced"}
container = {"name": "model", "image": "nvcr.io/nvidia/tritonserver:24.08-py3",
             "resources": {"limits": {"nvidia.com/gpu": "1"}}}
k8s.apps.v1.Deployment(
    "unplaced",
    metadata={"name": "unplaced", "namespace": "default"},
    spec={"selector": {"matchLabels": labels},
          "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}}},
)
"""


def _preview(stack: Stack, *args: str) -> subprocess.CompletedProcess[str]:
    return stack.preview(*args, check=False)


def _project(root: Path, name: str, program: str) -> Stack:
    """A Python project on the local cluster (its default Kubernetes provider's kubeconfig)."""
    (root / "Pulumi.yaml").write_text(f"name: {name}\nruntime: python\n")
    (root / "__main__.py").write_text(program)
    stack = Stack(root, STACK)
    stack.init(secrets={"kubernetes:kubeconfig": local.KUBECONFIG.read_text()})
    return stack


@pytest.fixture(scope="module")
def unplaced(kube: Kube, tmp_path_factory: pytest.TempPathFactory) -> Stack:
    """A project of its own whose one Deployment asks for a GPU and is placed nowhere."""
    return _project(tmp_path_factory.mktemp("unplaced"), "unplaced-gpu", UNPLACED)


@pytest.fixture(scope="module")
def consumer_previews(platform: Stack) -> Mapping[str, subprocess.CompletedProcess[str]]:
    """Each consumer's preview with the pack, once (the stacks exist; nothing is deployed by this)."""
    previews = {}
    for name, project in CONSUMERS.items():
        stack = Stack(project, STACK)
        stack.init()
        previews[name] = _preview(stack, "--policy-pack", str(PACK))
    return previews


def _output(result: subprocess.CompletedProcess[str]) -> str:
    return f"{result.stdout}\n{result.stderr}"


def test_the_pack_stops_an_unplaced_gpu_workload_naming_the_policy_and_the_fix(unplaced: Stack) -> None:
    assert _preview(unplaced).returncode == 0, "the program itself previews; only the pack may stop it"
    result = _preview(unplaced, "--policy-pack", str(PACK))
    output = _output(result)
    assert result.returncode != 0, output
    assert "eks-gpu-guardrails" in output
    failed = re.findall(
        r"\[mandatory\]\s+gpu-workload-placement\s+\(kubernetes:apps/v1:Deployment: (\S+)\)", output
    )
    assert failed == ["unplaced", "unplaced"], output
    assert "unplaced spec.template.spec requests nvidia.com/gpu but does not tolerate the GPU taint" in output
    assert "add the toleration {'key': 'GPU', 'operator': 'Equal', 'value': 'true'" in output
    assert "does not select GPU nodes: add nodeSelector {'GPU': 'true'}" in output


def test_the_consumers_judged_are_every_stack_the_repository_ships() -> None:
    """A stacks/ project missing from test_pulumi_consumers would be deployed and judged by nobody."""
    shipped = {p.parent for p in (PLATFORM_ROOT / "stacks").glob("*/Pulumi.yaml")}
    assert set(CONSUMERS.values()) == shipped


@pytest.mark.parametrize("project", sorted(CONSUMERS))
def test_every_consumer_stack_passes_the_pack(
    consumer_previews: Mapping[str, subprocess.CompletedProcess[str]], project: str
) -> None:
    result = consumer_previews[project]
    output = _output(result)
    assert result.returncode == 0, output
    assert "eks-gpu-guardrails" in output  # the pack ran
    assert "[mandatory]" not in output


def _flat(path: Path) -> str:
    return " ".join(path.read_text().split())


def test_the_kubernetes_provider_version_warning_is_the_one_the_docs_quote(
    consumer_previews: Mapping[str, subprocess.CompletedProcess[str]],
) -> None:
    """The built provider (4.25.0, the one version the proxy serves) answers the SDK's newer request."""
    output = " ".join(_output(consumer_previews["inference"]).split())
    warning = re.search(
        r"resource plugin kubernetes is expected to have version >=\S+, but has \S+?;", output
    )
    assert warning, output
    ambient = re.search(r"using pulumi-resource-kubernetes from \$PATH at", output)
    assert ambient, output
    for doc in (
        local.ROOT / "localcluster" / "pulumi" / "README.md",
        local.ROOT / "docs" / "local-cluster.md",
    ):
        assert warning.group(0).rstrip(";") in _flat(doc), doc
        assert ambient.group(0) in _flat(doc), doc


def test_a_consumer_is_judged_by_the_contract_its_gpu_components_place(
    kube: Kube, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Its platform's contract is example.com/accelerator=nvidia: the pack reads it from the
    GpuDeployment's pods (the engine's parent links), so the Deployment placed by hand with it
    passes and only the one placed nowhere fails, told the consumer's own contract."""
    stack = _project(tmp_path_factory.mktemp("custom"), "custom-contract", CUSTOM_CONTRACT_CONSUMER)
    result = _preview(stack, "--policy-pack", str(PACK))
    output = _output(result)
    assert result.returncode != 0, output
    failed = re.findall(
        r"\[mandatory\]\s+gpu-workload-placement\s+\(kubernetes:apps/v1:Deployment: (\S+)\)", output
    )
    assert failed == ["rogue", "rogue"], output  # no toleration, no nodeSelector; by-hand and server pass
    assert "add the toleration {'key': 'example.com/accelerator'" in output
    assert "add nodeSelector {'example.com/accelerator': 'nvidia'}" in output


CONFIGURED = """
# A platform whose contract is accelerator=t4g, seen from a stack that declares none: a GPU
# Deployment placed for it, and an exporter DaemonSet that selects its nodes without tolerating them.
import pulumi_kubernetes as k8s

labels = {"app": "server"}
pod = {"containers": [{"name": "m", "image": "nvcr.io/nvidia/tritonserver:24.08-py3",
                       "resources": {"limits": {"nvidia.com/gpu": "1"}}}],
       "nodeSelector": {"accelerator": "t4g"},
       "tolerations": [{"key": "accelerator", "operator": "Equal", "value": "t4g", "effect": "NoSchedule"}]}
k8s.apps.v1.Deployment("server", metadata={"namespace": "default"},
                       spec={"selector": {"matchLabels": labels},
                             "template": {"metadata": {"labels": labels}, "spec": pod}})
exporter = {"app": "exporter"}
k8s.apps.v1.DaemonSet("exporter", metadata={"namespace": "default"},
                      spec={"selector": {"matchLabels": exporter},
                            "template": {"metadata": {"labels": exporter},
                                         "spec": {"containers": [{"name": "e", "image": "exporter:1"}],
                                                  "nodeSelector": {"accelerator": "t4g"}}}})
"""


def test_pack_config_names_the_contract_for_a_stack_that_declares_none(
    kube: Kube, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """--policy-pack-config, as docs/operating-gpu-nodes.md documents it: the CLI checks it against
    the pack's schema, and each policy given a placement judges by it."""
    root = tmp_path_factory.mktemp("configured")
    stack = _project(root, "configured-contract", CONFIGURED)
    pack = ("--policy-pack", str(PACK))
    unconfigured = _output(_preview(stack, *pack))
    assert re.search(r"\[mandatory\]\s+gpu-workload-placement", unconfigured), unconfigured
    assert "gpu-agents-on-gpu-pools" not in unconfigured  # not GPU nodes under GPU=true
    placement = {"placement": {"key": "accelerator", "value": "t4g"}}
    config = root / "policy-config.json"
    config.write_text(json.dumps({"gpu-workload-placement": placement, "gpu-agents-on-gpu-pools": placement}))
    result = _preview(stack, *pack, "--policy-pack-config", str(config))
    output = _output(result)
    assert result.returncode != 0, output
    assert "gpu-workload-placement" not in output, output
    assert re.search(r"\[mandatory\]\s+gpu-agents-on-gpu-pools", output), output
    assert "untolerated taint accelerator=t4g:NoSchedule" in output
    config.write_text(json.dumps({"gpu-workload-placement": {"placement": {"key": "accelerator"}}}))
    refused = _output(_preview(stack, *pack, "--policy-pack-config", str(config)))
    assert "validating policy config" in refused and "value" in refused, refused


def test_a_relative_pack_path_is_run_from_the_projects_folder(tmp_path: Path) -> None:
    """What decision 0070 ("Relative paths") tells users: the CLI finds a relative --policy-pack
    from where it runs but executes it from the project's folder, so from a subfolder it is
    "not found"; from the project's folder the same pack runs (no cluster: a project with no resources)."""
    project = tmp_path / "project"
    (project / "sub").mkdir(parents=True)
    (project / "Pulumi.yaml").write_text("name: pack-path\nruntime: yaml\noutputs:\n  ok: true\n")
    (project / "pack").symlink_to(PACK.parent)  # ../pack from sub/, pack from the project
    stack = Stack(project, STACK)
    stack.init()
    try:
        from_sub = Stack(project / "sub", STACK).preview(
            "--policy-pack", "../pack/eks-gpu-guardrails", check=False
        )
        assert from_sub.returncode != 0
        assert f'policy pack not found at "{project}/pack/eks-gpu-guardrails"' in _output(from_sub)
        from_project = _preview(Stack(project, STACK), "--policy-pack", "pack/eks-gpu-guardrails")
        assert from_project.returncode == 0, _output(from_project)
        assert "eks-gpu-guardrails" in _output(from_project)
    finally:
        stack.remove()


SERVER_SPEC = {
    "selector": {"matchLabels": {"app": "server"}},
    "template": {
        "metadata": {"labels": {"app": "server"}},
        "spec": {"containers": [{"name": "m", "image": "nvcr.io/nvidia/tritonserver:24.08-py3"}]},
    },
}
# Its pods get example.com/accelerator=nvidia; the stack declares GPU=true (its placement output).
OTHER_CONTRACT = {"key": "example.com/accelerator", "value": "nvidia"}
STACK_CONTRACT = {"key": "GPU", "value": "true"}
MISMATCHED_YAML = {
    "name": "construct-children",
    "runtime": "yaml",
    "packages": {"eks-gpu": str(PLATFORM_ROOT / "provider")},
    "resources": {
        "server": {
            "type": "eks-gpu:GpuDeployment",
            "properties": {
                "metadata": {"namespace": "default"},
                "spec": SERVER_SPEC,
                "placement": OTHER_CONTRACT,
            },
        }
    },
    "outputs": {"placement": STACK_CONTRACT},
}
MISMATCHED_TYPESCRIPT = f"""
import * as eksGpu from "@pulumi/eks-gpu";

new eksGpu.GpuDeployment("server", {{
    metadata: {{ namespace: "default" }},
    spec: {json.dumps(SERVER_SPEC)},
    placement: {json.dumps(OTHER_CONTRACT)},
}});
export const placement = {json.dumps(STACK_CONTRACT)};
"""
TS_PROJECT = PLATFORM_ROOT / "stacks" / "inference-ts"
"""Whose node_modules (the generated SDK, @pulumi/pulumi, ts-node) the TypeScript program uses, linked."""


def _mismatched_project(language: str, root: Path) -> str:
    """A project outside the checkout whose one GpuDeployment places its pods for another contract
    than the stack declares, in ``language``; returns the project's name."""
    if language == "yaml":
        (root / "Pulumi.yaml").write_text(json.dumps(MISMATCHED_YAML))
        return MISMATCHED_YAML["name"]
    name = "construct-children-ts"
    project = {"name": name, "runtime": "nodejs", "packages": {"eks-gpu": str(PLATFORM_ROOT / "provider")}}
    (root / "Pulumi.yaml").write_text(json.dumps(project))
    (root / "index.ts").write_text(MISMATCHED_TYPESCRIPT)
    options = {"strict": True, "target": "es2020", "module": "commonjs", "moduleResolution": "node"}
    (root / "tsconfig.json").write_text(json.dumps({"compilerOptions": options, "files": ["index.ts"]}))
    (root / "node_modules").symlink_to(TS_PROJECT / "node_modules")
    return name


def _json_objects(text: str) -> list[dict]:
    """Each JSON object in a stream of them, however they are laid out."""
    decoder, found, at = json.JSONDecoder(), [], text.find("{")
    while at != -1:
        value, end = decoder.raw_decode(text, at)
        found.append(value)
        at = text.find("{", end)
    return found


@pytest.mark.parametrize("language", ["yaml", "typescript"])
def test_children_made_through_construct_are_judged_on_their_own_urn(
    kube: Kube, platform: Stack, language: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A YAML or TypeScript program's GpuDeployment, constructed by the eks-gpu package's plugin: its
    child Deployment is placed for another contract than the stack declares, and the pack fails it on
    the child's URN (read from the engine's events: `preview --json` streams them with
    PULUMI_ENABLE_STREAMING_JSON_PREVIEW, as `pulumi preview --help` says)."""
    name = _mismatched_project(language, tmp_path)
    # kwok never pulls the image, and no test reaches a registry: the arm64 check is off, as in stacks/.
    (tmp_path / f"Pulumi.{STACK}.yaml").write_text(json.dumps({"config": {"eks-gpu:imageCheck": "off"}}))
    stack = Stack(tmp_path, STACK)
    stack.init(secrets={"kubernetes:kubeconfig": local.KUBECONFIG.read_text()})
    monkeypatch.setenv("PULUMI_ENABLE_STREAMING_JSON_PREVIEW", "true")
    try:
        result = _preview(stack, "--policy-pack", str(PACK), "--json")
    finally:
        stack.remove()
    assert result.returncode != 0, _output(result)
    policy = [e["policyEvent"] for e in _json_objects(result.stdout) if "policyEvent" in e]
    failed = {(e["policyName"], e["resourceUrn"]) for e in policy if e["enforcementLevel"] == "mandatory"}
    child = f"urn:pulumi:local::{name}::eks-gpu:index:GpuDeployment$kubernetes:apps/v1:Deployment::server"
    assert failed == {("gpu-workload-placement", child)}, _output(result)
    assert any("add the toleration {'key': 'GPU'" in e["message"] for e in policy), policy
