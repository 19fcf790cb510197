"""stacks/inference-yaml: the inference service in Pulumi YAML, through the eks-gpu package.

``bin/preview`` runs Python programs only, so the YAML program is checked here:
every resource's properties against the schema it will be checked against
(the package's for ``eks-gpu:``, Kubernetes' for ``kubernetes:``), and then its
GpuDeployment is constructed with the values the engine would send for the
stack's own ``Pulumi.dev.yaml`` and the placement (with pools) the dev platform exports.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from pulumi.provider.experimental.component import ComponentProvider

from infra.tooling.manifests import is_manifest_type, manifest_of, validate_manifest
from infra.tooling.offline import platform_outputs, run_program
from infra.workloads.placement import POOL_LABEL
from infra.workloads.scheduling import placeable_on
from tests.conftest import KUBERNETES_VERSION, gpu_node, system_node
from tests.provider.conftest import PROVIDER_DIR, ROOT, construct

PROJECT = ROOT / "stacks" / "inference-yaml"
PROGRAM: dict[str, Any] = yaml.safe_load((PROJECT / "Pulumi.yaml").read_text())
STACK = "dev"
STACK_CONFIG: dict[str, Any] = yaml.safe_load((PROJECT / f"Pulumi.{STACK}.yaml").read_text())["config"]
"""The stack's committed config: what ``pulumi up`` in stacks/inference-yaml runs with."""
CONFIG_TYPES = {"string": str, "integer": int, "boolean": bool}
EXPRESSION = re.compile(r"^\$\{([A-Za-z_][\w-]*)((?:\.\w+|\[\"[^\"]+\"\])*)\}$")
ACCESS = re.compile(r"\.(\w+)|\[\"([^\"]+)\"\]")
BUILTIN_PROPERTIES = {"pulumi:pulumi:StackReference": {"name"}, "pulumi:providers:kubernetes": {"kubeconfig"}}


def _type_token(typ: str) -> str:
    """YAML's ``pkg:Type`` shorthand is ``pkg:index:Type``."""
    parts = typ.split(":")
    return f"{parts[0]}:index:{parts[1]}" if len(parts) == 2 else typ


def _config() -> dict[str, Any]:
    """The stack's config by the names the program uses, defaults filled in."""
    project = PROGRAM["name"]
    values = {name: decl.get("default") for name, decl in PROGRAM["config"].items()}
    for key, value in STACK_CONFIG.items():
        namespace, _, name = key.partition(":")
        assert namespace == project and name in PROGRAM["config"], f"{key} is not declared in Pulumi.yaml"
        declared = CONFIG_TYPES[PROGRAM["config"][name]["type"]]
        # Pulumi YAML reads a config value by its declared type; "2" is an integer too.
        values[name] = declared(value) if declared is int and isinstance(value, str) else value
        assert isinstance(values[name], declared), f"{key}: {value!r} is not a {declared.__name__}"
    assert None not in values.values(), f"config without a value: {values}"
    return values


def _resolve(value: Any, scope: dict[str, Any], used: set[str]) -> Any:
    """``value`` with each ``${root.path}`` evaluated in ``scope``; the roots it used go into ``used``."""
    if isinstance(value, dict):
        return {k: _resolve(v, scope, used) for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve(v, scope, used) for v in value]
    if not isinstance(value, str) or "${" not in value:
        return value
    match = EXPRESSION.match(value)
    assert match, f"only whole-value interpolations are used here, got {value!r}"
    root, path = match.groups()
    used.add(root)
    result = scope[root]
    for attribute, key in ACCESS.findall(path):
        result = result[attribute or key]
    return _resolve(result, scope, used)


def _check(value: Any, prop: dict[str, Any], path: str, plain_scope: set[str]) -> list[str]:
    """Where ``value`` breaks the schema property ``prop`` (types only; expressions are typed when run)."""
    if isinstance(value, str) and EXPRESSION.match(value):
        root = EXPRESSION.match(value).group(1)  # type: ignore[union-attr]
        if prop.get("plain") and root not in plain_scope:
            return [f"{path}: plain input, must be a literal or config, got {value!r}"]
        return []
    if prop.get("$ref") == "pulumi.json#/Any":
        return []
    expected = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list}[prop["type"]]
    if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
        return [f"{path}: expected {prop['type']}, got {value!r}"]
    if expected is dict and "additionalProperties" in prop:
        return [
            problem
            for key, item in value.items()
            for problem in _check(item, prop["additionalProperties"], f"{path}.{key}", plain_scope)
        ]
    return []


def test_the_program_uses_the_package_served_from_this_repository() -> None:
    assert (PROJECT / PROGRAM["packages"]["eks-gpu"]).resolve() == PROVIDER_DIR
    assert (PROVIDER_DIR / "PulumiPlugin.yaml").is_file()


def _schema_problems(program: dict[str, Any], schema: dict[str, Any]) -> list[str]:
    """Where the program's eks-gpu components break the package schema (unknown, missing, mistyped inputs)."""
    plain_scope = set(program.get("config", {})) | set(program.get("variables", {}))
    components = {name: r for name, r in program["resources"].items() if r["type"].startswith("eks-gpu:")}
    assert components, "the YAML program declares no eks-gpu component"
    problems = []
    for name, resource in components.items():
        token = _type_token(resource["type"])
        assert token in schema["resources"], f"{name}: {token} is not in the package"
        declared = schema["resources"][token]
        properties = resource.get("properties", {})
        problems += [
            f"{name}.{p}: unknown input" for p in sorted(set(properties) - set(declared["inputProperties"]))
        ]
        problems += [
            f"{name}.{p}: required input missing" for p in declared["requiredInputs"] if p not in properties
        ]
        for key, value in properties.items():
            if key in declared["inputProperties"]:
                problems += _check(value, declared["inputProperties"][key], f"{name}.{key}", plain_scope)
    return problems


def test_every_component_matches_the_package_schema(schema: dict[str, Any]) -> None:
    assert _schema_problems(PROGRAM, schema) == []


def test_the_documented_yaml_example_matches_the_package_schema(schema: dict[str, Any]) -> None:
    # Readers copy it: a renamed or dropped input must fail here, not in their `pulumi up`.
    guide = (ROOT / "docs" / "components.md").read_text()
    start = guide.index("\n## Use the components from TypeScript, Go or YAML\n")
    section = guide[start : guide.index("\n## ", start + 1)]
    (example,) = re.findall(r"```yaml\n(.*?)```", section, re.DOTALL)
    program = yaml.safe_load(example)

    assert {r["type"] for r in program["resources"].values()} >= {"eks-gpu:GpuDeployment", "eks-gpu:GpuJob"}
    assert _schema_problems(program, schema) == []


def test_the_stack_config_is_what_the_dev_stack_runs_with() -> None:
    assert _config() == {
        "platformStack": "organization/eks-gpu-platform/dev",
        "image": "nvcr.io/nvidia/tritonserver:24.08-py3",
        "replicas": 2,
        "namespace": "inference",
    }


def test_the_placement_comes_from_the_platforms_stack_reference() -> None:
    resources = PROGRAM["resources"]
    assert resources["triton"]["properties"]["placement"] == '${platform.outputs["placement"]}'
    assert resources["platform"]["type"] == "pulumi:pulumi:StackReference"
    assert resources["platform"]["properties"] == {"name": "${platformStack}"}
    assert resources["triton"]["options"]["providers"] == ["${cluster}"]


def _scope(namespace: str) -> dict[str, Any]:
    """What the program's expressions evaluate to: config, variables and resource outputs."""
    config = _config()
    scope: dict[str, Any] = {**config, **PROGRAM.get("variables", {})}
    # offline.platform_outputs: the placement the platform's stack really exports, pools included.
    scope["platform"] = {"outputs": platform_outputs(config["platformStack"])}
    scope["cluster"] = "provider(cluster)"
    scope["inference"] = {"metadata": {"name": namespace}}
    return scope


@pytest.mark.parametrize(
    "name", [n for n, r in PROGRAM["resources"].items() if is_manifest_type(_type_token(r["type"]))]
)
def test_every_kubernetes_object_is_schema_valid(name: str) -> None:
    resource = PROGRAM["resources"][name]
    group_version, kind = resource["type"].split(":")[1:]
    group, version = group_version.split("/")
    inputs = _resolve(resource["properties"], _scope(_config()["namespace"]), set())
    inputs = {"apiVersion": version if group == "core" else f"{group}/{version}", "kind": kind, **inputs}
    validate_manifest(manifest_of(resource["type"], name, inputs), KUBERNETES_VERSION)
    assert resource["options"]["provider"] == "${cluster}"


def test_the_builtin_resources_take_only_their_inputs() -> None:
    for name, resource in PROGRAM["resources"].items():
        if resource["type"] in BUILTIN_PROPERTIES:
            assert set(resource["properties"]) <= BUILTIN_PROPERTIES[resource["type"]], name


def test_the_pool_is_one_the_platform_exports_and_fits_one_gpu_per_pod() -> None:
    properties = PROGRAM["resources"]["triton"]["properties"]
    pools = platform_outputs(_config()["platformStack"])["placement"]["pools"]
    assert properties["pool"] in pools
    # A shared (time-sliced) pool gives a pod one slice: the example asks for exactly one.
    assert pools[properties["pool"]]["timeSlicingReplicas"] > 1 and properties["gpus"] == 1


def test_the_yaml_stack_runs_its_pods_on_gpu_nodes_only(provider: ComponentProvider) -> None:
    namespace = _config()["namespace"]
    scope = _scope(namespace)
    urns = {
        "platform": "urn:pulumi:dev::gpu-inference-yaml::pulumi:pulumi:StackReference::platform",
        "inference": "urn:pulumi:dev::gpu-inference-yaml::kubernetes:core/v1:Namespace::inference",
    }
    resource = PROGRAM["resources"]["triton"]
    inputs, dependencies = {}, {}
    for key, value in resource["properties"].items():
        used: set[str] = set()
        inputs[key] = _resolve(value, scope, used)
        # The engine sends each input with the resources its expression reads.
        dependencies[key] = sorted(urns[root] for root in used if root in urns)

    run = run_program(
        lambda: construct(provider, _type_token(resource["type"]), "triton", inputs, dependencies)
    )

    deployment = run.one("kubernetes:apps/v1:Deployment", "triton")
    assert deployment.inputs["metadata"]["namespace"] == namespace
    assert deployment.inputs["spec"]["replicas"] == _config()["replicas"]
    pod = deployment.inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"GPU": "true", POOL_LABEL: "inference"}
    assert {"key": "GPU", "operator": "Equal", "value": "true", "effect": "NoSchedule"} in pod["tolerations"]
    assert pod["containers"][0]["resources"]["limits"] == {"cpu": "3", "memory": "6Gi", "nvidia.com/gpu": 1}
    assert pod["securityContext"]["runAsUser"] == 10001
    nodes = [gpu_node(pool, **{POOL_LABEL: pool}) for pool in ("inference", "training")] + [system_node()]
    assert placeable_on(pod, nodes) == ["inference"]
    assert run.of_type("kubernetes:policy/v1:PodDisruptionBudget") != []  # 2 replicas, one GPU pod at a time
    for registration in run.resources:
        if is_manifest_type(registration.type) and registration.custom:
            validate_manifest(
                manifest_of(registration.type, registration.name, registration.inputs), KUBERNETES_VERSION
            )
