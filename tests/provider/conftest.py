"""The component package as the Pulumi CLI runs it, and Construct calls as the engine makes them."""

from __future__ import annotations

import http.server
import json
import logging
import runpy
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pulumi.provider
import pulumi.provider.server
import pytest
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.provider import ConstructResult
from pulumi.provider.server import ProviderServicer
from pulumi.runtime import proto, rpc
from pulumi.runtime.sync_await import _sync_await

from infra.tooling.offline import Run, run_program

ROOT = Path(__file__).resolve().parents[2]
PROVIDER_DIR = ROOT / "provider"
SERVED: dict[str, Any] = {}
"""What ``provider/__main__.py`` serves: ``servicer``, the class its server answers Construct with."""


@pytest.fixture(scope="session")
def provider() -> Iterator[ComponentProvider]:
    """The provider ``provider/__main__.py`` builds, captured where the host would start serving it
    (with the servicer it would serve it with, in :data:`SERVED`)."""
    captured: list[ComponentProvider] = []
    saved_main, saved_servicer = pulumi.provider.main, pulumi.provider.server.ProviderServicer
    sys.path.insert(0, str(PROVIDER_DIR))
    pulumi.provider.main = lambda served, args: captured.append(served)
    try:
        runpy.run_path(str(PROVIDER_DIR / "__main__.py"), run_name="__main__")
        SERVED["servicer"] = pulumi.provider.server.ProviderServicer
    finally:
        pulumi.provider.main, pulumi.provider.server.ProviderServicer = saved_main, saved_servicer
        sys.path.remove(str(PROVIDER_DIR))
    assert len(captured) == 1, "provider/__main__.py did not serve a provider with pulumi.provider.main"
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
    request: proto.ConstructRequest | None = None,
) -> ConstructResult:
    """Construct a component the way the engine asks the provider to, inside a running program.

    ``inputs`` go through the wire (``serialize_properties`` -> protobuf Struct) and
    back through the SDK's own provider server, so numbers arrive as floats and every
    input with ``dependencies`` (URNs it depends on, as the engine tracks for, e.g.,
    a StackReference output) arrives wrapped in an Output, exactly as in ``pulumi up``.
    The resource options come from ``request`` as the package's server reads them (none without).
    """

    async def engine_inputs() -> dict[str, Any]:
        struct = await rpc.serialize_properties(dict(inputs), {})
        deps = {
            key: proto.ConstructRequest.PropertyDependencies(urns=urns)
            for key, urns in (dependencies or {}).items()
        }
        return await ProviderServicer._construct_inputs(struct, deps)

    opts = SERVED["servicer"]._construct_options(request) if request is not None else None
    return provider.construct(name, type_token, _sync_await(engine_inputs()), opts)


def resolve(value: Any) -> Any:
    """The value of an Output (or a plain value) inside a running program."""
    import pulumi

    return _sync_await(pulumi.Output.from_input(value).future())


def declare(
    provider: ComponentProvider,
    type_token: str,
    name: str,
    inputs: Mapping[str, Any],
    dependencies: Mapping[str, list[str]] | None = None,
    request: proto.ConstructRequest | None = None,
) -> tuple[Run, dict[str, Any]]:
    """Run one Construct on the mock engine; return what it registered and the component's state.

    A resource in the state (a child the component outputs) is given as its URN, the resource
    reference the engine hands the consumer.
    """
    import pulumi

    state: dict[str, Any] = {}

    def program() -> None:
        result = construct(provider, type_token, name, inputs, dependencies, request)
        for key, value in result.state.items():
            state[key] = resolve(value.urn if isinstance(value, pulumi.Resource) else value)

    return run_program(program), state


def dropped(sent: Any, received: Any, path: str = "") -> list[str]:
    """Where something in ``sent`` is missing from, or changed in, ``received`` (which may hold more).

    The component adds the contract (nodeSelector entries, tolerations after the
    user's, GPU limits, securityContext defaults) but must keep every value the user
    passed; numbers compare by value, as the engine turned them into floats.
    """
    if isinstance(sent, Mapping):
        if not isinstance(received, Mapping):
            return [f"{path or '.'}: sent an object, got {received!r}"]
        return [
            problem
            for key, value in sent.items()
            for problem in (
                dropped(value, received[key], f"{path}.{key}")
                if key in received
                else [f"{path}.{key}: dropped"]
            )
        ]
    if isinstance(sent, list):
        if not isinstance(received, list) or len(received) < len(sent):
            return [f"{path}: sent {sent!r}, got {received!r}"]
        return [
            problem for i, item in enumerate(sent) for problem in dropped(item, received[i], f"{path}[{i}]")
        ]
    return [] if sent == received else [f"{path}: sent {sent!r}, got {received!r}"]


@pytest.fixture
def amd64_only_image(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """An image whose index lists linux/amd64 only, on a loopback registry (nothing else is contacted).

    ``EKS_GPU_IMAGE_CHECK`` set explicitly is what lets the check ask a loopback
    registry under the mock engine (``infra.workloads.images``); ``warn`` still
    refuses an image without linux/arm64.
    """
    from infra.workloads import images, oci

    index = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": oci.OCI_INDEX,
            "manifests": [
                {
                    "mediaType": oci.OCI_MANIFEST,
                    "digest": "sha256:" + "0" * 64,
                    "size": 1,
                    "platform": {"architecture": "amd64", "os": "linux"},
                }
            ],
        }
    ).encode()

    class Registry(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == "/v2/ml/amd64-only/manifests/v1"
            self.send_response(200 if found else 404)
            self.send_header("Content-Type", oci.OCI_INDEX)
            self.send_header("Content-Length", str(len(index) if found else 0))
            self.end_headers()
            if found:
                self.wfile.write(index)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Registry)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv(images.ENV_VAR, "warn")
    images.reset_default_checker()
    try:
        yield f"127.0.0.1:{server.server_address[1]}/ml/amd64-only:v1"
    finally:
        images.reset_default_checker()
        server.shutdown()
        server.server_close()


# Keep asyncio from formatting tracebacks of futures nobody awaited, for the whole run.
# A Pulumi program that failed inside an ``apply`` (several tests do, on purpose)
# leaves futures whose exception was never retrieved; when the garbage collector
# finalizes one, asyncio logs it with its traceback, and Python 3.11's traceback
# formatting calls ``ast.parse``. If that collection happens while pytest is itself
# inside ``ast.parse`` (rewriting a lazily imported module, even at session end),
# the AST recursion counter, which lives in per-interpreter state, is reset under
# it and the outer parse fails with "AST constructor recursion depth mismatch".
# The tests assert the failures themselves; the log line adds nothing.
logging.getLogger("asyncio").setLevel(logging.CRITICAL)
