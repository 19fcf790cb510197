"""The YAML consumers' committed ``dev`` stacks: what the real run on the local cluster cannot show.

tests/cluster/test_pulumi_consumers.py runs stacks/inference-yaml and stacks/training-yaml
through the real CLI (the YAML host type-checks every input against the package schema,
the component constructs, the API server and scheduler judge the objects) on their
``local`` stacks. Their ``dev`` stacks reference a platform stack that exists only in
AWS, so the only thing left to check here is that ``Pulumi.dev.yaml`` sets exactly what
the program declares, with the declared types, as the YAML host will read it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.provider.conftest import ROOT

PROJECTS = [
    ROOT / "stacks" / "inference-yaml",
    ROOT / "stacks" / "training-yaml",
    ROOT / "stacks" / "team-job-yaml",
]
CONFIG_TYPES = {"string": str, "integer": int, "boolean": bool}


def _dev_config(project: Path) -> dict[str, Any]:
    """The dev stack's config by the names the program uses, defaults filled in."""
    program = yaml.safe_load((project / "Pulumi.yaml").read_text())
    declared = program["config"]
    values = {name: decl.get("default") for name, decl in declared.items()}
    for key, value in yaml.safe_load((project / "Pulumi.dev.yaml").read_text())["config"].items():
        namespace, _, name = key.partition(":")
        assert namespace == program["name"] and name in declared, f"{key} is not declared in Pulumi.yaml"
        kind = CONFIG_TYPES[declared[name]["type"]]
        # Pulumi YAML reads a config value by its declared type; "2" is an integer too.
        values[name] = kind(value) if kind is int and isinstance(value, str) else value
        assert isinstance(values[name], kind), f"{key}: {value!r} is not a {kind.__name__}"
    assert None not in values.values(), f"config without a value: {values}"
    return values


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: p.name)
def test_the_dev_stack_sets_what_the_program_declares(project: Path) -> None:
    config = _dev_config(project)
    assert config["platformStack"] == "organization/eks-gpu-platform/dev"
    assert config["image"].startswith("nvcr.io/nvidia/")  # NGC's images are multi-arch (arm64 included)


def test_the_inference_dev_stack_runs_two_replicas() -> None:
    # Two GPU pods, so the component adds its PodDisruptionBudget there (tests/provider/test_construct.py);
    # the local stack runs one (one inference node is mirrored).
    assert _dev_config(PROJECTS[0])["replicas"] == 2
