"""Kubernetes objects as a cluster receives them, and their check against the API schema.

Turns a recorded registration of a ``kubernetes:`` resource into the manifest the
provider would send (``kubectl apply`` form), and validates it with the JSON
schemas of a given Kubernetes version (``kubernetes-validate``), strict, so an
unknown field is an error as it is for ``kubectl apply --validate=strict``.

``kubernetes_validate.validate`` caches nothing: every call parses the version's
1.5 MB ``_definitions.json`` (~40 ms). Here they are parsed once per version and a
validator is built once per kind; the library's own ``validate`` still answers what
this does not cover (an unknown version or kind), so its errors are the same.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


class ManifestError(ValueError):
    """A manifest the Kubernetes API would reject."""


def is_manifest_type(typ: str) -> bool:
    """Kubernetes API objects (not providers, Helm releases or other packages)."""
    return (
        typ.startswith("kubernetes:") and typ != HELM_RELEASE_TYPE and not typ.startswith("pulumi:providers")
    )


def manifest_of(typ: str, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The object as applied: Pulumi adds metadata.name (auto-named from ``name``) if absent."""
    manifest = {"apiVersion": inputs.get("apiVersion"), "kind": inputs.get("kind")}
    metadata = dict(inputs.get("metadata") or {})
    metadata.setdefault("name", name)
    manifest["metadata"] = metadata
    manifest.update({k: v for k, v in inputs.items() if k not in ("apiVersion", "kind", "metadata")})
    return manifest


@functools.cache
def _schema_dir(kubernetes_version: str) -> str | None:
    """The strict schema directory ``kubernetes_validate.validate`` would pick, or None if it would refuse."""
    from kubernetes_validate.utils import all_versions, latest_version, major_minor

    wanted = major_minor(kubernetes_version.removeprefix("v"))
    if wanted > latest_version():  # the library's comparison, string order included
        return None
    candidates = [v for v in all_versions() if major_minor(v) <= wanted]
    return f"v{candidates[-1]}-local-strict" if candidates else None


@functools.cache
def _registry(schema_dir: str) -> Any:
    """The version's shared definitions, parsed once: most of the cost of a check."""
    from kubernetes_validate.utils import schema_contents
    from referencing import Registry, Resource

    definitions = schema_contents(f"kubernetes-json-schema/{schema_dir}/_definitions.json", schema_dir)
    return Resource.from_contents(definitions) @ Registry()


@functools.cache
def _validator(schema_dir: str, kind: str, api_version: str) -> Any:
    """A validator for one kind (None if the version has no schema for it), built on first use only."""
    import importlib_resources
    import jsonschema
    from kubernetes_validate.utils import schema_contents
    from referencing import Resource

    # The library's file naming: rbac.authorization.k8s.io/v1 -> rbac-v1.
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    filename = f"kubernetes-json-schema/{schema_dir}/{kind.lower()}-{group_version}.json"
    if not importlib_resources.files("kubernetes_validate").joinpath(filename).is_file():
        return None
    schema = schema_contents(filename, schema_dir)
    registry = Resource.from_contents(schema) @ _registry(schema_dir)
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def validate_manifest(manifest: Mapping[str, Any], kubernetes_version: str) -> None:
    """Raise :class:`ManifestError` naming the object, the field path and the schema's complaint."""
    import jsonschema
    import kubernetes_validate
    from kubernetes_validate.utils import VersionNotSupportedError

    ref = f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"
    schema_dir = _schema_dir(kubernetes_version)
    kind, api_version = manifest.get("kind"), manifest.get("apiVersion")
    validator = (
        _validator(schema_dir, kind, api_version)
        if schema_dir and isinstance(kind, str) and isinstance(api_version, str)
        else None
    )
    try:
        if validator is not None:
            validator.validate(dict(manifest))
        else:  # an unknown version or kind: the library says why, in its own words
            kubernetes_validate.validate(dict(manifest), kubernetes_version, strict=True)
    except jsonschema.ValidationError as error:  # kubernetes_validate.ValidationError is one too
        path = ".".join(str(p) for p in error.path) or "(top level)"
        raise ManifestError(
            f"{ref} is not valid for Kubernetes {kubernetes_version}: {path}: {error.message}"
        ) from None
    except (kubernetes_validate.SchemaNotFoundError, VersionNotSupportedError) as error:
        raise ManifestError(
            f"{ref}: no Kubernetes {kubernetes_version} schema to check it against: {error}"
        ) from None
