"""Fixtures for the image-architecture tests: loopback-only network, the loopback registries, fakes.

``loopback_only`` is not autouse: a module that talks to registries opts in with
``pytestmark = pytest.mark.usefixtures("loopback_only")``.
"""

from __future__ import annotations

import http.server
import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from infra.workloads import images
from infra.workloads.images import ImageChecker
from infra.workloads.oci import RegistryClient, is_loopback
from tests.workloads.registry import REGISTRY_BINARY, Registries, registry_available, start_registries


def _host_of(address: Any) -> str:
    return str(address[0] if isinstance(address, tuple) else address)


@pytest.fixture
def loopback_only(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Record every name lookup and connection; refuse (and fail on) anything not on loopback."""
    attempts: list[str] = []
    real_getaddrinfo, real_create_connection = socket.getaddrinfo, socket.create_connection

    def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not is_loopback(str(host)):
            attempts.append(str(host))
            raise socket.gaierror(f"test: {host} is not loopback")
        return real_getaddrinfo(host, *args, **kwargs)

    def guarded_create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_loopback(_host_of(address)):
            attempts.append(_host_of(address))
            raise OSError(f"test: {address} is not loopback")
        return real_create_connection(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", guarded_getaddrinfo)
    monkeypatch.setattr(socket, "create_connection", guarded_create_connection)
    monkeypatch.delenv(images.ENV_VAR, raising=False)
    images.reset_default_checker()
    yield attempts
    images.reset_default_checker()
    assert attempts == [], f"tried to reach non-loopback hosts: {attempts}"


@pytest.fixture(scope="session")
def registries() -> Iterator[Registries]:
    if not registry_available():
        pytest.skip(f"{REGISTRY_BINARY} is missing: apt-get install docker-registry (bin/setup installs it)")
    started = start_registries()
    yield started
    started.stop()


@pytest.fixture
def checker() -> ImageChecker:
    """A fresh checker that may ask loopback registries only."""
    return ImageChecker(RegistryClient(timeout=5, deadline=10), online=False)


class _Fake(http.server.ThreadingHTTPServer):
    """A loopback HTTP server answering every GET from ``routes`` (status, headers, body)."""

    def __init__(self, routes: dict[str, tuple[int, dict[str, str], bytes]], host: str = "127.0.0.1") -> None:
        self.routes, self.seen = routes, []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                fake.seen.append((self.path, dict(self.headers)))
                status, headers, body = fake.routes.get(self.path.split("?")[0], (404, {}, b""))
                self.send_response(status)
                for key, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        super().__init__((host, 0), Handler)
        threading.Thread(target=self.serve_forever, daemon=True).start()

    @property
    def host(self) -> str:
        return f"{self.server_address[0]}:{self.server_address[1]}"

    def close(self) -> None:
        self.shutdown()
        self.server_close()


@pytest.fixture
def fake() -> Iterator[Any]:
    servers: list[_Fake] = []

    def make(routes: dict[str, tuple[int, dict[str, str], bytes]], host: str = "127.0.0.1") -> _Fake:
        servers.append(_Fake(routes, host))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


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
