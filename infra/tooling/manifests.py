"""Kubernetes objects as a cluster receives them, and their check against the API schema.

Turns a recorded registration of a ``kubernetes:`` resource into the manifest the
provider would send (``kubectl apply`` form), and validates it with the JSON
schemas of a given Kubernetes version (``kubernetes-validate``), strict, so an
unknown field is an error as it is for ``kubectl apply --validate=strict``.
"""

from __future__ import annotations

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


def validate_manifest(manifest: Mapping[str, Any], kubernetes_version: str) -> None:
    """Raise :class:`ManifestError` naming the object, the field path and the schema's complaint."""
    import kubernetes_validate
    from kubernetes_validate.utils import VersionNotSupportedError

    ref = f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"
    try:
        kubernetes_validate.validate(dict(manifest), kubernetes_version, strict=True)
    except kubernetes_validate.ValidationError as error:
        path = ".".join(str(p) for p in error.path) or "(top level)"
        raise ManifestError(
            f"{ref} is not valid for Kubernetes {kubernetes_version}: {path}: {error.message}"
        ) from None
    except (kubernetes_validate.SchemaNotFoundError, VersionNotSupportedError) as error:
        raise ManifestError(
            f"{ref}: no Kubernetes {kubernetes_version} schema to check it against: {error}"
        ) from None
