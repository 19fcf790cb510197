"""The platform declares Kueue, the teams' namespaces and queues only when ``teams:`` is set."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infra.tooling.offline import Run, run_project
from tests.platform.conftest import dev_variant

ROOT = Path(__file__).resolve().parents[2]
CUSTOM = "kubernetes:kueue.x-k8s.io/v1beta2:"
RELEASE = "kubernetes:helm.sh/v3:Release"


@pytest.fixture(scope="module")
def dev() -> Run:
    return run_project(ROOT, "dev")


def _teams_block() -> str:
    text = (ROOT / "Pulumi.dev.yaml").read_text()
    start = text.index("  eks-gpu-platform:teams:")
    return text[start : text.index("  eks-gpu-platform:production")]


def _kueue_things(run: Run) -> list[str]:
    return [
        f"{r.type} {r.name}"
        for r in run.resources
        if "kueue" in r.type.lower() or "kueue" in r.name.lower() or r.inputs.get("chart") == "kueue"
    ]


def test_without_teams_nothing_of_kueue_is_declared(tmp_path: Path) -> None:
    run = dev_variant(tmp_path, {_teams_block(): ""})
    assert _kueue_things(run) == []
    assert "queues" not in run.stack_outputs["placement"]


def test_with_teams_the_pinned_chart_scoped_to_their_namespaces(dev: Run) -> None:
    release = dev.one(RELEASE, "kueue")
    assert (release.inputs["chart"], release.inputs["version"]) == (
        "oci://registry.k8s.io/kueue/charts/kueue",
        "0.17.0",
    )
    assert release.inputs["namespace"] == "kueue-system"
    config = yaml.safe_load(release.inputs["values"]["managerConfig"]["controllerManagerConfigYaml"])
    assert config["managedJobsNamespaceSelector"]["matchExpressions"][0]["values"] == ["speech", "vision"]


def test_with_teams_each_team_gets_its_namespace_and_queues(dev: Run) -> None:
    namespaces = {r.inputs["metadata"]["name"] for r in dev.of_type("kubernetes:core/v1:Namespace")}
    assert {"kueue-system", "vision", "speech"} <= namespaces
    kinds = sorted(
        (r.type.removeprefix(CUSTOM), r.inputs["metadata"]["name"])
        for r in dev.resources
        if r.type.startswith(CUSTOM)
    )
    assert kinds == sorted(
        [("ResourceFlavor", "inference"), ("ResourceFlavor", "training")]
        + [("WorkloadPriorityClass", c) for c in ("low", "normal", "high")]
        + [("ClusterQueue", "vision"), ("ClusterQueue", "speech")]
        + [("LocalQueue", "default"), ("LocalQueue", "default")]
    )


def test_queues_wait_for_the_release_and_their_namespace(dev: Run) -> None:
    release = dev.one(RELEASE, "kueue")
    speech = next(
        r for r in dev.of_type("kubernetes:core/v1:Namespace") if r.inputs["metadata"]["name"] == "speech"
    )
    local = next(
        r for r in dev.of_type(f"{CUSTOM}LocalQueue") if r.inputs["metadata"]["namespace"] == "speech"
    )
    assert {release.urn, speech.urn} <= set(local.dependencies)


def test_a_destroy_deletes_the_teams_namespaces_before_kueue(dev: Run) -> None:
    # Their Workloads carry Kueue's finalizer: with the controller gone first they would stay Terminating.
    release = dev.one(RELEASE, "kueue")
    teams = [
        r
        for r in dev.of_type("kubernetes:core/v1:Namespace")
        if r.inputs["metadata"]["name"] in ("vision", "speech")
    ]
    assert len(teams) == 2 and all(release.urn in r.dependencies for r in teams)


def test_the_export_lists_the_teams_queues(dev: Run) -> None:
    queues = dev.stack_outputs["placement"]["queues"]
    assert queues["vision"] == {
        "namespace": "vision",
        "name": "default",
        "pools": ["inference", "training"],
        "priority": "normal",
        "partialAdmission": False,
    }
    assert queues["speech"]["partialAdmission"] is True
