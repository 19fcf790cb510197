"""The Deployment and Job spec fields the package passes on are those every supported API server knows.

They come from pulumi-kubernetes' Args classes, which can run ahead of the clusters (``scheduling``
on a Job is alpha in Kubernetes 1.37); kubernetes-validate's strict schemas say what 1.35 and 1.36 know.
"""

from __future__ import annotations

import json
from pathlib import Path

import kubernetes_validate
import pytest

from infra.platform.config import SUPPORTED_KUBERNETES_VERSIONS
from infra.workloads.deployment import deployment_spec_fields
from infra.workloads.job import job_spec_fields, place_job_spec

SCHEMAS = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"


def _properties(version: str, kind: str) -> frozenset[str]:
    schema = json.loads((SCHEMAS / f"v{version}.0-local-strict" / f"{kind}.json").read_text())
    return frozenset(schema["properties"])


@pytest.mark.parametrize("version", SUPPORTED_KUBERNETES_VERSIONS)
def test_the_fields_passed_on_are_the_api_servers(version: str) -> None:
    assert _properties(version, "jobspec-batch-v1") == job_spec_fields()
    assert _properties(version, "deploymentspec-apps-v1") == deployment_spec_fields()


def test_a_job_field_no_supported_cluster_knows_is_refused_before_anything_is_declared() -> None:
    template = {"metadata": {"labels": {"app": "t"}}, "spec": {"containers": [{"name": "t", "image": "t:1"}]}}
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['scheduling'\]"):
        place_job_spec({"template": template, "scheduling": {}}, None)
