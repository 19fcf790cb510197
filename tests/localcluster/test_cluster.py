"""The local control plane's ports: free on loopback, and out of the way of outgoing connections."""

from __future__ import annotations

import socket

from localcluster import cluster


def test_a_free_port_is_bindable_and_below_the_ephemeral_range() -> None:
    port = cluster.free_port()
    assert cluster.PORTS_FROM <= port < cluster._ephemeral_low()
    with socket.socket() as s:
        s.bind((cluster.HOST, port))


def test_a_port_in_use_is_never_given(monkeypatch) -> None:
    with socket.socket() as taken:
        taken.bind((cluster.HOST, 0))
        taken.listen()
        used = taken.getsockname()[1]
        free = cluster.free_port()
        picks = iter([used, used, free])
        monkeypatch.setattr(cluster.random, "randrange", lambda *_: next(picks))
        assert cluster.free_port() == free
