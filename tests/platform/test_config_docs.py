"""The configuration reference in docs/configuration.md is the one the config models generate."""

from __future__ import annotations

from infra.platform.config import json_schema
from infra.platform.config_docs import CONFIGURATION_DOC, readme_block, reference


def test_documented_reference_matches_the_models() -> None:
    assert readme_block(CONFIGURATION_DOC.read_text()) == reference(), (
        "docs/configuration.md is stale: run python -m infra.platform.config_docs --write"
    )


def test_every_stack_setting_is_documented() -> None:
    documented = {line.split("`")[1] for line in reference().splitlines()[2:]}
    assert set(json_schema()["properties"]) <= documented
    assert {"gpuPools.<pool>.sharing.timeSlicing.replicas", "observability.alarms.snsTopicArn"} <= documented
