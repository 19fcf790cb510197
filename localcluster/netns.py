"""Run a program in a network namespace of its own, reaching one loopback port of the host.

Karpenter binds its metrics and health ports on every interface (``:<port>``, sigs.k8s.io/karpenter
``pkg/operator/operator.go``); inside a fresh namespace (``unshare --net``, root) every interface is
its own loopback, so nothing it opens is reachable from outside. Its API server connection goes
through a Unix socket: ``127.0.0.1:<port>`` in the namespace -> the socket -> ``127.0.0.1:<port>``
on the host, so the kubeconfig (and its certificate for 127.0.0.1) is used unchanged.

    python -m localcluster.netns SOCKET PORT -- PROGRAM [ARG ...]    # run inside ``unshare --net``
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

HOST = "127.0.0.1"


def _pipe(a: socket.socket, b: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := a.recv(65536):
            b.sendall(data)
    for s in (a, b):
        with contextlib.suppress(OSError):
            s.shutdown(socket.SHUT_RDWR)


def _serve(listener: socket.socket, connect: Callable[[], socket.socket]) -> None:
    """Each accepted connection joined to a new one from ``connect``, both ways, until either closes."""
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return  # closed: stop
        upstream = connect()
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def bridge(path: Path, port: int) -> socket.socket:
    """On the host: a Unix socket at ``path`` whose connections go to ``127.0.0.1:port``; close it to stop."""
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(64)
    threading.Thread(
        target=_serve, args=(listener, lambda: socket.create_connection((HOST, port))), daemon=True
    ).start()
    return listener


def command(path: Path, port: int, argv: list[str]) -> list[str]:
    """The command line that runs ``argv`` in a new network namespace joined to the host's ``port``."""
    return ["unshare", "--net", sys.executable, "-m", "localcluster.netns", str(path), str(port), "--", *argv]


def main(args: list[str]) -> int:
    path, port, argv = Path(args[0]), int(args[1]), args[3:]
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    listener = socket.create_server((HOST, port))

    def connect() -> socket.socket:
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.connect(str(path))
        return unix

    threading.Thread(target=_serve, args=(listener, connect), daemon=True).start()
    child = subprocess.Popen(argv)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, _: child.send_signal(number))
    return child.wait()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main(sys.argv[1:]))
