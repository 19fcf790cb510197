"""moto's server, answering EC2's instance-type catalogue from memory after the first request.

moto serializes DescribeInstanceTypes' 1,395 types in about 4 s of CPU on every call (it does not
page), and the Cluster Autoscaler lists them all at each start (``aws_util.go``
``GenerateEC2InstanceTypes``), dozens of times a suite: most of moto's CPU. The catalogue is moto's
constant table, which ``/moto-api/reset`` does not change, so a request it has answered once gets
the same bytes again. Every other request reaches moto as ``python -m moto.server`` would pass it.

Run as ``python -m localcluster.moto_server HOST PORT`` with the checkout on ``PYTHONPATH``.
"""

from __future__ import annotations

import io
import os
import re
import signal
import sys
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
from werkzeug.serving import run_simple

CONSTANT_ACTIONS = {"DescribeInstanceTypes"}
"""EC2 Query actions whose answer depends on the request and the region only."""
_REGION = re.compile(r"Credential=[^/]+/\d+/([^/]+)/")


class ConstantAnswers:
    """WSGI middleware: the first 200 answer to a :data:`CONSTANT_ACTIONS` request, kept by region and body."""

    def __init__(self, app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        self.kept: dict[tuple[str, bytes], tuple[str, list[tuple[str, str]], bytes]] = {}

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        key = self._key(environ)
        if key is None:
            return self.app(environ, start_response)
        if key not in self.kept:
            answer = self._answer(environ)
            if not answer[0].startswith("200"):
                start_response(answer[0], answer[1])
                return [answer[2]]
            self.kept[key] = answer
        status, headers, body = self.kept[key]
        start_response(status, headers)
        return [body]

    @staticmethod
    def _key(environ: dict[str, Any]) -> tuple[str, bytes] | None:
        length = environ.get("CONTENT_LENGTH")
        form = "x-www-form-urlencoded" in environ.get("CONTENT_TYPE", "")  # EC2's Query protocol
        if environ.get("REQUEST_METHOD") != "POST" or not length or not form:
            return None
        body = environ["wsgi.input"].read(int(length))
        environ["wsgi.input"] = io.BytesIO(body)  # moto reads it again
        region = _REGION.search(environ.get("HTTP_AUTHORIZATION", ""))
        action = parse_qs(body.decode("utf-8", "replace")).get("Action", [""])[0]
        return (region.group(1), body) if region and action in CONSTANT_ACTIONS else None

    def _answer(self, environ: dict[str, Any]) -> tuple[str, list[tuple[str, str]], bytes]:
        started: list[Any] = []
        chunks = self.app(environ, lambda status, headers, exc_info=None: started.extend((status, headers)))
        try:
            body = b"".join(chunks)
        finally:
            getattr(chunks, "close", lambda: None)()
        return started[0], list(started[1]), body


def main(host: str, port: int) -> None:
    os.environ.setdefault("MOTO_PORT", str(port))  # as moto.server's main sets it, and its exit on
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # SIGTERM (what's printed is flushed)
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(host, port, ConstantAnswers(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
