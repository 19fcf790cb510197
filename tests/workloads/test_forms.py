"""One pure merge for every form a pod spec comes in: camelCase, snake_case, typed Args, Outputs."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s
import pytest

from infra import PodSpecError, place_deployment_spec, place_job_spec, place_pod_spec

CAMEL = {
    "nodeSelector": {"disk_type": "ssd"},
    "serviceAccountName": "trainer",
    "containers": [{"name": "m", "image": "i", "imagePullPolicy": "Always"}],
}
SNAKE = {
    "node_selector": {"disk_type": "ssd"},
    "service_account_name": "trainer",
    "containers": [{"name": "m", "image": "i", "image_pull_policy": "Always"}],
}
TYPED = k8s.core.v1.PodSpecArgs(
    node_selector={"disk_type": "ssd"},
    service_account_name="trainer",
    containers=[k8s.core.v1.ContainerArgs(name="m", image="i", image_pull_policy="Always")],
)


def _snake_keys(value: object, path: str = "") -> list[str]:
    """Field names with an underscore (user map keys such as labels excluded)."""
    found = []
    if isinstance(value, dict):
        for key, item in value.items():
            if "_" in key and path.rsplit(".", 1)[-1] not in ("nodeSelector", "limits", "requests", "labels"):
                found.append(f"{path}.{key}")
            found += _snake_keys(item, f"{path}.{key}")
    elif isinstance(value, list):
        for item in value:
            found += _snake_keys(item, path)
    return found


@pytest.mark.parametrize("form", [CAMEL, SNAKE, TYPED], ids=["camelCase", "snake_case", "typed Args"])
def test_every_form_gives_the_same_kubernetes_form(form: object) -> None:
    placed = place_pod_spec(form)
    assert placed == place_pod_spec(CAMEL)
    assert placed["nodeSelector"] == {"disk_type": "ssd", "GPU": "true"}  # user keys are never renamed
    assert placed["serviceAccountName"] == "trainer"
    assert placed["containers"][0]["imagePullPolicy"] == "Always"
    assert _snake_keys(placed) == []


def test_deployment_and_job_specs_take_typed_args_too() -> None:
    template = k8s.core.v1.PodTemplateSpecArgs(
        metadata=k8s.meta.v1.ObjectMetaArgs(labels={"app": "a"}), spec=TYPED
    )
    deployment = place_deployment_spec(
        k8s.apps.v1.DeploymentSpecArgs(
            selector=k8s.meta.v1.LabelSelectorArgs(match_labels={"app": "a"}), template=template
        )
    )
    assert deployment["selector"] == {"matchLabels": {"app": "a"}}
    assert deployment["template"]["spec"]["serviceAccountName"] == "trainer"
    job = place_job_spec(k8s.batch.v1.JobSpecArgs(backoff_limit=2, template=template))
    assert job["backoffLimit"] == 2 and job["template"]["spec"]["restartPolicy"] == "Never"


def test_one_field_in_two_spellings_is_refused_not_guessed() -> None:
    with pytest.raises(
        PodSpecError, match=r"spec: 'nodeSelector' is given twice, as 'nodeSelector' and 'node_selector'"
    ):
        place_pod_spec({**CAMEL, "node_selector": {"zone": "a"}})
    with pytest.raises(PodSpecError, match="'imagePullPolicy' is given twice"):
        place_pod_spec(
            {"containers": [{"name": "m", "imagePullPolicy": "Always", "image_pull_policy": "Never"}]}
        )


def test_an_output_inside_is_refused_with_the_way_out(run) -> None:
    def program() -> None:
        spec = {"containers": [{"name": "m", "image": pulumi.Output.from_input("repo/llm:1")}]}
        with pytest.raises(
            PodSpecError, match=r"spec.containers\[0\].image is a Pulumi Output: place_pod_spec is pure"
        ):
            place_pod_spec(spec)
        with pytest.raises(PodSpecError, match=r"Output.apply"):
            place_pod_spec(pulumi.Output.from_input(CAMEL))

    run(program)


def test_inside_output_apply_the_resolved_spec_is_placed(run) -> None:
    def program() -> None:
        spec = k8s.core.v1.PodSpecArgs(
            containers=[k8s.core.v1.ContainerArgs(name="m", image=pulumi.Output.from_input("repo/llm:1"))]
        )
        pulumi.export("pod", pulumi.Output.from_input(spec).apply(lambda s: place_pod_spec(s)))

    pod = run(program).stack_outputs["pod"]
    assert pod["containers"][0]["image"] == "repo/llm:1"
    assert pod["nodeSelector"] == {"GPU": "true"}


def test_something_that_is_no_pod_spec_is_refused() -> None:
    with pytest.raises(PodSpecError, match="spec must be a pod spec mapping, got str"):
        place_pod_spec("containers: []")
