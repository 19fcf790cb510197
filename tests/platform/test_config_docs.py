"""The README's configuration reference is the one the config models generate."""

from __future__ import annotations

from infra.platform.config import PlatformConfig
from infra.platform.config_docs import README, readme_block, reference


def test_readme_reference_matches_the_models() -> None:
    assert readme_block(README.read_text()) == reference(), (
        "README.md's configuration reference is stale: run python -m infra.platform.config_docs --write"
    )


def test_every_stack_setting_is_documented() -> None:
    documented = {line.split("`")[1] for line in reference().splitlines()[2:]}
    for name, field in PlatformConfig.model_fields.items():
        if name not in PlatformConfig._internal:
            assert field.alias in documented
