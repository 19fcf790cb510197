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


def test_a_low_ephemeral_range_falls_back_to_the_kernel_s_pick(monkeypatch) -> None:
    monkeypatch.setattr(cluster, "_ephemeral_low", lambda: 1024)  # ip_local_port_range "1024 65535"
    port = cluster.free_port()
    with socket.socket() as s:
        s.bind((cluster.HOST, port))
