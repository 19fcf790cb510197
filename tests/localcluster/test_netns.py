"""A program in its own network namespace reaches the host's port through the bridge, and what it binds on
every interface is not reachable from the host (how Karpenter runs under test: localcluster/netns.py)."""

from __future__ import annotations

import http.server
import socket
import subprocess
import sys
import threading
from pathlib import Path

from localcluster import netns

PROBE = """
import socket, sys, urllib.request
print(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/").status)
wide = socket.create_server(("0.0.0.0", int(sys.argv[2])))  # as Karpenter binds :<port>
print("bound", flush=True)
sys.stdin.read()  # listening until the test has looked from outside
"""


def test_the_namespace_reaches_the_bridged_port_and_exposes_nothing(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.SimpleHTTPRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        wide_port = probe.getsockname()[1]
    bridge = netns.bridge(tmp_path / "api.sock", port)
    try:
        argv = netns.command(
            tmp_path / "api.sock", port, [sys.executable, "-c", PROBE, str(port), str(wide_port)]
        )
        root = Path(__file__).resolve().parents[2]
        inside = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=root)
        assert [inside.stdout.readline().strip() for _ in range(2)] == ["200", "bound"]
        with socket.socket() as outside:  # its 0.0.0.0 is the namespace's, not the host's
            assert outside.connect_ex(("127.0.0.1", wide_port)) != 0
        inside.communicate("", timeout=30)
    finally:
        bridge.close()
        server.shutdown()
