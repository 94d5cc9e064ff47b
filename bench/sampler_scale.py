"""Does pgknee's pg_stat_activity sampler keep its 10 Hz with thousands of backends, and what
does one tick cost? On a throwaway server, backends are added in stages (--backends, each
stage keeps the ones before it): a light pgbench load (8 clients, rate-limited), sessions in
pg_sleep (--busy-pct of them: active, so their rows are transferred every tick) and quiet idle
sessions (counted by the query, not transferred). The sessions are not tagged as pgknee's, so
the sampler counts them as it would a user's. (A pooler's clients are not backends: behind
pgbouncer only its pool is, so pooled clients cost the sampler nothing more than their pool.)

At each stage the real ActivitySampler runs at --interval for --seconds, and the bench reports:
ticks kept (snapshots taken / ticks the interval asks for), the query's wall time per tick
(median, p95, max), the CPU the sampler's own backend used per tick (/proc/PID/stat), the CPU of
pgknee's sampler thread per tick (/proc/self/task/TID/stat), rows transferred per tick, and the
memory the backends took (MemAvailable's drop, the server's PSS). Before each stage the memory
the next one will take is projected from the last; the bench stops short of a stage that would
leave less than --reserve-gb of RAM.

    .venv/bin/python bench/sampler_scale.py [--backends 100,500,1000,2000,5000] [--seconds 30] [--json PATH]

(about 6 minutes with the defaults on 2 cores; opening the 5,000 sessions takes one to two of them)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pgknee.collect.activity import ActivitySampler
from pgknee.collect.memory import memory_picture
from pgknee.collect.osproc import CLK_TCK, read_meminfo
from pgknee.collect.pace import Pace
from pgknee.collect.protocol import StepProcesses
from pgknee.driver.pgbench import PgbenchRun, find_pgbench, pgbench_version
from pgknee.model.facts import MemoryAtEnd
from pgknee.model.samples import ActivitySamples
from pgknee.plan import parse_seconds
from pgknee.run.idle import IdleHolder
from pgknee.system import proc
from pgknee.targets.base import Endpoint
from pgknee.targets.local import EmbeddedCluster, find_bindir
from pgknee.workloads.base import ScriptSource, write_scripts

STEADY_SETTINGS = {"autovacuum": "off", "checkpoint_timeout": "1h", "max_wal_size": "4GB",
                   "synchronous_commit": "off"}
LOAD_CLIENTS = 8
LOAD_RATE = 200  # transactions per second in all: light
LOAD_SCRIPT = "SELECT sum(g) FROM generate_series(1, 2000) AS g;\n"
APP_NAME = "bench:sampler-scale"


@dataclass(frozen=True)
class Stage:
    backends: int  # client backends the server had (pg_stat_activity, all of them)
    busy: int  # of which in pg_sleep
    seconds: float
    interval_ms: float
    ticks: int  # snapshots taken
    expected: float  # ticks the plan's interval asks for in the window
    kept_pct: float  # ticks that began on time (the one before did not overrun), % of the PLANNED ticks
    of_plan_pct: float  # ticks / expected: the share of the plan's ticks taken (above 100 when more were)
    late: int  # ticks that began late (the sampler's own count)
    overran: int  # ticks whose query took longer than the plan's interval
    ended_ms: float  # the interval the sampler ended the window at (longer than the plan's: it slowed)
    ms_p50: float
    ms_p95: float
    ms_max: float
    server_cpu_ms: float  # the sampler's backend, per tick
    python_cpu_ms: float  # pgknee's sampler thread, per tick
    rows_per_tick: float
    rate_hz: float  # snapshots per second actually taken
    mem_used_mb: float  # MemAvailable's drop since before the first session
    mem_per_backend_kb: float
    server_pss_mb: float


# ---- figures (unit-tested) ----------------------------------------------------------------------
def parse_counts(text: str) -> list[int]:
    counts = [int(x) for x in text.split(",") if x.strip()]
    if not counts or any(c <= LOAD_CLIENTS for c in counts) or counts != sorted(set(counts)):
        raise ValueError(f"need increasing counts above {LOAD_CLIENTS}, e.g. 100,500,1000")
    return counts


def stat_ticks(text: str) -> int:
    """utime + stime from the text of a /proc/.../stat file (the command may hold spaces and
    parentheses: the fields start after the last ')')."""
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def percentile(xs: Sequence[float], q: float) -> float:
    """The q-th percentile, linear between the nearest ranks; nan for no values."""
    if not xs:
        return math.nan
    s = sorted(xs)
    k = (len(s) - 1) * q / 100
    lo = math.floor(k)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (k - lo)


def split_sessions(backends: int, busy_pct: float) -> tuple[int, int]:
    """(sleeping, quiet) sessions beside pgbench's clients for a stage of `backends`."""
    busy = round(backends * busy_pct / 100)
    return busy, max(0, backends - LOAD_CLIENTS - busy)


def projected_kb(used_kb: float, opened: int, more: int) -> float:
    """The memory `more` backends will take, at the mean of the ones opened so far."""
    return used_kb / opened * more if opened > 0 else math.nan


def stage_figures(samples: ActivitySamples, seconds: float, interval_s: float, server_ticks: int,
                  python_ticks: int, clk_tck: int = CLK_TCK) -> dict[str, float]:
    """What one stage's window measured, from the sampler's snapshots (their last column is the
    query's wall time in ms) and the CPU ticks of its backend and thread over the window."""
    ms = [float(s[-1]) for s in samples.snapshots]
    n = len(ms)
    expected = seconds / interval_s
    per_tick = 1000.0 / clk_tck / n if n else math.nan
    # both against the plan's rate, never the sampler's own slowed one, and not capped
    return {"ticks": n, "expected": expected,
            "kept_pct": 100.0 * (n - samples.ticks_late) / expected if expected else 0.0,
            "of_plan_pct": 100.0 * n / expected if expected else 0.0, "late": samples.ticks_late,
            "ended_ms": samples.interval_s * 1000, "overran": sum(1 for x in ms if x > interval_s * 1000),
            "ms_p50": percentile(ms, 50),
            "ms_p95": percentile(ms, 95), "ms_max": max(ms) if ms else math.nan,
            "server_cpu_ms": server_ticks * per_tick, "python_cpu_ms": python_ticks * per_tick,
            "rows_per_tick": len(samples.rows) / n if n else math.nan, "rate_hz": n / seconds}


def table(stages: Sequence[Stage]) -> str:
    head = (f"{'backends':>8} {'busy':>5} {'kept':>6} {'late':>4} {'ticks/plan':>10} {'rate':>6} {'ended':>7} "
            f"{'query ms p50/p95/max':>22} {'server ms':>9} {'python ms':>9} {'rows':>6} {'RAM MB':>7} "
            f"{'kB/backend':>10}")
    lines = [head]
    for s in stages:
        lines.append(f"{s.backends:>8} {s.busy:>5} {s.kept_pct:>5.1f}% {s.late:>4} {s.ticks:>5}/{s.expected:<4.0f} "
                     f"{s.rate_hz:>4.1f}Hz {s.ended_ms:>5.0f}ms {s.ms_p50:>7.1f}/{s.ms_p95:>6.1f}/{s.ms_max:>6.1f} "
                     f"{s.server_cpu_ms:>9.2f} {s.python_cpu_ms:>9.2f} {s.rows_per_tick:>6.0f} "
                     f"{s.mem_used_mb:>7.0f} {s.mem_per_backend_kb:>10.0f}")
    return "\n".join(lines)


# ---- the machine ----------------------------------------------------------------------------------
def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--backends", default="100,500,1000,2000,5000", help="stages (default 100,500,1000,2000,5000)")
    p.add_argument("--seconds", type=float, default=30.0, help="sampling window per stage (default 30)")
    p.add_argument("--interval", default="100ms", help="the sampler's interval (default 100ms: 10 Hz)")
    p.add_argument("--busy-pct", type=float, default=10.0, help="sessions in pg_sleep, %% of each stage (default 10)")
    p.add_argument("--reserve-gb", type=float, default=4.0, help="RAM a stage must leave free (default 4)")
    p.add_argument("--fixed-rate", action="store_true",
                   help="keep the interval even when the query overruns it (pgknee slows down by itself)")
    p.add_argument("--json", type=Path, help="write the figures there")
    a = p.parse_args(argv)
    try:
        a.counts = parse_counts(a.backends)
    except ValueError as e:
        p.error(str(e))
    a.interval_s = parse_seconds(a.interval, "--interval")
    return a


def raise_fd_limit(need: int) -> tuple[int, int]:
    """One descriptor per client connection in this process: raise the soft limit if it is short."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        new = need if hard == resource.RLIM_INFINITY else min(need, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
        soft = new
    return soft, hard


def read_ticks(path: str) -> int:
    try:
        with open(path) as f:
            return stat_ticks(f.read())
    except OSError:
        return 0


def mem_available_kb() -> float:
    return float(read_meminfo().get("MemAvailable", 0))


def count_backends(cluster: EmbeddedCluster) -> tuple[int, int]:
    with cluster.endpoint.connect("count") as c:
        row = c.execute("SELECT count(*) FILTER (WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()), "
                        "count(*) FILTER (WHERE wait_event = 'PgSleep') FROM pg_stat_activity").fetchone()
    assert row is not None
    return int(row[0]), int(row[1])


@contextlib.contextmanager
def light_load(cluster: EmbeddedCluster, tmp: Path, seconds: int) -> Iterator[None]:
    """pgbench at a low fixed rate for the whole bench, stopped at its end."""
    pgbench = find_pgbench()
    _, version_num = pgbench_version(pgbench)
    scripts = write_scripts([(ScriptSource("light", "light.sql", LOAD_SCRIPT, 1), LOAD_SCRIPT)], tmp,
                            cluster.run_as)
    run = PgbenchRun(pgbench=pgbench, clients=LOAD_CLIENTS, threads=1, duration_s=seconds, protocol="prepared",
                     scripts=tuple(scripts), defines=(), log_prefix=None, max_tries=1, version_num=version_num,
                     progress_s=0, rate=LOAD_RATE)
    env = cluster.endpoint.child_env(tmp, cluster.run_as)
    p = proc.spawn(run.argv(), env=env, run_as=cluster.run_as, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    try:
        yield
    finally:
        proc.stop(p, first=signal.SIGINT)


class FixedPace(Pace):
    """The sampler as it was: the plan's interval whatever its queries take."""

    def observe(self, took_s: float) -> float | None:
        return None


class UsersEndpoint(Endpoint):
    """The bench's sessions are the user's, not pgknee's: the sampler leaves out application
    names that begin with 'pgknee:', which IdleHolder's would."""

    def kwargs(self, application_name: str, *, timeout: float = 10.0) -> dict[str, Any]:
        return {**super().kwargs(application_name, timeout=timeout), "application_name": APP_NAME}


class Backends:
    """The stages' sessions, added to as the stages grow, all closed at the end."""

    def __init__(self, cluster: EmbeddedCluster) -> None:
        ep = cluster.session_endpoint
        self.endpoint = UsersEndpoint(ep.params, ep.password, ep.tls)
        self.holders: list[IdleHolder] = []
        self.busy = self.quiet = 0

    def grow_to(self, busy: int, quiet: int) -> None:
        for kind, more in (("sleep", busy - self.busy), ("quiet", quiet - self.quiet)):
            if more > 0:
                h = IdleHolder(self.endpoint, more, kind, sleep_s=3600, timeout_s=900)
                self.holders.append(h)  # closed even if opening fails half-way
                h.open()
        self.busy, self.quiet = max(busy, self.busy), max(quiet, self.quiet)

    def close(self) -> None:
        for h in reversed(self.holders):
            h.close()


def measure(sampler: ActivitySampler, index: int, seconds: float) -> tuple[ActivitySamples, int, int]:
    """The sampler on for `seconds`; its snapshots and the CPU ticks of its backend and thread."""
    backend, tid = sampler.backend_pid, sampler.thread_id
    server_path, python_path = f"/proc/{backend}/stat", f"/proc/self/task/{tid}/stat"
    s0, p0 = read_ticks(server_path), read_ticks(python_path)
    sampler.begin_step(StepProcesses(index))
    sampler.phase = "bench"
    time.sleep(seconds)
    samples = next(iter(sampler.end_step()), None)
    s1, p1 = read_ticks(server_path), read_ticks(python_path)
    assert samples is not None
    return samples, s1 - s0, p1 - p0


def run_stage(a: argparse.Namespace, cluster: EmbeddedCluster, sampler: ActivitySampler, backends: Backends,
              index: int, baseline_kb: float) -> Stage:
    n = a.counts[index]
    busy, quiet = split_sessions(n, a.busy_pct)
    t0 = time.monotonic()
    backends.grow_to(busy, quiet)
    seen, sleeping = count_backends(cluster)
    used_kb = baseline_kb - mem_available_kb()
    pss = memory_picture(MemoryAtEnd, cluster.server_pid())
    print(f"  {seen} client backends ({sleeping} in pg_sleep), opened in {time.monotonic() - t0:.0f} s; "
          f"RAM used {used_kb / 1024:.0f} MB, server PSS {(pss.pss_server_kb or 0) / 1024:.0f} MB "
          f"over {pss.pss_server_processes or 0} processes", flush=True)
    time.sleep(2)  # the sessions' first statistics settle
    samples, server_ticks, python_ticks = measure(sampler, index, a.seconds)
    f = stage_figures(samples, a.seconds, a.interval_s, server_ticks, python_ticks)
    return Stage(backends=seen, busy=sleeping, seconds=a.seconds, interval_ms=a.interval_s * 1000,
                 mem_used_mb=used_kb / 1024, mem_per_backend_kb=used_kb / max(seen, 1),
                 server_pss_mb=(pss.pss_server_kb or 0) / 1024, **{k: v for k, v in f.items() if k != "ticks"},
                 ticks=int(f["ticks"]))


def room_for(a: argparse.Namespace, index: int, stages: Sequence[Stage]) -> str | None:
    """Why the next stage is not run (it would leave too little RAM), or None."""
    if not stages:
        return None
    last = stages[-1]
    more = projected_kb(last.mem_used_mb * 1024, last.backends, a.counts[index] - last.backends)
    left = mem_available_kb() - more
    if left < a.reserve_gb * 1024 * 1024:
        return (f"not opening {a.counts[index]} backends: at {last.mem_per_backend_kb:.0f} kB each they would "
                f"leave {left / 1024 / 1024:.1f} GB of RAM (--reserve-gb {a.reserve_gb:g})")
    print(f"  projected for {a.counts[index]}: {more / 1024:.0f} MB more, {left / 1024 / 1024:.1f} GB left",
          flush=True)
    return None


def run_stages(a: argparse.Namespace, cluster: EmbeddedCluster, server_num: int) -> list[Stage]:
    stages: list[Stage] = []
    baseline_kb = mem_available_kb()
    sampler = ActivitySampler(cluster.endpoint, server_num, a.interval_s,
                              on_slow=lambda text: print(f"  sampler: {text}", flush=True))
    if a.fixed_rate:
        sampler.pace = FixedPace(a.interval_s)
    backends = Backends(cluster)
    sampler.start()
    try:
        for i, n in enumerate(a.counts):
            why = room_for(a, i, stages)
            if why is not None:
                print(why, flush=True)
                break
            print(f"stage {i + 1}/{len(a.counts)}: {n} backends", flush=True)
            stages.append(run_stage(a, cluster, sampler, backends, i, baseline_kb))
            print(table(stages[-1:]).splitlines()[1], flush=True)
    finally:
        sampler.close()
        backends.close()
    return stages


def summary(a: argparse.Namespace, stages: Sequence[Stage]) -> str:
    pace = " (fixed)" if a.fixed_rate else ", slowing down by itself"
    return "\n".join([
        f"\n=== pg_stat_activity sampler at {1 / a.interval_s:g} Hz{pace}, against backends ({a.seconds:g} s per "
        f"stage, {LOAD_CLIENTS} pgbench clients at {LOAD_RATE} tps, {a.busy_pct:g}% in pg_sleep) ===",
        table(stages),
        "kept: ticks that began on time, % of the ticks the planned interval asks for (late: the others);",
        "ticks/plan: ticks taken / the window's ticks at the plan's interval; rate: ticks taken per second;",
        "ended: the interval the sampler ended the window at;",
        "server ms, python ms: CPU per tick of the sampler's backend and of pgknee's sampler thread;",
        "rows: sessions transferred per tick; RAM: MemAvailable's drop since before the first session (the "
        "clients' side included)"])


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    top = a.counts[-1]
    soft, hard = raise_fd_limit(top + 512)
    print(f"{os.cpu_count()} CPUs, {read_meminfo()['MemTotal'] / 1024 / 1024:.1f} GB RAM, "
          f"{mem_available_kb() / 1024 / 1024:.1f} GB available; open files: soft {soft}, hard {hard}", flush=True)
    settings = {**STEADY_SETTINGS, "max_connections": str(top + 100)}
    with tempfile.TemporaryDirectory(prefix="pgknee-bench-") as tmp:
        os.chmod(tmp, 0o711)  # pgbench runs as the server's user when this runs as root
        cluster = EmbeddedCluster(find_bindir(), settings)
        try:
            print(f"starting a throwaway PostgreSQL in {cluster.root} (max_connections {top + 100}) ...", flush=True)
            cluster.start()
            cluster.create_database()
            with cluster.endpoint.connect("setup") as conn:
                row = conn.execute("SHOW server_version_num").fetchone()
                server_num = int(row[0]) if row else 150000
            budget = int(len(a.counts) * (a.seconds + 120) + 600)
            with light_load(cluster, Path(tmp), budget):
                stages = run_stages(a, cluster, server_num)
        except KeyboardInterrupt:
            print("stopped", file=sys.stderr)
            return 130
        finally:
            cluster.close()
    print(summary(a, stages))
    if a.json is not None:
        a.json.write_text(json.dumps({"interval_s": a.interval_s, "fixed_rate": a.fixed_rate, "seconds": a.seconds,
                                      "busy_pct": a.busy_pct, "load": {"clients": LOAD_CLIENTS, "rate": LOAD_RATE},
                                      "stages": [asdict(s) for s in stages]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    threading.excepthook = lambda x: print(f"thread error: {x.exc_value}", file=sys.stderr)
    raise SystemExit(main())
