"""The package's provider: the schema the SDK's analyzer infers, typed with the Kubernetes package's own."""

import importlib.metadata
import inspect
import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

from pulumi.provider.experimental.analyzer import Analyzer, ComponentDefinition
from pulumi.provider.experimental.component import ComponentProvider

KUBERNETES = "kubernetes"
SCHEMA_VERSION = "4.25.0"
"""The Kubernetes package whose schema the references name: the one provider every machine here can
build (the Go module proxy serves pulumi-kubernetes provider/v4 at 4.25.0 only; localcluster/pulumi
builds it), so that the CLI's schema loader finds exactly that version. Its ObjectMeta, DeploymentSpec,
JobSpec, Deployment, PodDisruptionBudget and Job are those of the SDK the components use."""


def kubernetes_version() -> str:
    """The pulumi-kubernetes version the components use (its distribution's metadata, no import)."""
    return importlib.metadata.version("pulumi-kubernetes")


class PackageProvider(ComponentProvider):
    """``ComponentProvider`` whose served schema is :func:`typed`; construction is the SDK's own."""

    def __init__(
        self, components: Sequence[type[Any]], name: str, version: str, shared_args: Sequence[type[Any]]
    ) -> None:
        super().__init__(list(components), name, None, version)
        inferred = json.loads(self.schema or "{}")
        self.schema = json.dumps(
            typed(inferred, components, self.analyzer, self._component_defs, shared_args)
        )


def typed(
    schema: dict[str, Any],
    components: Sequence[type[Any]],
    analyzer: Analyzer,
    definitions: dict[str, ComponentDefinition],
    shared_args: Sequence[type[Any]],
) -> dict[str, Any]:
    """``schema`` with each component's metadata/spec and children typed as Kubernetes' own, every property described."""
    for component in components:
        resource = schema["resources"][f"{schema['name']}:index:{component.__name__}"]
        definition = definitions[component.__name__]
        words = {"kind": component._kind.rsplit(":", 1)[-1], "token": component._kind, **component._words}
        args = inspect.get_annotations(component.__init__)["args"]
        _describe(
            resource["inputProperties"], definition.inputs_mapping, [args, *shared_args], analyzer, words
        )
        _describe(
            resource["properties"], definition.outputs_mapping, list(component.__mro__), analyzer, words
        )
        inputs = resource["inputProperties"]
        inputs["metadata"] = _typed(inputs["metadata"], "types", "kubernetes:meta/v1:ObjectMeta")
        inputs["spec"] = _typed(inputs["spec"], "types", f"{component._kind}Spec")
        for py_name, token in component._children.items():  # outputs_mapping: schema name -> Python name
            output = next(schema for schema, name in definition.outputs_mapping.items() if name == py_name)
            resource["properties"][output] = _typed(resource["properties"][output], "resources", token)
    schema["dependencies"] = [{"name": KUBERNETES, "version": kubernetes_version()}]
    return schema


def _describe(
    properties: dict[str, Any],
    mapping: dict[str, str],
    sources: list[type[Any]],
    analyzer: Analyzer,
    words: dict[str, str],
) -> None:
    """Give every property its description, from the first class in ``sources`` that declares one, in ``words``."""
    for name, prop in properties.items():
        found = (analyzer.get_docstring(source, mapping[name]) for source in sources)
        text = prop.get("description") or next((doc for doc in found if doc), None)
        if not text:
            raise ValueError(f"{name}: no description in {[s.__name__ for s in sources]}")
        prop["description"] = text.format(**words)


def _typed(prop: dict[str, Any], section: str, token: str) -> dict[str, Any]:
    """``prop`` (an open object or ``Any``) as a reference to the Kubernetes package's ``section``
    (``types``/``resources``) entry ``token``, its description kept."""
    ref = f"/{KUBERNETES}/v{SCHEMA_VERSION}/schema.json#/{section}/{quote(token, safe=':')}"
    return {"description": prop["description"], "$ref": ref}
