"""How accurate pgknee's sampled Average Active Sessions are, against the server's own clocks.

On a throwaway embedded server (pg_wait_sampling preloaded when its library is installed), the
e-wallet workload runs one pgbench step per (protocol, clients, sampler priority), round after
round, while pgknee's own ActivitySampler (in this process, at --interval with its jitter, exactly
as `pgknee run` drives it) samples pg_stat_activity. Per step it compares

* total client AAS: sampled 'active' against the delta of pg_stat_database.active_time divided by
  the step's seconds (target: within 3%);
* sampled 'active' + 'idle in transaction' against active_time + idle_in_transaction_time, the
  quantity both sides draw the same way (see docs/aas.md);
* per wait event (AAS >= 0.5): pgknee's sampled AAS against pg_wait_sampling's profile
  (profile_period 10 ms, diffed between the step's start and end, the benchmark's backends only,
  by pid; target: within 5%). The profile's number of probes is counted, not assumed: a session
  in another database sleeps in pg_sleep all along, so its Timeout:PgSleep count is the number of
  probes. pg_wait_sampling 1.1 does not sample CPU and does not know a session's state, so CPU
  and Client:* events are left out of the comparison (shown when present).

Sampler priority 'fifo' runs the sampler's thread, its backend and the pg_wait_sampling
collector at SCHED_FIFO 1 (root only): the samples are then taken when the timer fires, not when
a core comes free. The difference between 'normal' and 'fifo' is the scheduling bias docs/aas.md
explains.

    PYTHONPATH=src .venv/bin/python bench/aas_accuracy.py [--clients 8,32] \
        [--protocols simple,prepared,extended] [--priorities normal,fifo] [--seconds 30] \
        [--rounds 1] [--interval 100ms] [--steady] [--json PATH]

(about (seconds + 10) x steps: 12 steps of 30 s take about 8 minutes.)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pgknee.collect import queries
from pgknee.collect.activity import ACTIVITY_COLUMNS, ActivitySampler
from pgknee.collect.pgstats import StatsReader, settled, snapshot
from pgknee.collect.protocol import StepProcesses
from pgknee.collect.waitsampling import probes_of, profile_diff  # what `pgknee run` reads and counts
from pgknee.driver.pgbench import PgbenchRun, find_pgbench, pgbench_version
from pgknee.plan import WorkloadSpec, parse_seconds
from pgknee.system import proc
from pgknee.targets.base import Endpoint
from pgknee.targets.local import EmbeddedCluster, find_bindir
from pgknee.workloads.base import write_scripts
from pgknee.workloads.ewallet import EWallet

TOTAL_TARGET_PCT = 3.0
EVENT_TARGET_PCT = 5.0
EVENT_MIN_AAS = 0.5
PROFILE_PERIOD_MS = 10
WAIT_SAMPLING_SETTINGS = {"shared_preload_libraries": "pg_wait_sampling",
                          "pg_wait_sampling.profile_period": str(PROFILE_PERIOD_MS),
                          "pg_wait_sampling.profile_pid": "on"}
# --steady: no commit fsync, no checkpoint or autovacuum inside a step: CPU-bound, the worst case
STEADY_SETTINGS = {"autovacuum": "off", "checkpoint_timeout": "1h", "max_wal_size": "16GB",
                   "synchronous_commit": "off"}
# pg_wait_sampling cannot tell a session's state: Client waits are idle time as often as not,
# and version 1.1 does not sample CPU at all
NOT_COMPARED_TYPES = frozenset({"Client", "CPU"})
COL = {name: i + 2 for i, name in enumerate(ACTIVITY_COLUMNS)}  # sampler rows: (at, phase, *columns)

EventKey = tuple[str, str]
Profile = dict[tuple[int, str, str], int]


# ---- the computations (pure; tests/unit/test_bench_aas.py) -------------------------------------

def pct(value: float, truth: float) -> float:
    """Signed error of `value` against `truth`, in % (inf when truth is 0 and value is not)."""
    if truth == 0:
        return 0.0 if value == 0 else math.inf
    return (value / truth - 1.0) * 100.0


def sampled_states(rows: Iterable[Sequence[Any]], snapshots: int) -> dict[str, float]:
    """Client sessions per snapshot by state ('active', 'idle in transaction', ...), from the
    sampler's rows of the bench phase; the denominator is every snapshot, empty ones too."""
    if snapshots <= 0:
        return {}
    counts = Counter(r[COL["state"]] for r in rows if r[COL["backend_type"]] == "client backend")
    return {str(state): n / snapshots for state, n in counts.items()}


def sampled_events(rows: Iterable[Sequence[Any]], snapshots: int,
                   pids: frozenset[int] | None = None) -> dict[EventKey, float]:
    """AAS per wait event of active client sessions (NULL wait = CPU:running), as pgknee's
    analysis counts them; only `pids` when given."""
    if snapshots <= 0:
        return {}
    counts: Counter[EventKey] = Counter()
    for r in rows:
        if r[COL["backend_type"]] != "client backend" or r[COL["state"]] not in ("active", "fastpath function call"):
            continue
        if pids is not None and r[COL["pid"]] not in pids:
            continue
        counts[(r[COL["wait_event_type"]] or "CPU", r[COL["wait_event"]] or "running")] += 1
    return {k: n / snapshots for k, n in counts.items()}


def bench_pids(rows: Iterable[Sequence[Any]], application: str = "pgbench") -> frozenset[int]:
    """The benchmark's backends: client sessions of the application seen by the sampler."""
    return frozenset(int(r[COL["pid"]]) for r in rows
                     if r[COL["backend_type"]] == "client backend" and r[COL["application_name"]] == application)


def profile_events(diff: Profile, pids: frozenset[int], probes: int) -> dict[EventKey, float]:
    """AAS per wait event of `pids` from a profile diff: counts / probes."""
    if probes <= 0:
        return {}
    counts: Counter[EventKey] = Counter()
    for (pid, etype, event), n in diff.items():
        if pid in pids:
            counts[(etype, event)] += n
    return {k: n / probes for k, n in counts.items()}


def compare_events(sampled: dict[EventKey, float], reference: dict[EventKey, float], *,
                   min_aas: float = EVENT_MIN_AAS, target_pct: float = EVENT_TARGET_PCT) -> list[dict[str, Any]]:
    """One row per event either side puts at AAS >= min_aas (CPU and Client events flagged as
    not comparable): both figures, the error of the sampled one in %, and whether it is in target."""
    out = []
    for key in sorted(set(sampled) | set(reference), key=lambda k: -max(sampled.get(k, 0), reference.get(k, 0))):
        s, r = sampled.get(key, 0.0), reference.get(key, 0.0)
        if max(s, r) < min_aas:
            continue
        comparable = key[0] not in NOT_COMPARED_TYPES
        err = pct(s, r) if comparable else None
        out.append({"event": f"{key[0]}:{key[1]}", "sampled": s, "reference": r, "error_pct": err,
                    "comparable": comparable, "ok": None if err is None else abs(err) <= target_pct})
    return out


def totals(states: dict[str, float], counters: dict[str, float], seconds: float) -> dict[str, float]:
    """Sampled active and active + idle in transaction against the counters' (ms) per second."""
    active = states.get("active", 0.0) + states.get("fastpath function call", 0.0)
    idle_x = states.get("idle in transaction", 0.0) + states.get("idle in transaction (aborted)", 0.0)
    clock_active = counters.get("active_time", 0.0) / 1000.0 / seconds
    clock_idle_x = counters.get("idle_in_transaction_time", 0.0) / 1000.0 / seconds
    return {"sampled_active": active, "clock_active": clock_active, "active_error_pct": pct(active, clock_active),
            "sampled_busy": active + idle_x, "clock_busy": clock_active + clock_idle_x,
            "busy_error_pct": pct(active + idle_x, clock_active + clock_idle_x),
            "sampled_idle_in_xact": idle_x, "clock_idle_in_xact": clock_idle_x}


def summarize(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (protocol, clients, priority): the mean errors over rounds, and whether they are in target."""
    groups: dict[tuple[str, int, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["protocol"], r["clients"], r["priority"]), []).append(r)
    out = []
    for (protocol, clients, priority), rs in groups.items():
        act = sum(r["active_error_pct"] for r in rs) / len(rs)
        busy = sum(r["busy_error_pct"] for r in rs) / len(rs)
        ev = [e for r in rs for e in r["events"] if e["comparable"]]
        out.append({"protocol": protocol, "clients": clients, "priority": priority, "steps": len(rs),
                    "active_error_pct": act, "active_ok": abs(act) <= TOTAL_TARGET_PCT,
                    "busy_error_pct": busy, "busy_ok": abs(busy) <= TOTAL_TARGET_PCT,
                    "events_compared": len(ev), "events_ok": sum(1 for e in ev if e["ok"]),
                    "worst_event_error_pct": max((abs(e["error_pct"]) for e in ev), default=None)})
    return out


# ---- the lab ------------------------------------------------------------------------------------

def wait_sampling_available(bindir: Path) -> bool:
    return (bindir.parent / "lib" / "pg_wait_sampling.so").exists()


class Lab:
    """The throwaway server with the workload, pgknee's sampler, the counters' reader and (when
    pg_wait_sampling is loaded) the profile reader and the sleeping reference session, both in
    the 'postgres' database so that none of them is counted in the benchmark database."""

    def __init__(self, cluster: EmbeddedCluster, interval_s: float, wait_sampling: bool) -> None:
        self.cluster = cluster
        self.wait_sampling = wait_sampling
        with cluster.endpoint.connect("setup") as conn:
            row = conn.execute("SHOW server_version_num").fetchone()
            self.server_num = int(row[0]) if row else 150000
        self.activity = ActivitySampler(cluster.endpoint, self.server_num, interval_s)
        self.stats = StatsReader(lambda: cluster.endpoint.connect("stats"))
        other = dataclasses.replace(cluster.endpoint, params={**cluster.endpoint.params, "dbname": "postgres"})
        self.other: Endpoint = other
        self.pconn = other.connect("profile")
        self.ref_conn = other.connect("reference")
        self.ref_pid = int(self.ref_conn.info.backend_pid)
        self._ref_thread: threading.Thread | None = None
        self.fifo = False

    def start(self) -> None:
        self.activity.start()
        if self.wait_sampling:
            self.pconn.execute("CREATE EXTENSION IF NOT EXISTS pg_wait_sampling")
            self._ref_thread = threading.Thread(target=self._sleep, name="aas-reference", daemon=True)
            self._ref_thread.start()

    def _sleep(self) -> None:
        with contextlib.suppress(Exception):  # cancelled at the end
            self.ref_conn.execute("SELECT pg_sleep(1e7)")

    def profile(self) -> Profile:
        if not self.wait_sampling:
            return {}
        rows = self.pconn.execute(queries.text("wait_sampling_profile")).fetchall()
        return {(int(p), str(t), str(e)): int(n) for p, t, e, n in rows}

    def set_fifo(self, on: bool) -> None:
        """SCHED_FIFO 1 (or back to SCHED_OTHER) for the sampler's thread, its backend and the
        pg_wait_sampling collector."""
        if on == self.fifo:
            return
        thread, conn = self.activity._thread, self.activity._conn  # noqa: SLF001 - a bench's experiment
        tids = [t for t in (thread.native_id if thread else None, conn.info.backend_pid if conn else None) if t]
        tids += [int(r[0]) for r in self.pconn.execute(
            "SELECT pid FROM pg_stat_activity WHERE backend_type = 'pg_wait_sampling collector'").fetchall()]
        policy, prio = (os.SCHED_FIFO, 1) if on else (os.SCHED_OTHER, 0)
        for tid in tids:
            os.sched_setscheduler(tid, policy, os.sched_param(prio))
        self.fifo = on

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.set_fifo(False)
        self.activity.close()
        with contextlib.suppress(Exception):
            self.ref_conn.cancel()
        if self._ref_thread is not None:
            self._ref_thread.join(timeout=10)
        for c in (self.ref_conn, self.pconn, self.stats.conn):
            with contextlib.suppress(Exception):
                c.close()


def run_pgbench(run: PgbenchRun, env: dict[str, str], cwd: str, run_as: proc.RunAs | None) -> float:
    """One pgbench run to its end; its TPS."""
    p = proc.spawn(run.argv(), env=env, run_as=run_as, cwd=cwd)
    with proc.guarded(p):
        out, err = p.communicate(timeout=run.duration_s + 120)
    if p.returncode != 0:
        raise RuntimeError(f"pgbench exited with {p.returncode}: {err.decode(errors='replace').strip()[-300:]}")
    for line in out.decode(errors="replace").splitlines():
        if line.startswith("tps = "):
            return float(line.split()[2])
    return math.nan


def one_step(lab: Lab, run: PgbenchRun, env: dict[str, str], cwd: str) -> dict[str, Any]:
    """One measured step: counters settled before and after, the profile read around pgbench, the
    sampler in its 'bench' phase while pgbench runs."""
    before = settled(lambda: snapshot(lab.stats.conn), 15.0)
    lab.activity.begin_step(StepProcesses(0))
    tp0 = time.time()
    prof0 = lab.profile()
    lab.activity.phase = "bench"
    t0 = time.time()
    tps = run_pgbench(run, env, cwd, lab.cluster.run_as)
    t1 = time.time()
    lab.activity.phase = "post"
    prof1 = lab.profile()
    tp1 = time.time()
    samples = next(iter(lab.activity.end_step()), None)
    after = settled(lambda: snapshot(lab.stats.conn), 15.0)
    seconds = t1 - t0
    snaps = [s for s in (samples.snapshots if samples else ()) if s[1] == "bench"]
    rows = [r for r in (samples.rows if samples else ()) if r[1] == "bench"]
    counters = {k: after[k] - before[k] for k in ("active_time", "idle_in_transaction_time") if k in after}
    out: dict[str, Any] = {"seconds": seconds, "tps": tps, "snapshots": len(snaps),
                           "own_aas_max": sum(s[-1] for s in snaps) / 1000.0 / seconds,
                           **totals(sampled_states(rows, len(snaps)), counters, seconds)}
    diff = profile_diff(prof0, prof1)
    probes = probes_of(diff, lab.ref_pid)
    pids = bench_pids(rows)
    out.update({"probes": probes, "probe_period_ms": (tp1 - tp0) * 1000 / probes if probes else None,
                "events": compare_events(sampled_events(rows, len(snaps), pids), profile_events(diff, pids, probes))
                if probes else []})
    return out


# ---- the command --------------------------------------------------------------------------------

def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--clients", default="8,32", help="client counts (default 8,32)")
    p.add_argument("--protocols", default="simple,prepared,extended", help="pgbench protocols")
    p.add_argument("--priorities", default="normal,fifo",
                   help="sampler priorities: normal, fifo (SCHED_FIFO, root only); default both")
    p.add_argument("--seconds", type=int, default=30, help="length of each step (default 30)")
    p.add_argument("--rounds", type=int, default=1, help="rounds over every combination (default 1)")
    p.add_argument("--interval", default="100ms", help="pg_stat_activity sampling interval (default 100ms)")
    p.add_argument("--steady", action="store_true",
                   help="no commit fsync, checkpoints or autovacuum: CPU-bound (default: pgknee's durable settings)")
    p.add_argument("--json", metavar="PATH", help="also write every step's figures there")
    a = p.parse_args(argv)
    a.clients = [int(x) for x in a.clients.split(",") if x]
    a.protocols = [x for x in a.protocols.split(",") if x]
    a.priorities = [x for x in a.priorities.split(",") if x]
    if set(a.priorities) - {"normal", "fifo"} or set(a.protocols) - {"simple", "extended", "prepared"}:
        p.error("priorities are normal and fifo; protocols simple, extended and prepared")
    if "fifo" in a.priorities and os.geteuid() != 0:
        p.error("--priorities fifo needs root (SCHED_FIFO)")
    if a.seconds < 5 or a.rounds < 1 or not a.clients or min(a.clients) < 1:
        p.error("need --seconds >= 5, --rounds >= 1 and client counts >= 1")
    return a


def plan_steps(args: argparse.Namespace) -> Iterator[tuple[int, str, int, str]]:
    """(round, protocol, clients, priority), the priorities of one combination next to each other
    and their order alternating from round to round (A B, B A)."""
    for rnd in range(args.rounds):
        for protocol in args.protocols:
            for clients in args.clients:
                prios = args.priorities if rnd % 2 == 0 else list(reversed(args.priorities))
                for prio in prios:
                    yield rnd, protocol, clients, prio


def fmt_pct(x: float | None) -> str:
    return "   n/a" if x is None or math.isinf(x) else f"{x:+6.1f}%"


def print_step(r: dict[str, Any]) -> None:
    print(f"{r['protocol']:>8} c{r['clients']:<3} {r['priority']:>6}  {r['snapshots']:4d} snaps {r['tps']:7.0f} tps  "
          f"active {r['sampled_active']:6.2f} vs clock {r['clock_active']:6.2f} {fmt_pct(r['active_error_pct'])}  "
          f"active+idle-in-xact {r['sampled_busy']:6.2f} vs {r['clock_busy']:6.2f} {fmt_pct(r['busy_error_pct'])}  "
          f"own <= {r['own_aas_max']:.3f}", flush=True)
    if r["probes"]:
        print(f"{'':21}pg_wait_sampling: {r['probes']} probes, one per {r['probe_period_ms']:.1f} ms", flush=True)
    for e in r["events"]:
        mark = "" if e["comparable"] else "  (not compared: pg_wait_sampling counts it in any state)"
        ok = "" if e["ok"] is None else (" ok" if e["ok"] else " OFF")
        print(f"{'':21}{e['event']:<28} sampled {e['sampled']:6.2f} vs profile {e['reference']:6.2f} "
              f"{fmt_pct(e['error_pct'])}{ok}{mark}", flush=True)


def print_summary(summary: Sequence[dict[str, Any]]) -> None:
    print(f"\n=== pgknee sampled AAS vs the server's clocks (targets: total {TOTAL_TARGET_PCT:g}%, per event "
          f"{EVENT_TARGET_PCT:g}% at AAS >= {EVENT_MIN_AAS:g}) ===")
    print(f"{'protocol':>8} {'clients':>7} {'sampler':>7} {'steps':>5}  {'active':>8}  {'active+iit':>10}  "
          f"{'events ok':>9}  {'worst event':>11}")
    for s in summary:
        ev = f"{s['events_ok']}/{s['events_compared']}"
        worst = "" if s["worst_event_error_pct"] is None else f"{s['worst_event_error_pct']:.1f}%"
        print(f"{s['protocol']:>8} {s['clients']:>7} {s['priority']:>7} {s['steps']:>5}  "
              f"{fmt_pct(s['active_error_pct']):>8}{'' if s['active_ok'] else '*'}  "
              f"{fmt_pct(s['busy_error_pct']):>10}{'' if s['busy_ok'] else '*'}  {ev:>9}  {worst:>11}")
    print("(* outside the target)")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    interval = parse_seconds(args.interval, "--interval")
    pgbench = find_pgbench()
    _, version_num = pgbench_version(pgbench)
    bindir = find_bindir()
    ws = wait_sampling_available(bindir)
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="pgknee-bench-") as tmp:
        cluster = EmbeddedCluster(bindir, {**(WAIT_SAMPLING_SETTINGS if ws else {}),
                                           **(STEADY_SETTINGS if args.steady else {})})
        lab: Lab | None = None
        try:
            print(f"starting a throwaway PostgreSQL in {cluster.root} "
                  f"({'with' if ws else 'without'} pg_wait_sampling) ...", flush=True)
            cluster.start()
            cluster.create_database()
            workload = EWallet(WorkloadSpec())
            with cluster.endpoint.connect("setup") as conn:
                workload.install(conn, say=lambda t: print(t, flush=True), run_pgbench=lambda args, schema: None)
            os.chmod(tmp, 0o711)  # pgbench runs as the server's user when this runs as root
            scripts = write_scripts([(s, s.text) for s in workload.sources()], Path(tmp), cluster.run_as)
            env = cluster.endpoint.child_env(Path(tmp), cluster.run_as)
            lab = Lab(cluster, interval, ws)
            lab.start()
            cpus = os.cpu_count() or 1
            for rnd, protocol, clients, prio in plan_steps(args):
                run = PgbenchRun(pgbench=pgbench, clients=clients, threads=min(clients, cpus),
                                 duration_s=args.seconds, protocol=protocol, scripts=tuple(scripts),
                                 defines=tuple(workload.defines().items()), log_prefix=None, max_tries=3,
                                 version_num=version_num, progress_s=0)
                lab.set_fifo(prio == "fifo")
                r = {"round": rnd, "protocol": protocol, "clients": clients, "priority": prio,
                     **one_step(lab, run, env, tmp)}
                results.append(r)
                print_step(r)
        except (KeyboardInterrupt, RuntimeError) as e:
            print(f"stopped: {e or type(e).__name__}", file=sys.stderr, flush=True)
            return 130 if isinstance(e, KeyboardInterrupt) else 1
        finally:
            if lab is not None:
                lab.close()
            cluster.close()
    summary = summarize(results)
    print_summary(summary)
    if args.json:
        Path(args.json).write_text(json.dumps({"steps": results, "summary": summary}, indent=1, default=str) + "\n")
        print(f"figures written to {args.json}")
    return 0


if __name__ == "__main__":
    threading.excepthook = lambda a: print(f"thread error: {a.exc_value}", file=sys.stderr)
    raise SystemExit(main())
