"""The simulated network hop (rtt=): the relay's added delay measured with real round trips to a
real server, and a short run through it."""

from __future__ import annotations

import os
import signal
import stat
import statistics
import subprocess
import threading
import time
from pathlib import Path

import pytest

from pgknee.netsim.control import Relay, probe
from pgknee.system.proc import RunAs
from pgknee.targets.local import EmbeddedCluster

from .conftest import APP_ENV, PROBED, QUICK, SCALE, dsn_of, pgknee, sql

ROUNDS = 7  # interleaved rounds of the three probes: a burst on the shared machine disturbs one round, not the median
ROUND_TRIPS = 60


def _added(server: EmbeddedCluster, asked: float) -> tuple[float, float, float, float]:
    """(the relay's own cost at rtt 0, what it adds at `asked` beyond that, the fastest round trip
    through it, how late it says its chunks left on average): the medians over interleaved rounds
    of the paired differences (direct, rtt 0, rtt asked, then again), so that the three are
    measured side by side, not minutes apart."""
    own, added, fastest = [], [], []
    with Relay(server.endpoint, 0.0) as r0, Relay(server.endpoint, asked) as r:
        for _ in range(ROUNDS):
            direct = probe(server.endpoint, count=ROUND_TRIPS)
            base = probe(r0.endpoint, count=ROUND_TRIPS)
            through = probe(r.endpoint, expected_ms=asked, count=ROUND_TRIPS)
            own.append(base.median_ms - direct.median_ms)
            added.append(through.median_ms - base.median_ms)
            fastest.append(through.min_ms)
        said = r.finish()
    assert not r.alive() and not r0.alive()
    return statistics.median(own), statistics.median(added), min(fastest), said["late_mean_ms"]


@pytest.mark.slow  # alone: in make slow, where the machine is held for it, not in make test's three workers
@pytest.mark.alone  # a timing measured in microseconds: nothing of the suite beside it
def test_relay_adds_the_asked_round_trip_and_reports_its_lateness(server: EmbeddedCluster) -> None:
    """The relay's own cost measured with rtt 0; at 1 ms and 5 ms what it adds beyond that is the
    asked delay within 20% (the issue's test). Measured on this 2-CPU machine, 55 times over (2026-11-25,
    quiet): its own cost 0.156-0.198 ms; what it adds 0.865-0.916 ms at 1 ms, 4.891-4.917 at 5 ms
    (the relay asks its timers early by their usual lateness); the fastest round trip through it 0.898
    ms at 1 ms and 4.883 at 5 ms, 0.117 ms early at worst. No retry: the medians of interleaved rounds
    carry a burst of the shared machine. Then what the relay says of itself: its chunks (two a round
    trip), their lateness and its CPU. (One test, not three: each test alone waits for the whole
    suite to drain beside it.)"""
    for asked in (1.0, 5.0):
        _asked_round_trip(server, asked)
    with Relay(server.endpoint, 1.0) as r:
        probe(r.endpoint, expected_ms=1.0)
        said = r.finish()
    assert said["chunks"] >= 2 * 30 and abs(said["late_mean_ms"]) < 0.2 and said["cpu_pct"] >= 0
    assert not r.alive()


def _asked_round_trip(server: EmbeddedCluster, asked: float) -> None:
    own, added, fastest, late = _added(server, asked)
    # its own cost is a difference of two medians of round trips: on this virtual machine a direct
    # round trip can be the slower (-0.032 ms once in make matrix, PostgreSQL 17, 1 ms asked, the
    # relay's process keeping a CPU awake that the direct path waits to wake); 0.1 ms is the test's
    # resolution here, far below the delays it asks for
    assert -0.1 < own < 1.0, f"the relay's own added latency {own:.3f} ms"
    # what it adds, measured from outside by the round trips, is the asked delay within 20%, and above that
    # no more than the lateness it declares (a chunk each way): what a loaded machine adds (1.357 ms at 1 ms
    # asked in one matrix run on a busy virtual machine), within half the half-delay each way
    assert 0.8 * asked <= added <= 1.2 * asked + 2 * max(0.0, late), \
        f"asked {asked} ms, added {added:.3f}, late {late:.3f}"
    assert late < 0.25 * asked, f"the relay's chunks {late:.3f} ms late on average, {asked} ms asked"
    # no round trip came back much before the delay: the relay asks each timer early by its lateness
    # estimate, about 0.05 ms a direction here and at most 0.1 (0.117 ms early at worst in 55 runs;
    # 0.221 once under the load of a parallel suite, when the estimate could reach 0.5 ms a direction)
    assert fastest >= asked - 0.2, f"the fastest round trip {fastest:.3f} ms at {asked} ms asked"


@pytest.mark.slow  # alone: in make slow
@pytest.mark.alone  # two relays' medians compared: another test's load beside one round skews it (0.66 ms once)
def test_relay_through_a_unix_socket_and_jitter(server: EmbeddedCluster, tmp_path: Path) -> None:
    """A server's Unix socket (where it may trust its local peers) is relayed from a Unix socket of
    pgbench's user alone, never from a loopback port every local user reaches. Jitter (a normal
    spread of 0.5 ms a direction at rtt_jitter=1ms) leaves the median where a jitter-free relay
    measured beside it puts it, and widens the tail: the two are probed in interleaved rounds, so
    that the shared machine's load (which made the relay late by 1 ms in CI) weighs on both."""
    nobody = RunAs(65534, 65534, "nobody")
    dirs = [tmp_path / "flat", tmp_path / "jitter"]
    for d in dirs:
        d.mkdir(mode=0o700)
    flat_ms: list[float] = []
    jitter_ms: list[float] = []
    with Relay(server.session_endpoint, 2.0, socket_dir=dirs[0], owner=nobody) as flat, \
            Relay(server.session_endpoint, 2.0, jitter_ms=1.0, socket_dir=dirs[1], owner=nobody) as r:
        assert r.endpoint.params["host"] == str(dirs[1]) and "hostaddr" not in r.endpoint.params
        st = (dirs[1] / ".s.PGSQL.5432").stat()
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == 65534
        for _ in range(4):
            flat_ms.append(probe(flat.endpoint, expected_ms=2.0, count=50).median_ms)
            p = probe(r.endpoint, expected_ms=2.0, count=50)
            jitter_ms.append(p.median_ms)
            # the sum of two normal delays of mean 1 and deviation 0.5 ms: a p99 1.65 ms above the median
            assert p.p99_ms > p.median_ms + 0.5, f"a p99 of {p.p99_ms:.2f} ms at a median of {p.median_ms:.2f}"
    assert 1.5 <= statistics.median(flat_ms) <= 4.0
    # the median of 50 such sums moves by about 0.1 ms (0.71 ms / sqrt(50)); the median of four rounds'
    # differences (each jittered probe against the flat one just before it), less
    shift = statistics.median(j - f for j, f in zip(jitter_ms, flat_ms, strict=True))
    assert abs(shift) < 0.4, f"jitter moved the median by {shift:.2f} ms ({jitter_ms} against {flat_ms})"


def _relays_to(port: int) -> list[str]:
    out = subprocess.run(["ps", "-ww", "-eo", "pid,args"], capture_output=True, text=True, check=True).stdout
    return [ln for ln in out.splitlines() if "pgknee.netsim.relay" in ln and f"--upstream-port {port}" in ln]


@pytest.mark.slow  # alone: in make slow
@pytest.mark.alone  # normal against pipeline through the hop: another test's load skews one step
def test_a_run_through_a_simulated_hop(server: EmbeddedCluster, tmp_path: Path) -> None:
    """--variant normal:rtt=2ms --variant pipeline:rtt=2ms: the round trip stored and achieved,
    pipeline mode far ahead (one round trip per transfer instead of six), the relay gone after."""
    store = tmp_path / "n.db"
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_network", "--scale", SCALE,
               "--variant", "normal:rtt=2ms", "--variant", "pipeline:rtt=2ms", "--clients", "2", "--duration", "3s",
               "--store", str(store), "--no-waits", *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    steps = sql(store, "SELECT step_id, variant, rtt_ms, rtt_jitter_ms, status, tps FROM steps ORDER BY seq")
    assert [s[1:5] for s in steps] == [("normal:rtt=2ms", 2.0, 0.0, "completed"),
                                       ("pipeline:rtt=2ms", 2.0, 0.0, "completed")]
    facts = {(sid, name): value for sid, name, value in sql(store, "SELECT step_id, name, value FROM step_facts "
                                                                   "WHERE name LIKE 'net.%'")}
    normal, pipeline = steps[0][0], steps[1][0]
    # e-wallet: transfer 6 round trips (60%), balance and history 1 each: 4.0; in a pipeline 1
    assert facts[(normal, "net.round_trips_per_txn")] == pytest.approx(4.0)
    assert facts[(pipeline, "net.round_trips_per_txn")] == pytest.approx(1.0)
    for sid in (normal, pipeline):
        # the round trip probed through the relay: the asked 2 ms and the lateness the relay declares, a chunk
        # each way (2.45-2.52 ms with 0.2 ms late in matrix runs on a busy virtual machine)
        late = facts[(sid, "net.relay_late_mean_ms")]
        # (the probe runs before the step, the lateness is the step's: within 20%, and above that no more than it)
        assert 1.6 <= facts[(sid, "net.relay_added_ms")] <= 2.4 + 2 * late, (late, facts)
        assert facts[(sid, "net.direct_rtt_ms")] < 0.5
        # what the relay said at the step's end: its chunks on time (within a quarter of the half-delay:
        # 0.21 ms late on average in a matrix run, three test workers on two CPUs), its CPU
        assert 0 <= late < 0.25
        assert 0 < facts[(sid, "net.relay_cpu_pct")] < 100
    assert steps[1][5] > 2.0 * steps[0][5], steps
    assert "Network per transaction" in r.out
    row = next(ln for ln in r.out.splitlines() if ln.strip().startswith("c2") and "normal:rtt=2ms" in ln
               and "%" in ln and "×" not in ln)
    assert int(row.split()[-1].rstrip("%")) >= 50  # most of each transaction is the network
    assert "network-bound" in r.out and "rtt-achieved" in r.out
    assert _relays_to(server.port) == []


def test_a_relay_that_dies_fails_its_step_with_that_reason(server: EmbeddedCluster, tmp_path: Path) -> None:
    """The simulated hop killed mid-step: the step fails saying so (not only pgbench's lost
    connections), and the next step gets a relay of its own."""
    store = tmp_path / "d.db"
    killed: list[int] = []

    def kill_the_first_relay() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            found = _relays_to(server.port)
            if found:
                pid = int(found[0].split()[0])
                time.sleep(1.5)  # into the probe before the bench: the bench cannot connect at all
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.1)

    t = threading.Thread(target=kill_the_first_relay, daemon=True)
    t.start()
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_network", "--scale", SCALE, "--variant",
               "rtt=1ms", "--clients", "2", "--reps", "2", "--duration", "2s", "--store", str(store), "--no-waits",
               *PROBED, env=APP_ENV, cwd=tmp_path)
    t.join(timeout=5)
    assert killed
    steps = sql(store, "SELECT status, status_reason FROM steps ORDER BY seq")
    assert steps[0][0] == "failed" and "relay) died during the step (signal 9)" in str(steps[0][1]), steps
    assert steps[1][0] == "completed", steps
    died = sql(store, "SELECT s.seq, f.name, f.value FROM step_facts f JOIN steps s USING (step_id) "
                      "WHERE f.name IN ('net.relay_signal', 'net.relay_exit_code')")
    assert died == [(1, "net.relay_signal", 9.0)], died  # the signal as itself, not a negative exit code
    assert r.code != 0 or "relay) died" in r.out + r.err
    assert _relays_to(server.port) == []
