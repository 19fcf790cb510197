"""stacks/team-job: a team's GpuJob queued through Kueue, run with its dev config against the dev platform's export."""

from __future__ import annotations

from pathlib import Path

from infra.platform import kueue_objects
from infra.tooling.manifests import manifest_of, validate_manifest
from infra.tooling.offline import platform_contract, run_project
from infra.workloads.placement import Placement
from infra.workloads.queues import PRIORITY_LABEL, QUEUE_LABEL
from tests.conftest import KUBERNETES_VERSION

PROJECT = Path(__file__).resolve().parents[1] / "stacks" / "team-job"
JOB = "kubernetes:batch/v1:Job"


def test_the_job_goes_to_the_teams_queue_in_its_namespace() -> None:
    job = run_project(PROJECT, "dev").one(JOB, "finetune")
    assert job.inputs["metadata"]["namespace"] == "vision"
    assert job.inputs["metadata"]["labels"][QUEUE_LABEL] == "default"
    assert job.inputs["metadata"]["labels"][PRIORITY_LABEL] == "normal"  # the vision team's default
    assert job.custom_timeouts[:2] == ("240m", "240m")  # the wait allows for the queue


def test_the_job_is_placed_as_the_teams_training_flavor_places_it() -> None:
    """Kueue merges the flavor's labels and toleration into the admitted Job: they are already there."""
    contract = Placement.from_dict(platform_contract("dev"))
    flavor = kueue_objects.resource_flavor(contract, "training")["spec"]
    pod = run_project(PROJECT, "dev").one(JOB, "finetune").inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == flavor["nodeLabels"]
    assert flavor["tolerations"][0] in pod["tolerations"]


def test_the_stack_declares_no_namespace_the_platform_owns() -> None:
    run = run_project(PROJECT, "dev")
    assert run.of_type("kubernetes:core/v1:Namespace") == []
    validate_manifest(manifest_of(JOB, "finetune", run.one(JOB, "finetune").inputs), KUBERNETES_VERSION)
