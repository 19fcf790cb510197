"""The resource options a GPU component hands on to its children, which Pulumi would leave on the component.

Pulumi gives a child its parent's protect, providers and transformations (pulumi/resource.py,
Resource.__init__), and the engine its deletedWith and retainOnDelete (test_engine_inherits.py);
depends_on and the field options given to a component act on the component alone.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

import pulumi
import pytest
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime.resource_hooks import StubResourceHook

from infra import GpuDeployment, GpuJob, PodSpecError
from infra.tooling.offline import PLATFORM_ROOT
from infra.workloads import child_options
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


# --- every option the SDK has: handed on, kept by Pulumi, or refused naming it ---

SDK_OPTIONS = [p for p in inspect.signature(pulumi.ResourceOptions.__init__).parameters if p != "self"]
"""The fields of pulumi.ResourceOptions in the installed SDK (pinned): a new one fails these tests until handled."""
TABLES = {
    "every child": child_options.EVERY_CHILD,
    "main child": child_options.MAIN_CHILD,
    "timeouts": child_options.CUSTOM_TIMEOUTS,
    "kept by Pulumi": child_options.KEPT_BY_PULUMI,
    "refused": tuple(child_options.REFUSED),
}


def test_every_resource_option_of_the_sdk_is_in_exactly_one_table() -> None:
    placed = [name for table in TABLES.values() for name in table]
    assert sorted(placed) == sorted(SDK_OPTIONS), (
        "handle each new pulumi.ResourceOptions field in child_options"
    )


def test_the_docs_options_table_lists_every_option_the_sdk_has() -> None:
    guide = (PLATFORM_ROOT / "docs" / "components.md").read_text()
    section = guide[guide.index("\n### Resource options\n") :]
    section = section[: section.index("\n### ", 1)]
    listed = {
        name for row in re.findall(r"^\| (.+?) \|", section, re.M) for name in re.findall(r"`(\w+)`", row)
    }
    assert listed >= set(SDK_OPTIONS), sorted(set(SDK_OPTIONS) - listed)


class _Requests(pulumi_mocks.MockMonitor):
    """The SDK's mock monitor, keeping each RegisterResource request as the engine would get it."""

    def __init__(self) -> None:
        super().__init__(_Echo())
        self.requests: dict[str, Any] = {}

    def RegisterResource(self, request: Any) -> Any:
        self.requests[request.type] = request
        return super().RegisterResource(request)


class _Echo(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        return f"{args.name}_id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        return {}


def _requests(program) -> dict[str, Any]:
    monitor = _Requests()
    pulumi.runtime.reset_options()
    pulumi.runtime.set_mocks(monitor.mocks, preview=False, monitor=monitor)
    pulumi.runtime.test(program)()
    return monitor.requests


@pytest.mark.parametrize("component", ["GpuDeployment", "GpuJob"])
def test_replacement_and_hook_options_the_engine_ignores_on_a_component_reach_the_child(
    component: str,
) -> None:
    # GpuJob(..., replacement_trigger=data_version) must rerun the Job when the data changes.
    child = {"GpuDeployment": DEPLOYMENT, "GpuJob": JOB}[component]

    def program() -> None:
        data = pulumi.CustomResource("test:index:Data", "data", {})
        opts = pulumi.ResourceOptions(
            replacement_trigger="data-v2",
            replace_with=[data],
            hooks=pulumi.ResourceHookBinding(before_create=[StubResourceHook("announce")]),
            hide_diffs=["spec.template.metadata.annotations"],
            additional_secret_outputs=["status"],
        )
        if component == "GpuDeployment":
            GpuDeployment("x", spec=deployment_spec(), opts=opts)
        else:
            GpuJob("x", spec=JOB_SPEC, opts=opts)

    requests = _requests(program)
    request = requests[child]
    # the engine runs a component's hooks too: given to both, each would fire twice
    assert not list(requests[f"eks-gpu:index:{component}"].hooks.before_create)
    assert request.replacement_trigger.string_value == "data-v2"
    assert [urn.rsplit("$", 1)[-1] for urn in request.replace_with] == ["test:index:Data::data"]
    assert list(request.hooks.before_create) == ["announce"]
    assert list(request.hideDiffs) == ["spec.template.metadata.annotations"]
    assert list(request.additionalSecretOutputs) == ["status"]


@pytest.mark.parametrize("option", sorted(child_options.REFUSED))
def test_an_option_a_component_cannot_honour_is_refused_naming_it(run, option: str) -> None:
    value = {"id": "ns/x", "urn": "urn:pulumi:s::p::eks-gpu:index:GpuJob::x", "import_": "ns/x"}.get(
        option, "1.0.0"
    )
    if option == "env_var_mappings":
        value = {"KUBECONFIG": "KUBECONFIG"}
    caught: list[str] = []

    def program() -> None:
        for component, spec in ((GpuDeployment, deployment_spec()), (GpuJob, JOB_SPEC)):
            with pytest.raises(PodSpecError) as raised:
                component("x", spec=spec, opts=pulumi.ResourceOptions(**{option: value}))
            caught.append(str(raised.value))

    assert run(program).resources == []
    assert caught == [
        f"{name}('x'): opts.{option} is not supported on this component: {child_options.REFUSED[option]}"
        for name in ("GpuDeployment", "GpuJob")
    ]
