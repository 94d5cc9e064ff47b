"""The simulated network hop (rtt=): the relay's added delay measured with real round trips to a
real server, and a short run through it."""

from __future__ import annotations

from pgknee.netsim.control import Relay, probe
from pgknee.targets.local import EmbeddedCluster


def test_relay_adds_the_asked_round_trip(server: EmbeddedCluster) -> None:
    """The relay's own cost measured with rtt 0; at 1 ms and 5 ms what it adds beyond that is the
    asked delay within 20% (the issue's test)."""
    direct = probe(server.endpoint)
    with Relay(server.endpoint, 0.0) as r0:
        base = probe(r0.endpoint)
    own = base.median_ms - direct.median_ms
    assert 0 <= own < 0.5, f"the relay's own added latency {own:.3f} ms"
    for asked in (1.0, 5.0):
        with Relay(server.endpoint, asked) as r:
            through = probe(r.endpoint, expected_ms=asked)
        added = through.median_ms - base.median_ms
        assert abs(added - asked) <= 0.2 * asked, f"asked {asked} ms, added {added:.3f} ms"
        assert through.min_ms >= asked - own  # every round trip waited the delay
        assert not r.alive()


def test_relay_through_a_unix_socket_and_jitter(server: EmbeddedCluster) -> None:
    with Relay(server.session_endpoint, 2.0, jitter_ms=1.0) as r:
        p = probe(r.endpoint, expected_ms=2.0)
    assert 1.5 <= p.median_ms <= 3.0
    assert p.p99_ms > p.median_ms + 0.5  # the jitter shows in the tail
