"""The resource options a GPU component hands on to its children, which Pulumi would leave on the component.

Pulumi gives a child its parent's protect, providers and transformations (pulumi/resource.py,
Resource.__init__), and the engine its deletedWith and retainOnDelete (test_engine_inherits.py);
depends_on and the field options given to a component act on the component alone.
"""

from __future__ import annotations

import pulumi
import pytest

from infra import GpuDeployment, GpuJob, PodSpecError
from infra.workloads.gpu_deployment import REPLICAS
from infra.workloads.gpu_job import REPLACE_ON_CHANGES
from tests.conftest import deployment_spec

DEPLOYMENT = "kubernetes:apps/v1:Deployment"
PDB = "kubernetes:policy/v1:PodDisruptionBudget"
JOB = "kubernetes:batch/v1:Job"
NAMESPACE = "kubernetes:core/v1:Namespace"
JOB_SPEC = {"template": {"spec": {"containers": [{"name": "t", "image": "i"}]}}}


def _components(opts: pulumi.ResourceOptions) -> None:
    GpuDeployment("llm", spec={**deployment_spec(), "replicas": 2}, opts=opts)
    GpuJob("train", spec=JOB_SPEC, opts=opts)


def test_depends_on_retain_on_delete_and_deleted_with_reach_every_child(run) -> None:
    def program() -> None:
        namespace = pulumi.CustomResource(NAMESPACE, "ml", {})
        _components(
            pulumi.ResourceOptions(depends_on=[namespace], retain_on_delete=True, deleted_with=namespace)
        )

    result = run(program)
    namespace = result.one(NAMESPACE).urn
    children = [result.one(DEPLOYMENT), result.one(PDB), result.one(JOB)]
    for child in children:
        assert namespace in child.dependencies, child.name
        assert child.retain_on_delete is True, child.name
        assert child.deleted_with == namespace, child.name


def test_without_options_the_children_get_none(run) -> None:
    result = run(lambda: _components(pulumi.ResourceOptions()))
    for child in (result.one(DEPLOYMENT), result.one(PDB), result.one(JOB)):
        assert (child.retain_on_delete, child.deleted_with) == (False, ""), child.name
    assert result.one(DEPLOYMENT).dependencies == result.one(JOB).dependencies == []
    assert result.one(DEPLOYMENT).ignore_changes == []


def test_the_component_providers_unset_values_mean_unset(run) -> None:
    """Construct passes retain_on_delete=False and empty lists when a YAML or TypeScript user set none."""
    opts = pulumi.ResourceOptions(retain_on_delete=False, ignore_changes=[], replace_on_changes=[])
    result = run(lambda: _components(opts))
    assert result.one(DEPLOYMENT).ignore_changes == [] and result.one(DEPLOYMENT).replace_on_changes == []
    assert result.one(JOB).replace_on_changes == list(REPLACE_ON_CHANGES)


def test_field_options_reach_the_deployment_or_job_and_not_the_pdb(run) -> None:
    opts = pulumi.ResourceOptions(
        ignore_changes=["metadata.annotations"],
        replace_on_changes=["spec.template.spec.containers[0].image"],
        delete_before_replace=True,
    )
    result = run(lambda: _components(opts))
    for child in (result.one(DEPLOYMENT), result.one(JOB)):
        assert child.ignore_changes == ["metadata.annotations"], child.name
        assert child.replace_on_changes[0] == "spec.template.spec.containers[0].image", child.name
        assert child.delete_before_replace is True, child.name
    pdb = result.one(PDB)
    assert (pdb.ignore_changes, pdb.replace_on_changes, pdb.delete_before_replace) == ([], [], None)


def test_ignoring_replicas_by_hand_is_refused_in_favour_of_autoscaled(run) -> None:
    caught: list[str] = []

    def program() -> None:
        with pytest.raises(PodSpecError) as raised:
            GpuDeployment(
                "llm", spec=deployment_spec(), opts=pulumi.ResourceOptions(ignore_changes=[REPLICAS])
            )
        caught.append(str(raised.value))

    assert run(program).resources == []
    assert caught[0].startswith(
        "GpuDeployment('llm'): opts.ignore_changes 'spec.replicas': use autoscaled=True"
    )
