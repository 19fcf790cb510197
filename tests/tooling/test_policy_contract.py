"""Each stack is judged by the placement contract it declares, in the preview and in the pack alike.

A platform whose ``placement`` is not ``GPU=true`` must pass its own mandatory policies
(issue 19, item 6): the pack reads the contract from the stack (its ``placement`` output,
else its GPU node groups, else its GPU components' pods), as the offline preview does,
so neither the CI workflows nor anyone else passes pack config for it.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from infra.tooling.offline import Run, run_project
from infra.tooling.policy_rules import Links, check, declared_contracts
from infra.tooling.preview import main, policy_input
from infra.workloads.placement import DEFAULT_PLACEMENT, Placement
from tests.tooling import crossguard

ROOT = Path(__file__).resolve().parents[2]
CUSTOM = {"key": "example.com/accelerator", "value": "nvidia"}
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


@pytest.fixture(scope="module")
def custom_platform(tmp_path_factory) -> Path:
    """This repository's platform program, its dev stack with placement example.com/accelerator=nvidia."""
    project = tmp_path_factory.mktemp("custom") / "platform"
    project.mkdir()
    (project / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (project / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    config = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    config["config"]["eks-gpu-platform:placement"] = dict(CUSTOM)
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump(config))
    return project


@pytest.fixture(scope="module")
def platform_run(custom_platform: Path) -> Run:
    return run_project(custom_platform, "dev")


CONSUMER = """
import pulumi_kubernetes as k8s
from infra import GpuDeployment, GpuDeploymentArgs, place_pod_spec

CUSTOM = {"key": "example.com/accelerator", "value": "nvidia"}
IMAGE = "nvcr.io/nvidia/tritonserver:24.08-py3"


def spec(name, pod):
    labels = {"app": name}
    return {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}}


def pod():
    return {"containers": [{"name": "m", "image": IMAGE, "resources": {"limits": {"nvidia.com/gpu": 1}}}]}


GpuDeployment(
    "server",
    GpuDeploymentArgs(spec=spec("server", pod()), placement=CUSTOM, check_image_architecture=False),
)
k8s.apps.v1.Deployment("by-hand", spec=spec("by-hand", place_pod_spec(pod(), CUSTOM, 1)))
k8s.apps.v1.Deployment("rogue", spec=spec("rogue", pod()))
"""


@pytest.fixture(scope="module")
def consumer(tmp_path_factory) -> Path:
    """A consumer whose platform's contract is example.com/accelerator=nvidia: a GpuDeployment given it,
    a Deployment placed by hand with it, and one not placed at all."""
    project = tmp_path_factory.mktemp("consumer") / "consumer"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: consumer\nruntime: python\n")
    (project / "Pulumi.dev.yaml").write_text("config: {}\n")
    (project / "__main__.py").write_text(CONSUMER)
    return project


def test_the_preview_judges_a_platform_by_the_contract_it_declares(
    custom_platform: Path, tmp_path: Path, capsys
) -> None:
    # --stack dev: the repository's own platform stack (GPU=true) is not this one's contract.
    assert main(["--stack", "dev", "--out", str(tmp_path), "--project", str(custom_platform)]) == 0
    judged = capsys.readouterr().out
    assert "policy pack (policy/): " in judged and "[mandatory]" not in judged
    # Only what the pack cannot see: its Helm releases, each told the platform's own contract.
    advised = [line for line in judged.splitlines() if "[advisory]" in line]
    assert advised and all(
        "helm-release-unseen" in line and "example.com/accelerator" in line for line in advised
    )


def test_the_pack_judges_a_platform_by_its_placement_output(monkeypatch, platform_run: Run) -> None:
    _, policies = crossguard.pack_module(monkeypatch)
    diagnostics = crossguard.analyze_run(
        crossguard.servicer(policies), platform_run, "eks-gpu-platform", "dev"
    )
    assert crossguard.mandatory(diagnostics) == []
    resources, links = policy_input("eks-gpu-platform", "dev", platform_run)
    assert declared_contracts(resources, links) == (
        Placement.from_dict(platform_run.stack_outputs["placement"]),
    )


def test_without_the_output_the_gpu_node_groups_carry_the_contract(monkeypatch, platform_run: Run) -> None:
    _, policies = crossguard.pack_module(monkeypatch)
    unexported = copy.deepcopy(platform_run)
    unexported.stack_outputs.pop("placement")
    analyzer = crossguard.servicer(policies)
    assert crossguard.mandatory(crossguard.analyze_run(analyzer, unexported, "eks-gpu-platform", "dev")) == []
    resources, links = policy_input("eks-gpu-platform", "dev", unexported)
    assert declared_contracts(resources, links) == (Placement(**CUSTOM),)
    # A GPU node group that lost its taint is judged by the contract the others carry.
    inference = next(r for r in unexported.resources if r.name == "gpu-platform-gpu-inference")
    inference.inputs["taints"] = inference.outputs["taints"] = []
    (failure,) = crossguard.mandatory(crossguard.analyze_run(analyzer, unexported, "eks-gpu-platform", "dev"))
    assert "gpu-platform-gpu-inference is a GPU node group without the taint" in failure
    assert "'key': 'example.com/accelerator', 'value': 'nvidia', 'effect': 'NO_SCHEDULE'" in failure


def test_the_preview_judges_a_consumer_by_the_contract_its_gpu_components_place(
    consumer: Path, tmp_path: Path, capsys
) -> None:
    assert main(["--stack", "dev", "--out", str(tmp_path), "--project", str(consumer)]) == 1
    lines = [line for line in capsys.readouterr().out.splitlines() if "[mandatory]" in line]
    # Only the Deployment nobody placed; the fix it names is the consumer's contract.
    assert len(lines) == 2, lines
    assert all(
        "kubernetes:apps/v1:Deployment rogue spec.template.spec requests nvidia.com/gpu" in line
        for line in lines
    )
    assert "add the toleration {'key': 'example.com/accelerator'" in lines[0]
    assert "add nodeSelector {'example.com/accelerator': 'nvidia'}" in lines[1]


def test_a_stack_that_declares_no_contract_is_judged_by_the_default_and_pack_config_overrides() -> None:
    gpu_pod = {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    rogue = ("kubernetes:apps/v1:Deployment", "rogue", {"spec": {"template": {"spec": gpu_pod}}})
    assert declared_contracts([rogue]) == (DEFAULT_PLACEMENT,)
    assert "{'key': 'GPU'" in check([rogue])[0].message
    assert "{'key': 'accelerator'" in check([rogue], Placement("accelerator", "t4g"))[0].message
    # Two contracts in one stack (components of two platforms): following either one passes.
    placed = [
        (
            "kubernetes:apps/v1:Deployment",
            name,
            {
                "spec": {
                    "template": {"spec": {**gpu_pod, "nodeSelector": {k: v}, "tolerations": [toleration]}}
                }
            },
        )
        for name, k, v, toleration in (
            ("a", "GPU", "true", DEFAULT_PLACEMENT.toleration()),
            ("b", "accelerator", "t4g", Placement("accelerator", "t4g").toleration()),
        )
    ]
    components = [("eks-gpu:index:GpuDeployment", n, {}) for n in ("a", "b")]
    parents = {f"kubernetes:apps/v1:Deployment {n}": f"eks-gpu:index:GpuDeployment {n}" for n in ("a", "b")}
    links = Links(parents=parents)
    assert declared_contracts([*components, *placed], links) == (
        DEFAULT_PLACEMENT,
        Placement("accelerator", "t4g"),
    )
    assert [v for v in check([*components, *placed], links=links) if v.level == "mandatory"] == []


def test_a_placement_output_that_is_no_contract_is_no_declaration_and_no_crash() -> None:
    """Found in review: an output named ``placement`` holding a pool name made every policy raise."""
    stack = ("pulumi:pulumi:Stack", "consumer", {"placement": "inference"})
    assert declared_contracts([stack]) == (DEFAULT_PLACEMENT,)


NAMESAKE = """
import pulumi_kubernetes as k8s
from infra import GpuDeployment, GpuDeploymentArgs

CUSTOM = {"key": "example.com/accelerator", "value": "nvidia"}
labels = {"app": "server"}
pod = {"containers": [{"name": "m", "image": "i", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
spec = {"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}}
GpuDeployment("server", GpuDeploymentArgs(spec=spec, placement=CUSTOM, check_image_architecture=False))
# At the stack's root, named as the component's child, placed for a contract nobody declared.
fake = {"nodeSelector": {"fake": "yes"},
        "tolerations": [{"key": "fake", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}]}
k8s.apps.v1.Deployment("server", spec={**spec, "template": {**spec["template"], "spec": {**pod, **fake}}})
"""


def test_parents_go_by_urn_so_a_namesake_of_a_components_child_is_not_placed_by_it(analyzer, run) -> None:
    """Type and name are not unique; only the child's URN carries its parent. The root Deployment's own
    pair is no declared contract, and the violation lands on its URN, not the child's."""
    result = run(lambda: exec(NAMESAKE, {}))
    deployments = {r.parent.rsplit("::", 1)[0].rsplit(":", 1)[-1]: r.urn for r in result.of_type(DEPLOYMENT)}
    root, child = deployments["Stack"], deployments["GpuDeployment"]
    resources, links = policy_input("consumer", "dev", result)
    assert declared_contracts(resources, links) == (Placement(**CUSTOM),)
    found = {(v.rule, v.resource) for v in check(resources, links=links) if v.level == "mandatory"}
    assert found == {("gpu-workload-placement", root)}
    diagnostics = crossguard.analyze_run(analyzer, result, "consumer", "dev")
    failed = {(d.policyName, d.urn) for d in diagnostics if crossguard.level(d) == "mandatory"}
    assert failed == {("gpu-workload-placement", root)} and child != root
