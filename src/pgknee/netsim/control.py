"""The simulated network hop of a variant (rtt=): a delaying relay (netsim.relay, a process of
its own started through proc.spawn, registered, killed with pgknee) between pgbench and the
endpoint it would reach (the server, or the step's pgbouncer: the application's hop), and the
round-trip probe that measures what a client really waits: the direct path, and the path
through the relay."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import psycopg
from psycopg import pq

from pgknee.base.errors import Interrupted, PgkneeError, TargetError
from pgknee.system import proc
from pgknee.system.proc import RunAs
from pgknee.targets.base import Endpoint

PROBE_ROUND_TRIPS = 200
PROBE_BUDGET_S = 1.0  # at most this long through a slow relay (fewer round trips, at least MIN)
PROBE_MIN_ROUND_TRIPS = 30
START_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RttProbe:
    """Round trips a client waited for, in ms: each a lone Sync (libpq's pipeline sync with
    nothing in the pipeline), which the server answers with ReadyForQuery without starting a
    transaction (so the probe adds no commit to the statistics, nor to a pooler's), timed around
    libpq's calls on one connection."""

    median_ms: float
    p99_ms: float
    min_ms: float
    count: int


def summarize(times_ms: list[float]) -> RttProbe:
    ordered = sorted(times_ms)
    p99 = ordered[min(len(ordered) - 1, max(0, round(0.99 * len(ordered)) - 1))]
    return RttProbe(statistics.median(ordered), p99, ordered[0], len(ordered))


def probe(endpoint: Endpoint, *, expected_ms: float = 0.0, count: int = PROBE_ROUND_TRIPS) -> RttProbe:
    """`count` round trips (fewer when each is expected to be slow), after five unmeasured."""
    if expected_ms > 0:
        count = max(PROBE_MIN_ROUND_TRIPS, min(count, int(PROBE_BUDGET_S * 1000 / expected_ms)))
    with endpoint.connect("probe") as conn:
        pg = conn.pgconn
        pg.enter_pipeline_mode()
        times: list[float] = []
        for i in range(count + 5):
            t0 = time.perf_counter_ns()
            pg.pipeline_sync()
            res = pg.get_result()
            t1 = time.perf_counter_ns()
            if res is None or res.status != pq.ExecStatus.PIPELINE_SYNC:
                raise TargetError(f"the round-trip probe to {endpoint.label} got "
                                  f"{'nothing' if res is None else f'status {res.status}'}, not a Sync's answer")
            if i >= 5:
                times.append((t1 - t0) / 1e6)
        pg.exit_pipeline_mode()
    return summarize(times)


def relayed(endpoint: Endpoint, port: int, socket_dir: Path | None = None) -> Endpoint:
    """The same connection, reached through the relay's port: libpq connects to the relay's
    address (hostaddr) and still names the server's host (TLS host checks, the passfile); or
    through the relay's Unix socket in `socket_dir`."""
    params = dict(endpoint.params)
    if socket_dir is not None:
        params.pop("hostaddr", None)
        params.update(host=str(socket_dir), port=str(SOCKET_PORT))
        return Endpoint(params, endpoint.password, endpoint.tls)
    if params.get("host", "").startswith("/") or not params.get("host"):
        params["host"] = "127.0.0.1"
    params.update(hostaddr="127.0.0.1", port=str(port))
    return Endpoint(params, endpoint.password, endpoint.tls)


SOCKET_PORT = 5432  # the relay's Unix socket: .s.PGSQL.5432 in a directory of its own


def upstream_is_unix(endpoint: Endpoint) -> bool:
    return not endpoint.params.get("hostaddr") and endpoint.params.get("host", "").startswith("/")


def upstream_args(endpoint: Endpoint) -> list[str]:
    """Where the relay forwards to: the endpoint's address, or its Unix socket."""
    p = endpoint.params
    host, port = p.get("host", ""), p.get("port", "5432")
    if p.get("hostaddr"):
        return ["--upstream-host", p["hostaddr"], "--upstream-port", port]
    if host.startswith("/"):
        return ["--upstream-unix", os.path.join(host, f".s.PGSQL.{port}")]
    if "," in host:
        raise TargetError(f"the endpoint {endpoint.label} lists several hosts: a simulated network hop needs one")
    return ["--upstream-host", host or "localhost", "--upstream-port", port]


class Relay:
    """A relay process for one step: `with Relay(upstream, rtt_ms, jitter_ms, clients) as r:`
    pgbench connects to r.endpoint. An upstream on a Unix socket is relayed from a Unix socket in
    `socket_dir` (a private directory of pgknee's), given to `owner` (pgbench's user) alone: a
    loopback port would open a socket the server may trust to every local user."""

    def __init__(self, upstream: Endpoint, rtt_ms: float, jitter_ms: float = 0.0, connections: int = 100, *,
                 socket_dir: Path | None = None, owner: RunAs | None = None) -> None:
        self.upstream = upstream
        self.socket_dir = socket_dir if upstream_is_unix(upstream) else None
        if upstream_is_unix(upstream) and socket_dir is None:
            raise TargetError(f"{upstream.label} is a Unix socket: its relay needs a private directory")
        self.owner = owner
        self.rtt_ms, self.jitter_ms = rtt_ms, jitter_ms
        self.connections = connections
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.started = 0.0

    @property
    def endpoint(self) -> Endpoint:
        return relayed(self.upstream, self.port, self.socket_dir)

    def start(self) -> None:
        argv = [sys.executable, "-m", "pgknee.netsim.relay", *upstream_args(self.upstream),
                "--rtt-ms", repr(self.rtt_ms), "--jitter-ms", repr(self.jitter_ms),
                "--connections", str(self.connections + 10)]
        if self.socket_dir is not None:
            argv += ["--listen-unix", str(self.socket_dir / f".s.PGSQL.{SOCKET_PORT}")]
            if self.owner is not None:
                argv += ["--listen-owner", f"{self.owner.uid}:{self.owner.gid}"]
        env = {**proc.base_env(), "PYTHONPATH": os.pathsep.join(sys.path)}
        self.process = proc.spawn(argv, env=env, stderr=subprocess.PIPE)
        self.port = self._read_port(self.process)
        self.started = time.monotonic()

    @staticmethod
    def _read_port(p: subprocess.Popen[bytes]) -> int:
        assert p.stderr is not None  # spawned with stderr=PIPE
        line = _line_within(p, START_TIMEOUT_S)
        if not line.strip().isdigit():  # the port, or 0 for a Unix socket
            proc.stop(p, grace=1.0)
            err = p.stderr.read().decode(errors="replace").strip()
            _close_pipes(p)
            raise TargetError("the network relay (rtt=) did not start: "
                              f"{err.splitlines()[-1] if err else 'no port within 10 s'}")
        return int(line)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def finish(self) -> dict[str, float]:
        """Stop the relay and read what it says of itself: how late its chunks left against the
        asked delay (late_mean_ms, late_p99_ms, late_max_ms; chunks) and the CPU it used
        (cpu_pct, of one core over its life)."""
        p = self.process
        if p is None or p.poll() is not None:
            self.close()
            return {}
        cpu_s = _cpu_seconds(p.pid)
        lived = time.monotonic() - self.started
        p.send_signal(signal.SIGTERM)
        out: dict[str, float] = {}
        line = _line_within(p, 5.0)
        with contextlib.suppress(ValueError):
            out = {k: float(v) for k, v in json.loads(line or b"{}").items()}
        if cpu_s is not None and lived > 0:
            out["cpu_pct"] = 100.0 * cpu_s / lived
        self.close()
        return out

    def close(self) -> None:
        if self.process is not None:
            proc.stop(self.process, grace=2.0)
            _close_pipes(self.process)
            self.process = None

    def __enter__(self) -> Relay:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def _cpu_seconds(pid: int) -> float | None:
    """user + system time of a process so far (/proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def _line_within(p: subprocess.Popen[bytes], timeout_s: float) -> bytes:
    """The relay's next line on its stdout, or b"" when none began within `timeout_s`."""
    assert p.stdout is not None  # spawned with stdout=PIPE
    ready, _, _ = select.select([p.stdout], [], [], timeout_s)
    return p.stdout.readline() if ready else b""


def _close_pipes(p: subprocess.Popen[bytes]) -> None:
    for f in (p.stdout, p.stderr):
        if f is not None:
            f.close()


def try_probe(endpoint: Endpoint, expected_ms: float = 0.0) -> RttProbe | None:
    """The probe, or None when the endpoint does not answer it (the step will say why)."""
    try:
        return probe(endpoint, expected_ms=expected_ms)
    except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
        raise
    except (psycopg.Error, PgkneeError, OSError):
        return None
