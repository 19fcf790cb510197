"""The offline preview: tree, placement table and schema-valid manifests, or a clear failure."""

from __future__ import annotations

from pathlib import Path

import yaml

from infra.tooling.manifests import validate_manifest
from infra.tooling.preview import main
from tests.conftest import KUBERNETES_VERSION

ROOT = Path(__file__).resolve().parents[2]


def test_dev_preview_prints_tree_and_placement_and_writes_valid_manifests(tmp_path: Path, capsys) -> None:
    assert main(["--stack", "dev", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "aws:eks/nodeGroup:NodeGroup  gpu-platform-gpu" in out
    assert "amiType=AL2023_ARM_64_NVIDIA" in out
    table = [
        line.split()
        for line in out.splitlines()
        if line.startswith("  Deployment/triton") or "(helm)" in line
    ]
    assert ["Deployment/triton", "yes", "-"] in table
    assert ["DaemonSet/nvidia-device-plugin", "(helm)", "yes", "-"] in table
    assert "(any pod without the toleration)       -                 yes" in out
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
    assert "error: kubernetesVersion must be one of" in capsys.readouterr().err


def test_unknown_stack_is_a_clear_error(tmp_path: Path, capsys) -> None:
    assert main(["--stack", "nosuch", "--out", str(tmp_path)]) == 1
    assert "no project has a Pulumi.nosuch.yaml" in capsys.readouterr().err
