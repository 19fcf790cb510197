"""Kubernetes objects as a cluster receives them, and their check against the API schema."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

HELM_RELEASE_TYPE = "kubernetes:helm.sh/v3:Release"


class ManifestError(ValueError):
    """A manifest the Kubernetes API would reject."""


def is_manifest_type(typ: str) -> bool:
    """Kubernetes API objects (not providers, Helm releases or other packages)."""
    return typ.startswith("kubernetes:") and typ != HELM_RELEASE_TYPE


def yaml_documents(text: str) -> list[Any]:
    """Every document of a YAML stream that is not empty (a chart's render, a CRD file). Parsed by
    libyaml when PyYAML has it (ten times faster on the charts and CRDs of megabytes the previews and
    tests read): the same types as ``yaml.safe_load_all``, but libyaml's scanner, which also accepts
    tabs as separators, and its error messages."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [d for d in yaml.load_all(text, Loader=loader) if d]


def manifest_of(typ: str, name: str, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The object as applied: Pulumi adds metadata.name (auto-named from ``name``) if absent."""
    metadata = dict(inputs.get("metadata") or {})
    metadata.setdefault("name", name)
    rest = {k: v for k, v in inputs.items() if k not in ("apiVersion", "kind", "metadata")}
    return {"apiVersion": inputs.get("apiVersion"), "kind": inputs.get("kind"), "metadata": metadata, **rest}


@functools.cache
def _kubernetes_validate() -> ModuleType:
    """The library (a dev dependency, imported on first use), set to keep the schemas it reads."""
    import kubernetes_validate.utils

    kubernetes_validate.utils.schema_contents = functools.cache(kubernetes_validate.utils.schema_contents)
    return kubernetes_validate


# Custom resources the platform declares, checked against the CRDs of the pinned Karpenter
# (localcluster/karpenter.py) and Kueue: kubernetes-validate knows only Kubernetes' own kinds.
CRD_GROUPS = ("karpenter.sh", "karpenter.k8s.aws", "kueue.x-k8s.io")


# The AWS provider's module at the pinned Karpenter version: its pkg/apis/crds holds every Karpenter
# CRD the platform uses (NodePool, NodeOverlay, EC2NodeClass). Package data, as chart-pins.
KARPENTER_PINS = Path(__file__).resolve().parent / "karpenter-pins"
KARPENTER_AWS = "github.com/aws/karpenter-provider-aws"
# Kueue's plain CRDs (its chart's are templates) at the version infra/platform/kueue.py installs.
KUEUE_PINS = Path(__file__).resolve().parent / "kueue-pins"
KUEUE = "sigs.k8s.io/kueue"


@functools.cache
def _crd_schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the openAPIV3Schema of the pinned Karpenter and Kueue CRDs."""
    from infra.tooling.gomod import module_dir

    paths = [
        *sorted((module_dir(KARPENTER_PINS, KARPENTER_AWS) / "pkg" / "apis" / "crds").glob("*.yaml")),
        *sorted((module_dir(KUEUE_PINS, KUEUE) / "config" / "components" / "crd" / "bases").glob("*.yaml")),
    ]
    return {
        (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"]): version["schema"][
            "openAPIV3Schema"
        ]
        for path in paths
        for crd in yaml_documents(path.read_text())
        for version in crd["spec"]["versions"]
    }


def _validate_custom(manifest: Mapping[str, Any], ref: str) -> None:
    import jsonschema

    schema = _crd_schemas().get((str(manifest.get("apiVersion")), str(manifest.get("kind"))))
    if schema is None:
        raise ManifestError(
            f"{ref}: no CRD of the pinned Karpenter or Kueue serves {manifest.get('apiVersion')}"
        )
    try:
        jsonschema.validate(dict(manifest), schema)
    except jsonschema.ValidationError as error:
        path = ".".join(str(p) for p in error.path) or "(top level)"
        raise ManifestError(f"{ref} is not valid for its CRD: {path}: {error.message}") from None


def validate_manifest(manifest: Mapping[str, Any], kubernetes_version: str) -> None:
    """Raise :class:`ManifestError` naming the object, the field path and the schema's complaint."""
    import jsonschema

    ref = f"{manifest.get('kind')}/{(manifest.get('metadata') or {}).get('name')}"
    if str(manifest.get("apiVersion", "")).split("/")[0] in CRD_GROUPS:
        _validate_custom(manifest, ref)
        return
    library = _kubernetes_validate()
    try:
        library.validate(dict(manifest), kubernetes_version, strict=True)
    except jsonschema.ValidationError as error:  # kubernetes_validate.ValidationError is one too
        path = ".".join(str(p) for p in error.path) or "(top level)"
        raise ManifestError(
            f"{ref} is not valid for Kubernetes {kubernetes_version}: {path}: {error.message}"
        ) from None
    except (library.SchemaNotFoundError, library.utils.VersionNotSupportedError) as error:
        raise ManifestError(
            f"{ref}: no Kubernetes {kubernetes_version} schema to check it against: {error.message}"
        ) from None
