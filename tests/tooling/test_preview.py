"""The offline preview: tree, placement table and schema-valid manifests, or a clear failure."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

from infra.tooling.manifests import validate_manifest
from infra.tooling.preview import main
from tests.conftest import KUBERNETES_VERSION

ROOT = Path(__file__).resolve().parents[2]


def _placement_tables(out: str) -> list[dict[str, dict[str, str]]]:
    """Each printed placement table as {workload: {column: cell}}, cut at the header's column starts."""
    tables = []
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("placement (can the pods be scheduled"):
            header = lines[i + 1]
            starts = [m.start() for m in re.finditer(r"(?<=  )\S", header)]
            spans = list(zip(starts, [*starts[1:], None], strict=True))
            names = [header[a:b].strip() for a, b in spans]
            table = {}
            for row in lines[i + 2 :]:
                if not row.startswith("  ") or not row[starts[0] : starts[1]].strip():
                    break
                cells = [row[a:b].strip() for a, b in spans]
                table[cells[0]] = dict(zip(names[1:], cells[1:], strict=True))
            tables.append(table)
    return tables


def test_dev_preview_prints_tree_and_placement_and_writes_valid_manifests(tmp_path: Path, capsys) -> None:
    assert main(["--stack", "dev", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "aws:eks/nodeGroup:NodeGroup  gpu-platform-gpu" in out
    assert "amiType=AL2023_ARM_64_NVIDIA" in out
    tables = _placement_tables(out)
    platform = next(t for t in tables if "DaemonSet/nvidia-device-plugin (helm)" in t)
    inference = next(t for t in tables if "Deployment/triton" in t)
    system = "gpu-platform-system"
    for table in (platform, inference):
        # A pod without the toleration lands on the system group only.
        row = table["(any pod without the toleration)"]
        assert {g: v for g, v in row.items() if g != "linux/arm64 image"} == {
            g: "yes" if g == system else "-" for g in row if g != "linux/arm64 image"
        }
    # The device plugin on every pool; Triton (1 GPU, pool inference) on inference only, where a node
    # time-sliced 4 ways holds 4 of its pods.
    image = "linux/arm64 image"
    assert platform["DaemonSet/nvidia-device-plugin (helm)"] == {
        system: "-",
        "inference": "yes",
        "training": "yes",
        image: "not checked (offline)",  # the pod the pinned chart renders, its images included
    }
    # Offline no registry is asked: the image is shown as not checked, never as fine.
    assert inference["Deployment/triton"] == {
        system: "-",
        "inference": "4/node",
        "training": "-",
        image: "not checked (offline)",
    }
    assert "training is SPOT: a node can be reclaimed" in out
    agents = [line.split() for line in out.splitlines() if line.startswith("  dcgm-exporter")]
    assert agents == [
        ["dcgm-exporter", "(amazon-cloudwatch-observability)", "gpu-nodes", "yes", "yes", "-", "ok"]
    ]
    assert "PARTIAL: no price for t4g.large" in out
    manifests = sorted((tmp_path / "gpu-inference").glob("*.yaml"))
    assert [p.name for p in manifests] == [
        "deployment-inference-triton.yaml",
        "namespace-cluster-inference.yaml",
        "networkpolicy-inference-triton.yaml",
        "poddisruptionbudget-inference-triton.yaml",
        "service-inference-triton.yaml",
    ]
    for path in manifests:
        validate_manifest(yaml.safe_load(path.read_text()), KUBERNETES_VERSION)
    values = yaml.safe_load(
        (tmp_path / "eks-gpu-platform" / "helm-nvidia-device-plugin.values.yaml").read_text()
    )
    assert values["nodeSelector"] == {"GPU": "true"}
    assert "[secret]" in (tmp_path / "eks-gpu-platform" / "resources.json").read_text()


def _project(tmp_path: Path, main_py: str, config: str = "config: {}\n") -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text("name: broken\nruntime: python\n")
    (project / "Pulumi.dev.yaml").write_text(config)
    (project / "__main__.py").write_text(main_py)
    return project


def test_a_manifest_that_breaks_the_schema_fails_with_the_field(tmp_path: Path, capsys) -> None:
    project = _project(
        tmp_path,
        "import pulumi_kubernetes as k8s\n"
        "k8s.apps.v1.Deployment('web', spec={'replica': 2, 'selector': {}, 'template': {}})\n",
    )
    assert main(["--stack", "dev", "--out", str(tmp_path / "out"), "--project", str(project)]) == 1
    assert "Deployment/web is not valid for Kubernetes" in capsys.readouterr().err


def test_a_broken_config_fails_naming_the_key(tmp_path: Path, capsys) -> None:
    project = tmp_path / "platform"
    project.mkdir()
    (project / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (project / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    (project / "Pulumi.dev.yaml").write_text(
        "config:\n  aws:region: us-west-2\n  eks-gpu-platform:kubernetesVersion: '1.20'\n"
    )
    assert main(["--stack", "dev", "--out", str(tmp_path / "out"), "--project", str(project)]) == 1
    assert 'error: kubernetesVersion must be one of "1.35", "1.36"' in capsys.readouterr().err


def test_another_device_plugin_version_is_not_shown_as_the_pinned_render(tmp_path: Path, capsys) -> None:
    project = tmp_path / "platform"
    project.mkdir()
    for name in ("Pulumi.yaml", "__main__.py"):
        (project / name).write_text((ROOT / name).read_text())
    stack = yaml.safe_load((ROOT / "Pulumi.dev.yaml").read_text())
    stack["config"].setdefault("eks-gpu-platform:devicePlugin", {})["chartVersion"] = "0.20.0"
    (project / "Pulumi.dev.yaml").write_text(yaml.safe_dump(stack))
    assert main(["--stack", "dev", "--out", str(tmp_path / "out"), "--project", str(project)]) == 0
    out = capsys.readouterr().out
    assert "helm release nvidia-device-plugin: chart=nvidia-device-plugin version=0.20.0" in out
    assert "workload DaemonSet/nvidia-device-plugin (helm)" not in out
    assert "is not the one pinned and rendered here (0.19.3)" in out


def test_unknown_stack_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert main(["--stack", "nosuch", "--out", str(tmp_path)]) == 1
    assert "no project has a Pulumi.nosuch.yaml" in capsys.readouterr().err


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The preview as a command, in a fresh process."""
    return subprocess.run(
        [sys.executable, "-m", "infra.tooling.preview", *args], cwd=ROOT, capture_output=True, text=True
    )


def test_a_failing_project_stops_the_preview_where_it_fails(tmp_path: Path) -> None:
    broken = tmp_path / "platform"
    broken.mkdir()
    (broken / "Pulumi.yaml").write_text((ROOT / "Pulumi.yaml").read_text())
    (broken / "__main__.py").write_text((ROOT / "__main__.py").read_text())
    (broken / "Pulumi.dev.yaml").write_text(
        "config:\n  aws:region: us-west-2\n  eks-gpu-platform:kubernetesVersion: '1.20'\n"
    )
    fine = _project(tmp_path, "import pulumi\npulumi.export('answer', 42)\n")
    out = tmp_path / "out"
    result = _cli("--stack", "dev", "--out", str(out), "--project", str(broken), "--project", str(fine))
    assert result.returncode == 1
    assert 'error: kubernetesVersion must be one of "1.35", "1.36"' in result.stderr
    assert "[2/2]" not in result.stderr  # the second project is never run
    assert result.stdout == ""
    assert not out.exists()


def test_a_program_bug_shows_its_traceback(tmp_path: Path) -> None:
    bug = _project(tmp_path, "def declare():\n    return {}['missing']\ndeclare()\n")
    result = _cli("--stack", "dev", "--out", str(tmp_path / "out"), "--project", str(bug))
    assert result.returncode == 1
    assert "KeyError: 'missing'" in result.stderr
    assert "in declare" in result.stderr  # the program's own frame


def test_without_any_helm_the_preview_completes_and_says_what_is_missing(
    tmp_path: Path, monkeypatch, capsys
) -> None:
    from infra.tooling import chart_models, pinned_chart

    monkeypatch.setattr(pinned_chart, "CHECKOUT_CACHE", tmp_path / "no-cache")
    monkeypatch.delenv(pinned_chart.HELM_ENV, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "no-bin"))
    chart_models._rendered.cache_clear()
    try:
        assert main(["--stack", "dev", "--out", str(tmp_path / "out"), "--project", str(ROOT)]) == 0
    finally:
        chart_models._rendered.cache_clear()
    shown = capsys.readouterr().out + "".join(
        p.read_text() for p in (tmp_path / "out").rglob("*") if p.is_file()
    )
    assert "no helm: looked at $EKS_GPU_HELM" in shown


def test_projects_in_another_language_are_skipped_not_run(tmp_path: Path, monkeypatch, capsys) -> None:
    from infra.tooling import preview

    for name, runtime in (("py", "python"), ("yml", "yaml"), ("py-options", "{name: python, options: {}}")):
        project = tmp_path / "stacks" / name
        project.mkdir(parents=True)
        (project / "Pulumi.yaml").write_text(f"name: {name}\nruntime: {runtime}\n")
        (project / "Pulumi.dev.yaml").write_text("config: {}\n")
    monkeypatch.setattr(preview, "ROOT", tmp_path)
    assert preview._projects("dev", ()) == [tmp_path / "stacks" / "py", tmp_path / "stacks" / "py-options"]
    assert "skipping stacks/yml: runtime yaml" in capsys.readouterr().err


def test_a_device_plugin_release_with_values_not_known_yet_has_no_placement_row_and_no_crash() -> None:
    from infra.tooling.chart_models import device_plugin_version
    from infra.tooling.manifests import HELM_RELEASE_TYPE
    from infra.tooling.offline import Registration, Run
    from infra.tooling.preview import workloads_of

    def release(**inputs: object) -> Registration:
        base = {
            "chart": "nvidia-device-plugin",
            "version": device_plugin_version(),
            "name": "nvidia-device-plugin",
        }
        return Registration("urn:x", HELM_RELEASE_TYPE, "plugin", "", True, "", False, {**base, **inputs})

    assert workloads_of(Run([release(values=None, namespace="nvidia-device-plugin")], {})) == []
    assert workloads_of(Run([release(values={}, namespace=None)], {})) == []
    (row,) = workloads_of(Run([release(values={}, namespace="nvidia-device-plugin")], {}))
    assert row[0] == "DaemonSet/nvidia-device-plugin (helm)" and row[1]["containers"]


def test_the_preview_shows_karpenter_pools_in_placement_agents_and_cost() -> None:
    """A stack with Karpenter pools: their columns, their agents, their cost, and no violation."""
    from infra.tooling.agents import declared_nodes
    from infra.tooling.preview import project_report
    from localcluster import karpenter

    _, run = karpenter.platform_run()
    nodes = declared_nodes([(r.type, r.name, r.inputs) for r in run.resources])
    blocks, mandatory = project_report("eks-gpu-platform", "dev", run, nodes, "us-west-2")
    text = "\n".join(blocks)
    placement = text.split("placement (")[1].split("\n\n")[0].splitlines()
    header = placement[1]
    assert {"burst", "batch", "inference", "training"} <= set(header.split())
    plugin = next(line for line in placement if "nvidia-device-plugin" in line)
    for pool in ("burst", "batch"):  # the plugin lands on the Karpenter pools' nodes
        assert plugin[header.index(f" {pool} ") + 1 :].split()[0] == "yes"
    agents = text.split("agents (DaemonSets)")[1].split("\n\n")[0]
    assert "nodepool-gpu-burst" in agents and "nodepool-gpu-batch" in agents
    assert "placement unknown" not in text  # Karpenter's charts run Deployments only
    assert "gpu-burst (Karpenter)" in text and "gpu-batch (Karpenter)" in text
    assert "burst may run on SPOT or on-demand" in text
    assert mandatory == 0


def test_the_placement_table_shows_every_pod_spec_of_a_custom_resource_by_its_path() -> None:
    from infra.tooling.offline import Registration, Run
    from infra.tooling.preview import workloads_of

    worker = {"containers": [{"name": "w", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}
    inputs = {
        "metadata": {"name": "ray"},
        "spec": {
            "headGroupSpec": {"template": {"spec": {"containers": [{"name": "head"}]}}},
            "workerGroupSpecs": [{"groupName": "gpu", "template": {"spec": worker}}],
        },
    }
    cluster = Registration("urn:ray", "kubernetes:ray.io/v1:RayCluster", "ray", "", True, "", False, inputs)
    rows = workloads_of(Run([cluster], {}))
    assert [name for name, _ in rows] == [
        "RayCluster/ray spec.headGroupSpec.template.spec",
        "RayCluster/ray spec.workerGroupSpecs[0].template.spec",
    ]
    assert rows[1][1]["containers"][0]["name"] == "w"


def _sized_run(memory: str, types: tuple[str, ...] = ("g5g.xlarge",)) -> tuple[object, list[object]]:
    """A pool of ``types`` and a Deployment for it asking ``memory``."""
    from infra.tooling.agents import declared_nodes
    from infra.tooling.offline import Registration, Run

    group = {
        "instanceTypes": list(types),
        "labels": {"GPU": "true", "eks-gpu/pool": "small"},
        "taints": [{"key": "GPU", "value": "true", "effect": "NO_SCHEDULE"}],
    }
    pod = {
        "nodeSelector": {"eks-gpu/pool": "small"},
        "tolerations": [{"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        "containers": [
            {"name": "m", "resources": {"requests": {"memory": memory}, "limits": {"nvidia.com/gpu": "1"}}}
        ],
    }
    deployment = {"metadata": {"name": "model"}, "spec": {"template": {"spec": pod}}}
    run = Run(
        [
            Registration("urn:g", "aws:eks/nodeGroup:NodeGroup", "gpu-small", "", True, "", False, group),
            Registration("urn:d", "kubernetes:apps/v1:Deployment", "model", "", True, "", False, deployment),
        ],
        {},
    )
    return run, declared_nodes([(r.type, r.name, r.inputs) for r in run.resources])


def test_a_pod_that_fits_the_instance_but_not_a_real_node_is_named_with_its_pool_and_request() -> None:
    """Bad input (issue 33): a g5g.xlarge has 8 GiB, a real AL2023 node of it offers pods 6584Mi."""
    from infra.tooling.preview import placement_table, size_notes

    run, nodes = _sized_run("7000Mi")
    (note,) = size_notes(run, nodes)
    assert "Deployment/model cannot run on pool small: its largest type gpu-small/g5g.xlarge" in note
    assert "requests memory 7000Mi, node offers 6584Mi" in note
    assert "-" in placement_table(run, nodes)[1].split()[1:]
    run, nodes = _sized_run("6500Mi")
    assert size_notes(run, nodes) == []
    # A bigger type in the pool holds it, but the autoscaler imagines the pool at zero as its smallest.
    run, nodes = _sized_run("7500Mi", ("g5g.2xlarge", "g5g.xlarge"))
    (note,) = size_notes(run, nodes)
    assert "scales nothing from zero on pool small: its smallest type gpu-small/g5g.xlarge" in note
