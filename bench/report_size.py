"""How slow and how big is the report of a long run, as a user meets it? A synthetic *store* of
a one-hour run is written through pgknee's own store writer (migrations, RunWriter, the rows a
real step hands it): per step its pgbench results and scripts, progress every second, OS
samples every second, pg_stat_activity snapshots at 10 Hz with each non-idle session's row
(wait event, state, statement text), pg_stat_database deltas. Then `pgknee report RUN -o
X.html --store S` and `pgknee show RUN --store S` run as child processes, timed from the
outside (wall time, peak RSS), interleaved over the code trees given (--src: this one, and
e.g. a copy of main's, `git archive main src | tar -x -C /tmp/base`), medians and spread.
The in-memory shape of before (article 002's 20 counts x 3 reps x 2 variants x 600 s) is
built and rendered too (no store: the analysis and the renderers alone).

Shapes (steps x seconds add up to the measured time):
  hour     2 variants x 10 counts (8..80) x 3 reps x 60 s = 1 h, ~1.2 M session rows
  linear   linear-best-of-3: 1 variant x 20 counts (50..1000) x 3 reps x 60 s = 1 h, ~15 M rows
  tiny     2 x 3 x 1 x 5 s (the unit tests')

Targets: the report in <= 5 s, its HTML <= 5 MB.

    .venv/bin/python bench/report_size.py [--shape hour] [--repeat 3] [--src src --src /tmp/base/src]
                                          [--keep DIR] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TARGET_S = 5.0
TARGET_MB = 5.0
T0 = 1_767_225_600.0  # 2026-01-01 00:00:00 UTC
SAMPLE_HZ = 10
STATEMENTS = (  # pgbench's TPC-B, as pg_stat_activity shows it (prepared: $n)
    "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;",
    "SELECT abalance FROM pgbench_accounts WHERE aid = $1;",
    "UPDATE pgbench_tellers SET tbalance = tbalance + $1 WHERE tid = $2;",
    "UPDATE pgbench_branches SET bbalance = bbalance + $1 WHERE bid = $2;",
    "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP);",
    "END;",
)


@dataclass(frozen=True)
class Shape:
    name: str
    variants: tuple[str, ...]
    clients: tuple[int, ...]
    reps: int
    seconds: int

    @property
    def steps(self) -> int:
        return len(self.variants) * len(self.clients) * self.reps

    @property
    def measured_s(self) -> int:
        return self.steps * self.seconds


SHAPES = {
    "hour": Shape("hour", ("normal", "pipeline"), tuple(range(8, 81, 8)), 3, 60),
    "linear": Shape("linear", ("base",), tuple(range(50, 1001, 50)), 3, 60),
    "tiny": Shape("tiny", ("normal", "pipeline"), (1, 2, 4), 1, 5),
}


def model_tps(clients: int, variant: str) -> float:
    """A USL curve with a peak near 40 clients; the second variant 30% faster."""
    tps = 900.0 * clients / (1 + 0.04 * (clients - 1) + 0.0006 * clients * (clients - 1))
    return tps * (1.3 if variant in ("pipeline", "pooled") else 1.0)


def summary(values: Sequence[float]) -> dict[str, float]:
    """Median, min, max and the spread (max - min) / median of repeated measurements."""
    med = statistics.median(values)
    return {"median": med, "min": min(values), "max": max(values),
            "spread": (max(values) - min(values)) / med if med else 0.0, "n": len(values)}


def stored_sessions(clients: int, rnd: random.Random) -> int:
    """Non-idle client sessions in one snapshot (the sampler stores those): most of them, some
    idle between transactions."""
    return max(0, min(clients, round(clients * rnd.uniform(0.7, 0.95))))


# ---- the synthetic store ------------------------------------------------------------------------------


def _iso(epoch: float) -> str:
    from pgknee.base.clock import iso_of

    return iso_of(epoch)


def _waits(clients: int) -> tuple[list[tuple[str | None, str | None, str]], list[float]]:
    """(wait_event_type, wait_event, state) of a stored session, and their weights at this count."""
    events = [(None, None, "active"), ("LWLock", "WALWrite", "active"), ("IO", "WALSync", "active"),
              ("Lock", "transactionid", "active"), ("LWLock", "BufferContent", "active"),
              ("Client", "ClientRead", "idle in transaction")]
    contention = clients / 80
    return events, [2.0, 0.5 + contention, 0.6, 0.2 + 2 * contention, 0.2 * contention, 0.4]


def activity_rows(step_start: float, seconds: float, phase: str, clients: int, rnd: random.Random
                  ) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Snapshots at 10 Hz over `seconds` from `step_start`, and their sessions' rows, in
    collect.activity's column order."""
    from pgknee.collect.activity import ACTIVITY_COLUMNS

    events, weights = _waits(clients)
    snaps: list[tuple[Any, ...]] = []
    rows: list[tuple[Any, ...]] = []
    base = dict.fromkeys(ACTIVITY_COLUMNS)
    base.update(datid=16384, datname="pgknee", usesysid=10, usename="pgknee", application_name="pgbench",
                client_addr="127.0.0.1", backend_type="client backend")
    for k in range(int(seconds * SAMPLE_HZ)):
        epoch = step_start + k / SAMPLE_HZ + rnd.uniform(0, 0.02)
        at = _iso(epoch)
        n = stored_sessions(clients, rnd)
        picks = rnd.choices(range(len(events)), weights, k=n)
        idle_in_xact = sum(1 for p in picks if events[p][2] != "active")
        snaps.append((at, phase, epoch, clients + 6, clients, n - idle_in_xact, idle_in_xact, 0, rnd.uniform(0.4, 2.5)))
        for s, p in enumerate(picks):
            wtype, wevent, state = events[p]
            row = {**base, "pid": 10_000 + s, "client_port": 40_000 + s, "backend_start": _iso(step_start - 1),
                   "xact_start": at, "query_start": at, "state_change": at, "wait_event_type": wtype,
                   "wait_event": wevent, "state": state, "backend_xid": str(900_000 + k), "backend_xmin": "899990",
                   "query_id": -4_000_000_000_000 + p, "query": STATEMENTS[(s + k) % len(STATEMENTS)]}
            rows.append((at, phase, *row.values()))
    return snaps, rows


def os_rows(start: float, seconds: int, phase: str, clients: int, rnd: random.Random) -> list[Any]:
    """One /proc sample a second (pgknee.model.samples.OsSample)."""
    from pgknee.model.samples import OsSample

    out = []
    busy = min(95.0, 20 + clients)
    for s in range(seconds):
        epoch = start + s + 0.5
        user = busy * rnd.uniform(0.6, 0.7)
        system = busy - user
        out.append(OsSample(phase, epoch, user, 0.0, system, 1.0, 0.5, 0.0, 100 - busy - 1.5, 1.0 + clients / 20,
                    20_000 + 300 * clients, 2 + clients // 8, 0, 24_000_000, 20_000_000, 15_000_000, 3_000_000,
                    min(180.0, 10 + clients), None))
    return out


def step_result(step_id: int, start: float, shape: Shape, variant: str, clients: int, rnd: random.Random) -> Any:
    """What run.step hands the writer for one completed step (its sampled sessions go to the
    writer in batches before, as the sampler's sink does: activity_rows)."""
    from pgknee.model.facts import MemoryAtEnd, StepFacts
    from pgknee.model.results import (
        LatencyStats,
        PgbenchSummary,
        ProgressPoint,
        ScriptResult,
        StepMeasurement,
        StepResult,
    )
    from pgknee.model.samples import OsSamples
    from pgknee.model.server import DatabaseStep

    secs = shape.seconds
    tps = model_tps(clients, variant) * rnd.uniform(0.95, 1.05)
    lat = 1000.0 * clients / tps
    tx = int(tps * secs)
    stats = LatencyStats(tx, lat, lat / 2, lat / 10, lat * 0.9, lat * 2, lat * 3, lat * 9)
    script = ScriptResult(0, "tpcb-like", 1, tx, 0, 0, tps, stats)
    m = StepMeasurement(tx, 0, 0, 0, tps, stats, (script,), {})
    progress = tuple(ProgressPoint(float(s), tps * rnd.uniform(0.85, 1.15), lat * rnd.uniform(0.9, 1.1), lat / 2, 0)
                     for s in range(1, secs + 1))
    os_ = (os_rows(start - 1, 1, "pre", clients, rnd) + os_rows(start, secs, "bench", clients, rnd)
           + os_rows(start + secs, 1, "post", clients, rnd))
    pg = {"xact_commit": float(tx), "xact_rollback": 0.0, "blks_hit": tx * 40.0, "blks_read": tx * 0.1,
          "tup_updated": tx * 3.0, "tup_inserted": float(tx), "active_time": secs * 1000.0 * min(clients, 2),
          "deadlocks": 0.0}
    return StepResult(step_id, "completed", None, 0, start, start + secs,
                      PgbenchSummary(tx, 0, tps, lat, 3.0, float(secs)), m, tps, progress,
                      StepFacts((MemoryAtEnd(mem_available_kb=20_000_000.0),)),
                      (DatabaseStep(**pg), OsSamples(tuple(os_))))


def _step_row(seq: int, shape: Shape, variant: str, clients: int, rep: int) -> dict[str, Any]:
    return {"seq": seq, "variant": variant, "clients": clients, "rep": rep, "threads": min(clients, 2),
            "protocol": "prepared", "duration_s": shape.seconds, "warmup_s": 0,
            "pipeline": int(variant == "pipeline"), "connect_per_txn": 0, "rate": None, "think_ms": 0.0,
            "pooler_kind": None, "pool_mode": None, "pool_size": None, "pool_reserve": 0, "idle": 0,
            "idle_kind": None, "settings_json": None}


def _order(shape: Shape) -> Iterator[tuple[int, int, str]]:
    """(client count, rep, variant) in a run's order: counts ascending, variants interleaved."""
    for c in shape.clients:
        for rep in range(1, shape.reps + 1):
            for v in shape.variants:
                yield c, rep, v


def write_store(path: Path, shape: Shape, seed: int = 7) -> str:
    """A completed run of `shape` in a new store at `path`, written as a run writes it; its id."""
    from pgknee.plan import Plan, parse_variant
    from pgknee.store.db import Store
    from pgknee.store.writer import RunWriter

    rnd = random.Random(seed)
    run_id = f"20260101-000000-{shape.name[:4]}"
    store = Store(path)
    w = RunWriter(store, run_id)
    plan = Plan(clients=shape.clients, duration_s=shape.seconds, reps=shape.reps,
                variants=tuple(parse_variant(v, "prepared") for v in shape.variants))
    w.create_run(workload="tpcb", target_kind="embedded", target_label="pgknee@/tmp:5432/pgknee",
                 plan=plan.to_dict(), steps_planned=shape.steps)
    w.set_environment({"host.cpus": 2, "host.mem_gb": 23.5, "server.version": "15.18", "server.version_num": 150018,
                       "pgbench.version": "15.18", "target.kind": "embedded", "target.local": "true",
                       "workload.workload": "tpcb", "workload.scale": 10, "setting.max_connections": 1100})
    w.add_command(None, "pgknee", ["pgknee", "run", "--clients", ",".join(map(str, shape.clients))])
    t = T0
    for seq, (c, rep, v) in enumerate(_order(shape), start=1):
        step_id = w.begin_step(_step_row(seq, shape, v, c, rep))
        w.add_command(step_id, "bench", ["pgbench", "-c", str(c), "-T", str(shape.seconds), "-P", "1"])
        for phase, start, secs in (("pre", t - 1, 1), ("bench", t, shape.seconds), ("post", t + shape.seconds, 1)):
            for chunk in range(0, secs, 5):  # the sampler's sink: a batch every 5 s
                snaps, rows = activity_rows(start + chunk, min(5, secs - chunk), phase, c, rnd)
                w.write_activity(step_id, snaps, rows)
        w.write_step(step_result(step_id, t, shape, v, c, rnd))
        t += shape.seconds + 8
    w.end_run("completed", None)
    store.close()
    return run_id


# ---- timing from the outside ---------------------------------------------------------------------------


def run_cli(src: str, argv: Sequence[str]) -> tuple[float, float, float, int]:
    """`python -m pgknee ARGV` with PYTHONPATH=src: (wall seconds, CPU seconds (user + system:
    what a busy machine's wall time hides), peak RSS MB, exit code)."""
    env = {**os.environ, "PYTHONPATH": src}
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "pgknee", *argv], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    err = p.stderr.read().decode() if p.stderr else ""
    if p.returncode:
        print(f"  {src}: pgknee {' '.join(argv)} exited {p.returncode}: {err.strip()[-400:]}", file=sys.stderr)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, p.returncode


def measure(srcs: Sequence[str], store: Path, run_id: str, out: Path, repeat: int) -> dict[str, Any]:
    """report and show, each code tree in turn (A B A B ...), `repeat` times."""
    raw: dict[str, dict[str, list[float]]] = {s: {} for s in srcs}
    for _ in range(repeat):
        for src in srcs:
            html = out / f"report-{srcs.index(src)}.html"
            for what, argv in (("report", ["report", run_id, "-o", str(html), "--store", str(store)]),
                               ("show", ["show", run_id, "--store", str(store)])):
                wall, cpu, mb, rc = run_cli(src, argv)
                if rc == 0:
                    for k, v in ((f"{what}_s", wall), (f"{what}_cpu_s", cpu), (f"{what}_mb", mb)):
                        raw[src].setdefault(k, []).append(v)
                    if what == "report":
                        raw[src].setdefault("html_mb", []).append(html.stat().st_size / 1e6)
    return {s: {k: summary(v) for k, v in d.items()} for s, d in raw.items()}


def in_memory(repeat: int) -> dict[str, Any]:
    """Article 002's shape before: 20 counts x 3 reps x 2 variants x 600 s, analysed and
    rendered in this process (RunData built directly)."""
    from pgknee.analyze.run import build
    from pgknee.report import document, html

    data = synthetic(20, 3, 600)
    times, size = [], 0
    for _ in range(repeat):
        t0 = time.perf_counter()
        text = html.render(document.build([build(data)]))
        times.append(time.perf_counter() - t0)
        size = len(text.encode())
    return {"steps": len(data.steps), "html_mb": size / 1e6, "build_s": summary(times)}


def synthetic(counts: int, reps: int, seconds: int) -> Any:
    """The RunData of before, built directly (no store): 20 h of steps in memory."""
    from pgknee.model.results import RunData, RunRecord, StepRecord
    from pgknee.model.samples import OsSample, OsSamples
    from pgknee.plan import Plan, parse_variant

    rnd = random.Random(7)
    clients = [50 * (i + 1) for i in range(counts)]
    variants = ["direct", "pooled"]
    plan = Plan(clients=tuple(clients), duration_s=seconds, reps=reps,
                variants=tuple(parse_variant(v, "prepared") for v in variants))
    run = RunRecord("20260101-000000-bench", "2026-01-01 00:00:00", None, "completed", None, "tpcb", "embedded",
                    "pgknee@/tmp:5432/pgknee", json.dumps(plan.to_dict()), counts * reps * len(variants))
    steps, os_, waits, snaps, progress = [], {}, {}, {}, {}
    t = 1.7e9
    sid = 0
    for c in clients:
        for rep in range(1, reps + 1):
            for v in variants:
                sid += 1
                tps = 1000 * c / (1 + 0.05 * (c - 1) + 0.00002 * c * (c - 1)) * rnd.uniform(0.9, 1.1)
                lat = 1000 * c / tps
                steps.append(StepRecord(
                    step_id=sid, run_id=run.run_id, seq=sid, variant=v, clients=c, rep=rep, threads=2,
                    protocol="prepared", duration_s=seconds, warmup_s=0, status="completed", status_reason=None,
                    started_at="2026-01-01", bench_start=t, bench_end=t + seconds, transactions=int(tps * seconds),
                    failed=0, retried=0, retries=0, tps=tps, lat_avg_ms=lat, lat_stddev_ms=lat / 2,
                    lat_min_ms=lat / 10, lat_p50_ms=lat, lat_p95_ms=lat * 2, lat_p99_ms=lat * 3, lat_max_ms=lat * 9,
                    tps_pgbench=tps, lat_avg_pgbench_ms=lat, conn_time_ms=10.0, tps_db=tps))
                progress[sid] = [(float(s), tps * rnd.uniform(0.8, 1.2)) for s in range(1, seconds + 1)]
                os_[sid] = [OsSample("bench", t + s, 50, 0, 30, 1, 5, 1, 13, 2 + c / 100, 20000, 3 + c // 50, 0,
                                     8 << 20, 4 << 20, 1 << 20, 2 << 20, 20.0) for s in range(seconds)]
                n = seconds * 10
                waits[sid] = [("CPU", "running", n), ("LWLock", "WALWrite", n * c // 100), ("IO", "WALSync", n // 2),
                              ("Client", "ClientRead", n // 3), ("Lock", "transactionid", n // 10)]
                snaps[sid] = (n, float(c), 0.9)
                t += seconds + 5
    return RunData(run=run, env={"host.cpus": "2", "server.version": "15.18", "pgbench.version": "15.18"},
                   commands=[], steps=steps, scripts={}, failures={}, waits=waits, waits_bg={},
                   snaps=snaps, progress=progress, records={i: (OsSamples(tuple(rows)),) for i, rows in os_.items()})


def _print(shape: Shape, rows: int, store_mb: float, results: dict[str, Any]) -> None:
    print(f"store: shape {shape.name}, {shape.steps} steps x {shape.seconds} s = {shape.measured_s / 3600:.2f} h "
          f"measured, {rows:,} session rows, {store_mb:,.0f} MB")
    for src, r in results.items():
        rep, show = r.get("report_s"), r.get("show_s")
        if rep is None or show is None:
            print(f"  {src}: failed")
            continue
        print(f"  {src}:\n    report {rep['median']:.2f} s wall (min {rep['min']:.2f}, max {rep['max']:.2f}, "
              f"n {rep['n']}), {r['report_cpu_s']['median']:.2f} s CPU, HTML {r['html_mb']['median']:.2f} MB, "
              f"peak RSS {r['report_mb']['median']:.0f} MB\n"
              f"    show {show['median']:.2f} s wall (min {show['min']:.2f}, max {show['max']:.2f}), "
              f"{r['show_cpu_s']['median']:.2f} s CPU, peak RSS {r['show_mb']['median']:.0f} MB\n"
              f"    target <= {TARGET_S:g} s and <= {TARGET_MB:g} MB: "
              + ("met" if rep["median"] <= TARGET_S and r["html_mb"]["median"] <= TARGET_MB else "NOT met"))


FIT_CODE = """
import json, sys, time
from pgknee.analyze import usl
groups = json.loads(sys.argv[1])
t0 = time.perf_counter()
f = usl.fit(groups)
print(json.dumps({"s": time.perf_counter() - t0, "draws": getattr(f, "draws", usl.BOOTSTRAP),
                  "samples": len(f.samples), "method": f.method}))
"""


def bootstrap_figures(srcs: Sequence[str], repeat: int) -> dict[str, Any]:
    """One USL fit with its bootstrap (10 counts x 3 repetitions, the hour shape's curve), in a
    child process per code tree, interleaved; the fit's own time (imports left out)."""
    rnd = random.Random(3)
    groups = [(float(c), [model_tps(c, "normal") * rnd.uniform(0.95, 1.05) for _ in range(3)])
              for c in SHAPES["hour"].clients]
    runs: dict[str, list[dict[str, Any]]] = {s: [] for s in srcs}
    for _ in range(repeat):
        for src in srcs:
            out = subprocess.run([sys.executable, "-c", FIT_CODE, json.dumps(groups)], capture_output=True, text=True,
                                 env={**os.environ, "PYTHONPATH": src}, check=True).stdout
            runs[src].append(json.loads(out))
    return {s: {**{k: r[0][k] for k in ("draws", "samples", "method")}, "fit_s": summary([x["s"] for x in r])}
            for s, r in runs.items()}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shape", choices=sorted(SHAPES), default="hour")
    p.add_argument("--repeat", type=int, default=3, help="runs of each command per code tree (medians reported)")
    p.add_argument("--src", action="append", help="a code tree's src directory (repeatable; default: this one's)")
    p.add_argument("--keep", metavar="DIR", help="keep the store there, and reuse it if it is there")
    p.add_argument("--no-in-memory", action="store_true", help="skip the 20 h in-memory shape")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    a = p.parse_args()
    here = str(Path(__file__).resolve().parent.parent / "src")
    srcs = [str(Path(s).resolve()) for s in (a.src or [here])]
    sys.path.insert(0, here)  # the store writer and the in-memory shape: this tree
    shape = SHAPES[a.shape]
    with tempfile.TemporaryDirectory(prefix="pgknee-report-bench-") as tmp:
        folder = Path(a.keep) if a.keep else Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        store = folder / f"{shape.name}.db"
        t0 = time.perf_counter()
        if not store.exists():
            write_store(store, shape)
            print(f"wrote {store} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
        import sqlite3

        with sqlite3.connect(f"file:{store}?mode=ro", uri=True) as con:
            rows = con.execute("SELECT count(*) FROM snap_pg_stat_activity").fetchone()[0]
            run_id = con.execute("SELECT run_id FROM runs").fetchone()[0]
        results = measure(srcs, store, run_id, Path(tmp), a.repeat)
        _print(shape, rows, store.stat().st_size / 1e6, results)
    figures: dict[str, Any] = {"shape": shape.__dict__, "measured_s": shape.measured_s, "session_rows": rows,
                               "results": results, "bootstrap": bootstrap_figures(srcs, max(3, a.repeat))}
    for src, b in figures["bootstrap"].items():
        print(f"  {src}: bootstrap {b['draws']:,} draws ({b['method']}: {b['samples']:,} fits), one fit of 10 counts "
              f"x 3 reps in {b['fit_s']['median'] * 1000:.0f} ms (min {b['fit_s']['min'] * 1000:.0f}, "
              f"max {b['fit_s']['max'] * 1000:.0f})")
    if not a.no_in_memory:
        figures["in_memory"] = m = in_memory(max(1, a.repeat // 2))
        print(f"in memory (20 counts x 3 reps x 2 variants x 600 s, {m['steps']} steps, no store): HTML "
              f"{m['html_mb']:.2f} MB built in {m['build_s']['median']:.1f} s")
    if a.json:
        Path(a.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
