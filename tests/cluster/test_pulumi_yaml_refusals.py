"""Bad input in a YAML consumer, through the real CLI: refused naming the field, nothing created.

Each case is stacks/inference-yaml's own GpuDeployment with one input spoiled, run by
``pulumi up`` into a namespace the test made (so "nothing created" can be seen: the
namespace stays empty). Who refuses depends on the input, and each case says who:

- the YAML host (pulumi-yaml v1.25.0) type-checks every resource's properties against the
  package schema before it registers anything (``pkg/pulumiyaml/analyser.go``,
  ``typeResource`` / ``isAssignable``): an unknown input or a string for the integer ``gpus``
  never reaches the component (the SDK's Construct would drop an unknown input silently:
  ``pulumi/provider/experimental/component.py`` maps only the schema's inputs);
- what the schema cannot say reaches the component, whose own refusal, naming the field,
  comes back through the engine (after "has a problem:" and the provider's Python traceback):
  at once when the spec alone contradicts the pool, or once the platform's placement (a
  StackReference output, so an Output inside the provider) resolves. In that second case the
  component resource itself is already registered (the SDK registers it before its children),
  so only Kubernetes objects are asserted absent, in the cluster and in the stack's state.

A refusal the component makes from ``metadata`` holds when ``metadata`` is an Output, as it is from
YAML whenever a field comes from another resource: stacks/training-yaml's GpuJob, its namespace
from the program's Namespace, is refused at ``up`` with the words the plain spelling gets
(tests/workloads/test_metadata_refusals.py has every such refusal in both spellings).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from infra.tooling.offline import PLATFORM_ROOT
from localcluster.kube import Kube
from localcluster.pulumi_cli import Stack
from tests.cluster.test_pulumi_consumers import fresh_stack

PROJECT = PLATFORM_ROOT / "stacks" / "inference-yaml"
TRAINING = PLATFORM_ROOT / "stacks" / "training-yaml"
NAMESPACE = "yaml-refusals"
STACK = "local"


def _program(
    spoil: Callable[[dict[str, Any]], None], project: Path = PROJECT, keep: tuple[str, ...] = ("triton",)
) -> dict[str, Any]:
    """``project``'s program with only its platform, cluster and ``keep`` resources, the last one spoiled.

    Without ``keep``ing the program's Namespace, the component's metadata.namespace is NAMESPACE.
    """
    program = copy.deepcopy(yaml.safe_load((project / "Pulumi.yaml").read_text()))
    program["name"] = f"{program['name']}-refusals"
    program["packages"] = {"eks-gpu": str(PLATFORM_ROOT / "provider")}
    resources = program["resources"]
    program["resources"] = {name: resources[name] for name in ("platform", "cluster", *keep)}
    properties = program["resources"][keep[-1]]["properties"]
    if len(keep) == 1:
        properties["metadata"]["namespace"] = NAMESPACE
    program["outputs"] = {}
    spoil(properties)
    return program


@dataclass(frozen=True)
class Case:
    spoil: Callable[[dict[str, Any]], None]
    refusal: str
    """What the CLI's output says: the refusal, naming the field."""


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda properties: properties.__setitem__(key, value)


def _select_pool(pool: str) -> Callable[[dict[str, Any]], None]:
    def spoil(properties: dict[str, Any]) -> None:
        properties["spec"]["template"]["spec"]["nodeSelector"] = {"eks-gpu/pool": pool}

    return spoil


CASES = {
    # The YAML host, from the schema, before anything is registered:
    "unknown input": Case(
        _set("replicaCount", 2), "Property replicaCount does not exist on 'eks-gpu:index:GpuDeployment'"
    ),
    "string for gpus": Case(_set("gpus", "two"), "gpus: Cannot assign type 'string' to type 'integer'"),
    # spec is the Kubernetes package's DeploymentSpec (the schema refers to it): its fields too.
    "string for spec.replicas": Case(
        lambda properties: properties["spec"].__setitem__("replicas", "two"),
        "replicas: Cannot assign type 'string' to type 'integer'",
    ),
    # The component: at once (the spec is known) ...
    "nodeSelector contradicting the pool": Case(
        _select_pool("training"),
        "GpuDeployment('triton'): nodeSelector eks-gpu/pool='training' contradicts pool='inference'",
    ),
    # ... or once the platform's placement (a StackReference output) resolves.
    "pool the placement does not export": Case(
        _set("pool", "batch"),
        "GpuDeployment('triton'): pool: pool 'batch' is not one the platform exports; allowed: inference, training",
    ),
}


@pytest.fixture(scope="module")
def namespace(kube: Kube) -> Any:
    kube.delete_namespace(NAMESPACE)
    kube.namespace(NAMESPACE)
    yield NAMESPACE
    kube.delete_namespace(NAMESPACE)


def _objects(kube: Kube, namespace: str) -> list[str]:
    apps, policy = client.AppsV1Api(kube.api), client.PolicyV1Api(kube.api)
    found = [f"Deployment/{d.metadata.name}" for d in apps.list_namespaced_deployment(namespace).items]
    found += [
        f"Job/{j.metadata.name}" for j in client.BatchV1Api(kube.api).list_namespaced_job(namespace).items
    ]
    found += [f"ReplicaSet/{r.metadata.name}" for r in apps.list_namespaced_replica_set(namespace).items]
    found += [f"Pod/{p.metadata.name}" for p in kube.core.list_namespaced_pod(namespace).items]
    found += [
        f"PodDisruptionBudget/{b.metadata.name}"
        for b in policy.list_namespaced_pod_disruption_budget(namespace).items
    ]
    return found


def _project(tmp_path: Path, program: dict[str, Any], source: Path, namespace: str = NAMESPACE) -> Path:
    """``program`` as a project of its own, with ``source``'s local stack config for its namespace."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "Pulumi.yaml").write_text(yaml.safe_dump(program, sort_keys=False))
    config = yaml.safe_load((source / f"Pulumi.{STACK}.yaml").read_text())["config"]
    prefix = yaml.safe_load((source / "Pulumi.yaml").read_text())["name"]
    config = {k.replace(f"{prefix}:", f"{program['name']}:"): v for k, v in config.items()}
    config[f"{program['name']}:namespace"] = namespace
    (project / f"Pulumi.{STACK}.yaml").write_text(yaml.safe_dump({"config": config}))
    return project


def _refused_and_nothing_created(
    kube: Kube, project: Path, refusal: str, namespace: str, kept: set[str]
) -> None:
    """``pulumi up`` fails saying ``refusal``; no workload in ``namespace``, no Kubernetes object in state but ``kept``."""
    stack = fresh_stack(kube, project)
    try:
        result = stack.run("up", "--yes", "--skip-preview", "--color", "never", check=False)
        output = result.stdout + result.stderr
        assert result.returncode != 0, output
        assert refusal in output
        assert _objects(kube, namespace) == []
        state = json.loads(stack.run("stack", "export").stdout)["deployment"].get("resources") or []
        assert {r["type"] for r in state if r["type"].startswith("kubernetes:")} <= kept
    finally:
        stack.destroy()
        stack.remove()


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_refused_naming_the_field_and_nothing_is_created(
    kube: Kube, platform: Stack, namespace: str, tmp_path: Path, case: str
) -> None:
    project = _project(tmp_path, _program(CASES[case].spoil), PROJECT)
    _refused_and_nothing_created(kube, project, CASES[case].refusal, namespace, set())


def test_a_refusal_from_metadata_holds_when_metadata_is_an_output(
    kube: Kube, platform: Stack, tmp_path: Path
) -> None:
    """replaceUnready written by hand beside a namespace from another resource: metadata reaches
    the component as one Output, known only at up. Let through, the next up after an interrupted
    wait would replace (kill) the running Job (pulumi-kubernetes replaces any Job not Complete)."""

    def annotate(properties: dict[str, Any]) -> None:
        properties["metadata"]["annotations"]["pulumi.com/replaceUnready"] = "true"

    namespace = f"{NAMESPACE}-output"
    program = _program(annotate, TRAINING, keep=("training", "finetune"))
    assert (
        program["resources"]["finetune"]["properties"]["metadata"]["namespace"] == "${training.metadata.name}"
    )
    refusal = (
        "GpuJob('finetune'): metadata.annotations['pulumi.com/replaceUnready'] 'true': use replace_unready=True "
        "instead"
    )
    project = _project(tmp_path, program, TRAINING, namespace)
    kube.delete_namespace(namespace)  # the program creates it: none left by an interrupted run
    _refused_and_nothing_created(kube, project, refusal, namespace, {"kubernetes:core/v1:Namespace"})
