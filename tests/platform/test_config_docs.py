"""The configuration reference in docs/configuration.md is the one the config models generate."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, Any, get_args, get_origin

from pydantic import BaseModel

from infra.platform.config import PlatformConfig
from infra.platform.config_docs import CONFIGURATION_DOC, generated_block, reference
from infra.platform.team_config import TeamConfig

INTERNAL = {"region", "secret_keys"}  # from aws:region and `pulumi config set --secret`; load() refuses them


def test_documented_reference_matches_the_models() -> None:
    assert generated_block(CONFIGURATION_DOC.read_text()) == reference(), (
        "docs/configuration.md is stale: run python -m infra.platform.config_docs --write"
    )


def _keys(model: type[BaseModel], prefix: str = "") -> Iterator[str]:
    """Every stack-file key a config model accepts, nested sections and gpuPools.<pool>.* included."""
    for name, field in model.model_fields.items():
        if name in INTERNAL:
            continue
        key = f"{prefix}{field.alias or name}"
        yield key
        for model_in, under in _models(field.annotation):
            yield from _keys(model_in, f"{key}{under}.")


def _models(annotation: Any, under: str = "") -> Iterator[tuple[type[BaseModel], str]]:
    """The config models inside a field's type, and what their keys hang under: "" or ".<pool>"."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, under
        return
    args = get_args(annotation)
    if get_origin(annotation) is Annotated:
        yield from _models(args[0], under)
    elif get_origin(annotation) is dict:  # teams.<team>, else a pool's name (gpuPools, quotas)
        yield from _models(args[1], f"{under}.<{'team' if args[1] is TeamConfig else 'pool'}>")
    else:  # a union (Optional), a tuple or list: each of its types
        for arg in args:
            yield from _models(arg, under)


def test_every_key_load_accepts_is_documented() -> None:
    """Walked from the models, not from the schema the reference is generated from."""
    documented = {line.split("`")[1] for line in reference().splitlines()[2:]}
    accepted = set(_keys(PlatformConfig))
    assert {"gpuPools.<pool>.sharing.timeSlicing.replicas", "observability.alarms.snsTopicArn"} <= accepted
    assert accepted - documented == set()
