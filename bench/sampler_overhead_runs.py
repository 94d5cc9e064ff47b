"""What pgknee's collection costs the benchmark, compared run against run.

The companion of sampler_overhead.py (which interleaves within one pgbench run,
second by second): this one compares whole `pgknee run` invocations, as a user
would, and shows how large run-to-run noise is on this machine.

Runs the same pgbench step (e-wallet workload, 2 x the CPU count in clients)
with and without pgknee's samplers (pg_stat_activity at --interval, /proc at the
default 1 s) and compares the TPS. Each measurement is one real
`python -m pgknee run` invocation against one throwaway PostgreSQL cluster
started for the whole benchmark (the workload is seeded once, by an unmeasured
warm-up run).

Every round runs three arms in rotating order (off, on, off2; then on, off2,
off; ...), so drift of a shared, noisy machine hits every arm alike:

- on/off    the overhead: TPS with samplers over TPS without, per round;
- off2/off  the A/A noise: two runs without samplers, per round.

Both ratios have the same denominator, so their spreads are directly
comparable. The summary gives medians and min..max over the rounds, never a
single run. The target is at most 1 % TPS at the default 100 ms interval.

Run it with

    .venv/bin/python bench/sampler_overhead_runs.py [--rounds 5] [--seconds 10] [--interval 100ms]

It takes about (3 x rounds + 1) x (seconds + ~4 s) plus a few seconds of setup.
The server runs with STEADY_SETTINGS (below) to keep the A/A noise small. Besides
the TPS ratios it reports the direct cost: the sampler's measured query time per
second, which bounds the server CPU it takes.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from psycopg.conninfo import make_conninfo

from pgknee.system import proc
from pgknee.targets.local import EmbeddedCluster, find_bindir

ARMS = ("off", "on", "off2")
TARGET_OVERHEAD = 0.01
# The server is tuned for steadiness, not realism: no autovacuum, no checkpoint and
# no commit fsync inside the benchmark, so the A/A noise is as small as this shared
# machine allows, and the workload is CPU-bound: the worst case for the samplers,
# which compete with the server for the same two cores.
STEADY_SETTINGS = {"autovacuum": "off", "checkpoint_timeout": "1h", "max_wal_size": "16GB",
                   "synchronous_commit": "off"}


@dataclass(frozen=True)
class Setup:
    """What every pgknee invocation of the benchmark shares."""

    dsn: str
    env: dict[str, str]
    clients: int
    seconds: int
    interval: str
    work_dir: Path


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--rounds", type=int, default=6, help="interleaved rounds of off, on, off2 (default 6)")
    p.add_argument("--seconds", type=int, default=10, help="measured seconds per pgbench step (default 10)")
    p.add_argument("--interval", default="100ms",
                   help="pg_stat_activity sampling interval of the 'on' arm (default 100ms)")
    a = p.parse_args(argv)
    if a.rounds < 2:
        p.error("--rounds must be at least 2 (medians of one round mean nothing)")
    if a.seconds < 1:
        p.error("--seconds must be at least 1")
    return a


def arm_flags(arm: str, interval: str) -> list[str]:
    if arm == "on":
        return ["--sample-interval", interval]  # OS sampling at its default interval (1 s)
    return ["--sample-interval", "0", "--os-interval", "0"]


def run_pgknee(setup: Setup, arm: str, tag: str) -> float:
    """One `pgknee run` of a single step; returns its TPS (from pgbench's transaction log)."""
    store = setup.work_dir / f"{tag}.db"
    out_json = setup.work_dir / f"{tag}.json"
    argv = [sys.executable, "-m", "pgknee", "run", "--dsn", setup.dsn, "--clients", str(setup.clients),
            "--duration", f"{setup.seconds}s", "--scale", "1", "--store", str(store), "--json", str(out_json),
            "--quiet", *arm_flags(arm, setup.interval)]
    # Own session: a terminal Ctrl-C reaches only this script, which then stops pgknee with SIGINT
    # and waits for it, so pgknee can stop pgbench and clean up its own temporary files.
    p = subprocess.Popen(argv, env=setup.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = p.communicate(timeout=setup.seconds + 180)
    except BaseException:
        stop_child(p)
        raise
    if p.returncode != 0:
        tail = "\n".join((err or out).decode(errors="replace").strip().splitlines()[-15:])
        raise RuntimeError(f"pgknee run ({arm}) exited with {p.returncode}:\n{tail}")
    step = json.loads(out_json.read_text())["steps"][0]
    if step.get("status") != "completed" or not step.get("tps"):
        raise RuntimeError(f"pgknee run ({arm}): step {step.get('status')}: {step.get('status_reason')}")
    return float(step["tps"])


def stop_child(p: subprocess.Popen[bytes]) -> None:
    """SIGINT (pgknee's own clean stop), then SIGTERM, then SIGKILL."""
    for sig, grace in ((signal.SIGINT, 45.0), (signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        if p.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            p.communicate(timeout=grace)


def round_order(i: int) -> list[str]:
    k = i % len(ARMS)
    return [*ARMS[k:], *ARMS[:k]]


def measure(setup: Setup, rounds: int) -> dict[str, list[float]]:
    t0 = time.monotonic()
    print("warm-up (unmeasured, seeds the workload on first use) ...", flush=True)
    tps = run_pgknee(setup, "off", "warmup")
    print(f"warm-up: {tps:,.1f} tps ({time.monotonic() - t0:.0f} s)", flush=True)
    results: dict[str, list[float]] = {arm: [] for arm in ARMS}
    for i in range(rounds):
        for arm in round_order(i):
            tps = run_pgknee(setup, arm, f"r{i + 1}-{arm}")
            results[arm].append(tps)
            print(f"round {i + 1}/{rounds}  {arm:<4}  {tps:10,.1f} tps   ({time.monotonic() - t0:.0f} s)",
                  flush=True)
    return results


def pct(x: float) -> str:
    return f"{x * 100:+.1f}%"


def spread(xs: Sequence[float], fmt: str = "{:,.1f}") -> str:
    return f"{fmt.format(min(xs))}..{fmt.format(max(xs))}"


def summarize(results: dict[str, list[float]], cpus: int, setup: Setup, rounds: int) -> str:
    off, on, off2 = results["off"], results["on"], results["off2"]
    ratio = [a / b - 1 for a, b in zip(on, off, strict=True)]  # on/off - 1
    aa = [a / b - 1 for a, b in zip(off2, off, strict=True)]  # off2/off - 1
    both = [a / ((b + c) / 2) - 1 for a, b, c in zip(on, off, off2, strict=True)]
    aa_abs = [abs(x) for x in aa]
    med_ratio, med_aa = statistics.median(ratio), statistics.median(aa_abs)
    overhead = -med_ratio  # positive: the samplers cost TPS
    lines = [
        "",
        "=== pgknee sampler overhead ===",
        f"machine      {cpus} CPUs (os.cpu_count())",
        f"clients      {setup.clients} (2 x CPUs)",
        f"step         {setup.seconds} s per run, scale 1, e-wallet workload",
        f"rounds       {rounds} (arms per round in rotating order: off, on, off2)",
        f"on arm       pg_stat_activity every {setup.interval} (±20% jitter), /proc every 1s",
        "",
        "TPS per arm  median      min..max",
    ]
    for arm in ARMS:
        xs = results[arm]
        lines.append(f"  {arm:<4}      {statistics.median(xs):10,.1f}  {spread(xs)}")
    lines += [
        "",
        f"on/off       median {pct(med_ratio)}   min..max {pct(min(ratio))}..{pct(max(ratio))}"
        f"   (per round: {', '.join(pct(x) for x in ratio)})",
        f"on/mean(off,off2)  median {pct(statistics.median(both))}   min..max {pct(min(both))}..{pct(max(both))}",
        f"A/A off2/off median |dev| {abs(med_aa) * 100:.1f}%   max |dev| {max(aa_abs) * 100:.1f}%"
        f"   (per round: {', '.join(pct(x) for x in aa)})",
        direct_cost(setup),
        "",
        verdict(overhead, med_aa, setup.interval),
    ]
    return "\n".join(lines)


def direct_cost(setup: Setup) -> str:
    """The sampler's own query time, from the 'on' runs' stores: a bound on its server CPU."""
    n = 0
    total_ms = 0.0
    for path in sorted(setup.work_dir.glob("*-on.db")):
        with sqlite3.connect(path) as db:
            cnt, ms = db.execute("SELECT count(*), coalesce(sum(query_ms), 0) FROM snapshots "
                                 "WHERE _phase = 'bench'").fetchone()
        n += int(cnt)
        total_ms += float(ms)
    if not n:
        return "direct cost  no snapshots found"
    per_s = n / (len(list(setup.work_dir.glob("*-on.db"))) * setup.seconds)
    share = total_ms / n * per_s / 1000.0
    return (f"direct cost  {n} snapshots, mean {total_ms / n:.2f} ms each (round trip), {per_s:.1f}/s: "
            f"at most {share * 100:.1f}% of one core ({share * 100 / (os.cpu_count() or 1):.1f}% of the machine)")


def outcome(overhead: float, med_aa: float) -> str:
    """'met' only when the run can tell the target apart (its A/A noise below it) and the overhead
    is below it without being a 'saving' beyond the noise (a negative overhead is drift, never
    evidence); 'missed' at or above it; else 'not shown'."""
    if overhead >= TARGET_OVERHEAD and overhead > med_aa:
        return "missed"
    if med_aa > TARGET_OVERHEAD:
        return "not shown: the A/A noise is larger than the target"
    if overhead < -med_aa:
        return "not shown: a negative overhead beyond the A/A noise is drift, not a saving"
    return "met" if overhead < TARGET_OVERHEAD else "missed"


def verdict(overhead: float, med_aa: float, interval: str) -> str:
    inside = abs(overhead) <= med_aa
    text = (f"verdict: median overhead at {interval} is {overhead * 100:.1f}% of TPS, "
            f"{'inside' if inside else 'outside'} the A/A noise (median |off2/off - 1| = {med_aa * 100:.1f}%): "
            f"the 1.0% target {outcome(overhead, med_aa)}")
    if med_aa > TARGET_OVERHEAD:
        text += ("\n         this run cannot tell 1% apart: more --rounds, longer --seconds or a quieter machine")
    return text


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cpus = os.cpu_count() or 1
    stop_like_ctrl_c = proc.signals(proc.raising(KeyboardInterrupt), (signal.SIGTERM, signal.SIGHUP))
    with stop_like_ctrl_c, tempfile.TemporaryDirectory(prefix="pgknee-bench-") as tmp:
        cluster = EmbeddedCluster(find_bindir(), STEADY_SETTINGS)
        try:
            print(f"starting a throwaway PostgreSQL in {cluster.root} ...", flush=True)
            cluster.start()
            cluster.create_database()
            endpoint = cluster.endpoint
            env = dict(os.environ)
            env.pop("PGKNEE_DSN", None)
            if endpoint.password is not None:
                env["PGPASSWORD"] = endpoint.password  # the password never goes into argv
            setup = Setup(dsn=make_conninfo(**endpoint.params), env=env, clients=2 * cpus,
                          seconds=args.seconds, interval=args.interval, work_dir=Path(tmp))
            print(f"{cpus} CPUs, {setup.clients} clients, {args.seconds} s per step, {args.rounds} rounds, "
                  f"target {endpoint.label}", flush=True)
            results = measure(setup, args.rounds)
        except KeyboardInterrupt:
            print("interrupted: stopping the cluster", file=sys.stderr, flush=True)
            return 130
        except RuntimeError as e:
            print(f"error: {e}", file=sys.stderr, flush=True)
            return 1
        finally:
            with proc.signals(signal.SIG_IGN):  # a second Ctrl-C must not cut the cleanup short
                cluster.close()
        print(summarize(results, cpus, setup, args.rounds), flush=True)  # the stores are still there
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
