"""The component package as the Pulumi CLI runs it, and Construct calls as the engine makes them."""

from __future__ import annotations

import json
import runpy
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from pulumi.provider.experimental import host
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.provider import ConstructResult
from pulumi.provider.server import ProviderServicer
from pulumi.runtime import proto, rpc
from pulumi.runtime.sync_await import _sync_await

PROVIDER_DIR = Path(__file__).resolve().parents[2] / "provider"


@pytest.fixture(scope="session")
def provider() -> Iterator[ComponentProvider]:
    """The provider ``provider/__main__.py`` builds, captured where the host would start serving it."""
    captured: list[ComponentProvider] = []
    saved_main, saved_hosting = host.main, host.is_hosting
    sys.path.insert(0, str(PROVIDER_DIR))
    host.main = lambda served, args: captured.append(served)
    host.is_hosting = False
    try:
        runpy.run_path(str(PROVIDER_DIR / "__main__.py"), run_name="__main__")
    finally:
        host.main, host.is_hosting = saved_main, saved_hosting
        sys.path.remove(str(PROVIDER_DIR))
    assert len(captured) == 1, "provider/__main__.py did not call component_provider_host"
    yield captured[0]


@pytest.fixture(scope="session")
def schema(provider: ComponentProvider) -> dict[str, Any]:
    """The package schema exactly as ``pulumi package add`` / ``pulumi package get-schema`` receive it."""
    assert provider.schema is not None
    return json.loads(provider.schema)


def construct(
    provider: ComponentProvider,
    type_token: str,
    name: str,
    inputs: Mapping[str, Any],
    dependencies: Mapping[str, list[str]] | None = None,
) -> ConstructResult:
    """Construct a component the way the engine asks the provider to, inside a running program.

    ``inputs`` go through the wire (``serialize_properties`` -> protobuf Struct) and
    back through the SDK's own provider server, so numbers arrive as floats and every
    input with ``dependencies`` (URNs it depends on, as the engine tracks for, e.g.,
    a StackReference output) arrives wrapped in an Output, exactly as in ``pulumi up``.
    """

    async def engine_inputs() -> dict[str, Any]:
        struct = await rpc.serialize_properties(dict(inputs), {})
        deps = {
            key: proto.ConstructRequest.PropertyDependencies(urns=urns)
            for key, urns in (dependencies or {}).items()
        }
        return await ProviderServicer._construct_inputs(struct, deps)

    return provider.construct(name, type_token, _sync_await(engine_inputs()), None)


def resolve(value: Any) -> Any:
    """The value of an Output (or a plain value) inside a running program."""
    import pulumi

    return _sync_await(pulumi.Output.from_input(value).future())
