"""What does pgknee cost the system it measures? Measured against the real baseline: bare pgbench.

On one embedded PostgreSQL (pgknee's defaults), pairs of runs of the same e-wallet scripts,
clients, threads, protocol and duration: bare pgbench (no log, no progress) and `pgknee run` at
its defaults (one step, through --dsn). Both sides get the same warm-up: pgknee runs an
unmeasured probe before a variant's first step (its TPS sets the log's sampling rate), so the
bare side runs the same pgbench for as long first. The order alternates A B, B A, ... (so that
drift hits both sides alike), and every A/B pair is followed by an A/A pair (bare against bare):
its spread is the noise floor. Pairs are added until the 95% interval of the TPS ratio (Student's
t over the pairs) is narrower than ±2% (--target) or --max-pairs is reached.

The figures per client count and step length (--seconds 10,30: the demo's short steps and long
ones):
- the CPU per 1,000 transactions, the primary figure (far less noisy than TPS on a shared
  machine): pgbench's on each side, pgknee's own during the step (from /proc, polled every 50 ms,
  the same way on both sides), and the server time of pgknee's statistics and sampling queries
  (pg_stat_statements); with the interval of the pgbench CPU ratio over the pairs (target: within
  3% of bare pgbench's);
- the TPS ratio pgknee / bare (pgbench's own TPS, without connection time, on both sides): what
  users feel (target: at least 0.98).

    .venv/bin/python bench/observer_effect.py [--factors 2,4] [--seconds 10,30] [--min-pairs 6]
                                              [--max-pairs 30] [--target 2%] [--aa-every 1] [--json PATH]

A third figure: how far the percentiles pgknee reads from its sampled log can fall from those of
a full per-transaction log. One bare pgbench run per client count logs every transaction; the
rate pgknee would choose for that many (rules.log_sampling_rate) is drawn from it 200 times as
pgbench's --sampling-rate does (each transaction kept with that probability), and the 95th
percentile of the relative errors of p50, p95 and p99 is reported (target: within 5%).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats

from pgknee.driver.pgbench import PgbenchRun, find_pgbench, parse_summary, pgbench_version
from pgknee.model.rules import LATENCY_SAMPLES, PROBE_S, log_sampling_rate
from pgknee.plan import Plan, WorkloadSpec
from pgknee.system import proc
from pgknee.targets.local import EmbeddedCluster, find_bindir
from pgknee.workloads.base import write_scripts
from pgknee.workloads.ewallet import EWallet

TPS_TARGET = 0.98  # pgknee's TPS, at least this share of bare pgbench's
CPU_TARGET = 0.03  # pgbench's CPU per transaction, within this share of bare pgbench's
STEADY = {"autovacuum": "off", "checkpoint_timeout": "1h", "max_wal_size": "16GB", "synchronous_commit": "off"}
TICK = os.sysconf("SC_CLK_TCK")
OBSERVER_QUERIES = ("pg_stat_activity", "pg_stat_database", "pg_stat_statements", "pg_wait_sampling",
                    "pg_stat_bgwriter", "pg_settings")


# ---- statistics (tests/unit/test_bench_observer.py) ---------------------------------------------
def t95(n: int) -> float:
    """Student's t for a two-sided 95% interval of a mean over n pairs (n - 1 degrees of freedom)."""
    return float(stats.t.ppf(0.975, n - 1))


def ratio_interval(log_ratios: Sequence[float]) -> tuple[float, float, float]:
    """The geometric-mean ratio and its 95% interval (Student's t over the pairs' log-ratios: a
    handful of pairs is too few for the normal's 1.96)."""
    m = statistics.fmean(log_ratios)
    n = len(log_ratios)
    half = t95(n) * statistics.stdev(log_ratios) / math.sqrt(n) if n > 1 else math.inf
    return math.exp(m), math.exp(m - half), math.exp(m + half)


def verdict(mid: float, lo: float, hi: float, target: float, *, at_least: bool) -> str:
    """'met' when the whole interval is on the target's side, 'missed by X%' when the whole of it is
    beyond, else 'not shown' (the interval straddles the target)."""
    good, bad = (lo >= target, hi < target) if at_least else (hi <= target, lo > target)
    if good:
        return "met"
    if bad:
        return f"missed by {abs(mid - target) / target:.1%}"
    return "not shown (the interval straddles it)"


def narrow_enough(log_ratios: Sequence[float], target: float, min_pairs: int) -> bool:
    """The interval is within ±target of its centre (and there are at least min_pairs)."""
    if len(log_ratios) < max(2, min_pairs):
        return False
    mid, lo, hi = ratio_interval(log_ratios)
    return hi / mid - 1 <= target and 1 - lo / mid <= target


def order_of(pair: int) -> tuple[str, str]:
    """A B, B A, A B, ...: which side runs first in a pair."""
    return ("bare", "pgknee") if pair % 2 == 0 else ("pgknee", "bare")


def sampled_percentile_errors(latency: np.ndarray, rate: float, draws: int = 200, seed: int = 1,
                              percentiles: Sequence[float] = (50, 95, 99)) -> dict[str, float]:
    """How far the percentiles of a Bernoulli(rate) sample of a full log fall from the full log's
    (what pgbench --sampling-rate does): the 95th percentile and the largest of |relative error|
    over `draws` samples, per percentile."""
    rng = np.random.default_rng(seed)
    full = np.percentile(latency, percentiles)
    errs = np.empty((draws, len(percentiles)))
    for i in range(draws):
        sample = latency[rng.random(latency.size) < rate]
        errs[i] = np.abs(np.percentile(sample, percentiles) / full - 1)
    out = {}
    for j, p in enumerate(percentiles):
        out[f"p{p:g}_err95"] = float(np.percentile(errs[:, j], 95))
        out[f"p{p:g}_errmax"] = float(errs[:, j].max())
    return out


# ---- CPU of a process tree, from /proc ---------------------------------------------------------------
def _stat(pid: int) -> tuple[str, int, int] | None:
    """(command, ppid, utime + stime in ticks) of a live process."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    comm = text[text.index("(") + 1:text.rindex(")")]
    fields = text.rsplit(")", 1)[1].split()
    return comm, int(fields[1]), int(fields[11]) + int(fields[12])


class TreeCpu(threading.Thread):
    """Polls a process and its descendants: the CPU of each (the last value seen before it went),
    and the root's own CPU when a pgbench first and last appeared."""

    def __init__(self, root: int, every: float = 0.05) -> None:
        super().__init__(daemon=True)
        self.root, self.every = root, every
        self.cpu: dict[int, tuple[str, int]] = {}
        self.root_at_bench_start: int | None = None
        self.root_at_bench_end: int | None = None
        self.stop_flag = threading.Event()

    def run(self) -> None:
        while not self.stop_flag.is_set():
            self._poll()
            time.sleep(self.every)
        self._poll()

    def _poll(self) -> None:
        stats = {}
        for d in os.listdir("/proc"):
            if d.isdigit() and (s := _stat(int(d))) is not None:
                stats[int(d)] = s
        tree, todo = {self.root}, [self.root]
        while todo:
            parent = todo.pop()
            for pid, (_, ppid, _) in stats.items():
                if ppid == parent and pid not in tree:
                    tree.add(pid)
                    todo.append(pid)
        bench = False
        for pid in tree & stats.keys():
            comm, _, ticks = stats[pid]
            self.cpu[pid] = (comm, ticks)
            bench = bench or comm == "pgbench"
        root = stats.get(self.root)
        if root is not None and bench:
            if self.root_at_bench_start is None:
                self.root_at_bench_start = root[2]
            self.root_at_bench_end = root[2]

    def finish(self) -> None:
        self.stop_flag.set()
        self.join()

    def pgbench_s(self) -> float:
        """The measured pgbench's CPU: the one that ran longest (pgknee's warm-up probe before a
        variant's first step is a pgbench too, whose transactions are not the step's)."""
        return max((t for comm, t in self.cpu.values() if comm == "pgbench"), default=0) / TICK

    def root_during_bench_s(self) -> float:
        if self.root_at_bench_start is None or self.root_at_bench_end is None:
            return 0.0
        return (self.root_at_bench_end - self.root_at_bench_start) / TICK


# ---- one side of a pair --------------------------------------------------------------------------------
@dataclass
class Side:
    tps: float
    transactions: int
    pgbench_cpu_s: float
    observer_cpu_s: float = 0.0  # pgknee's own during the step
    server_ms: float = 0.0  # pgknee's statistics and sampling queries


@dataclass
class Result:
    clients: int
    threads: int
    seconds: int
    ab: list[float] = field(default_factory=list)  # log(pgknee / bare), one per A/B pair
    aa: list[float] = field(default_factory=list)  # log(bare / bare)
    sides: dict[str, list[Side]] = field(default_factory=lambda: {"bare": [], "pgknee": []})


class Lab:
    def __init__(self, cluster: EmbeddedCluster, tmp: Path, seconds: int) -> None:
        self.cluster, self.tmp, self.seconds = cluster, tmp, seconds
        self.pgbench = find_pgbench()
        _, self.version_num = pgbench_version(self.pgbench)
        self.workload = EWallet(WorkloadSpec())
        self.scripts = write_scripts([(s, s.text) for s in self.workload.sources()], tmp, cluster.run_as)
        self.env = cluster.endpoint.child_env(tmp, cluster.run_as)
        # both sides reach the server as pgknee's own embedded runs do: TCP on the loopback, a password
        self.dsn = f"host=127.0.0.1 port={cluster.port} user=pgknee dbname=pgknee"
        self.password = cluster.password or ""
        self.n = 0

    def _bare_run(self, clients: int, threads: int, seconds: int) -> PgbenchRun:
        return PgbenchRun(pgbench=self.pgbench, clients=clients, threads=threads, duration_s=seconds,
                          protocol="prepared", scripts=tuple(self.scripts),
                          defines=tuple(self.workload.defines().items()), log_prefix=None, max_tries=3,
                          version_num=self.version_num, progress_s=0)

    def bare(self, clients: int, threads: int) -> Side:
        # the warm-up pgknee's side gets: its probe before the step
        w = proc.spawn(self._bare_run(clients, threads, PROBE_S).argv(), env=self.env, run_as=self.cluster.run_as)
        with proc.guarded(w, first=signal.SIGINT):
            w.communicate(timeout=PROBE_S + 120)
        run = self._bare_run(clients, threads, self.seconds)
        p = proc.spawn(run.argv(), env=self.env, run_as=self.cluster.run_as)
        cpu = TreeCpu(p.pid)
        cpu.start()
        with proc.guarded(p, first=signal.SIGINT):
            out, err = p.communicate(timeout=self.seconds + 120)
        cpu.finish()
        if p.returncode != 0:
            raise RuntimeError(f"pgbench exited with {p.returncode}: {err.decode(errors='replace').strip()[-300:]}")
        s = parse_summary(out.decode(errors="replace"))
        return Side(s.tps or 0.0, s.transactions or 0, cpu.pgbench_s())

    def full_log(self, clients: int, threads: int) -> np.ndarray:
        """One bare pgbench run with every transaction logged: the latencies (µs) of the successes."""
        d = self.tmp / "full-log"
        d.mkdir(exist_ok=True)
        if self.cluster.run_as is not None:
            os.chown(d, self.cluster.run_as.uid, self.cluster.run_as.gid)
        run = PgbenchRun(pgbench=self.pgbench, clients=clients, threads=threads, duration_s=self.seconds,
                         protocol="prepared", scripts=tuple(self.scripts),
                         defines=tuple(self.workload.defines().items()), log_prefix=d / "log", max_tries=3,
                         version_num=self.version_num, progress_s=0)
        p = proc.spawn(run.argv(), env=self.env, run_as=self.cluster.run_as)
        with proc.guarded(p, first=signal.SIGINT):
            p.communicate(timeout=self.seconds + 120)
        parts = []
        for f in sorted(d.glob("log*")):
            cols = [line.split()[2] for line in f.read_text().splitlines() if len(line.split()) >= 6]
            parts.append(np.array([int(c) for c in cols if c.isdigit()], dtype=np.int64))
            f.unlink()
        return np.concatenate(parts) if parts else np.empty(0, dtype=np.int64)

    def pgknee(self, clients: int) -> Side:
        self.n += 1
        store = self.tmp / f"run-{self.n}.db"
        self._reset_statements()
        env = {**os.environ, "TMPDIR": str(self.tmp), "PGKNEE_STATE_DIR": str(self.tmp / "state"), "NO_COLOR": "1",
               "PGPASSWORD": self.password}
        p = subprocess.Popen([sys.executable, "-m", "pgknee", "run", "--dsn", self.dsn, "--clients", str(clients),
                              "--duration", f"{self.seconds}s", "--store", str(store), "--quiet"], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        cpu = TreeCpu(p.pid)
        cpu.start()
        _, err = p.communicate(timeout=self.seconds + 300)
        cpu.finish()
        if p.returncode != 0:
            raise RuntimeError(f"pgknee exited with {p.returncode}: {err.decode(errors='replace').strip()[-300:]}")
        with sqlite3.connect(store) as db:
            tps, n = db.execute("SELECT tps_pgbench, transactions FROM steps").fetchone()
        store.unlink()
        return Side(float(tps), int(n), cpu.pgbench_s(), cpu.root_during_bench_s(), self._observer_ms())

    def _reset_statements(self) -> None:
        with self.cluster.endpoint.connect("bench") as c:
            c.execute("SELECT pg_stat_statements_reset()")

    def _observer_ms(self) -> float:
        like = " OR ".join("query ILIKE %s" for _ in OBSERVER_QUERIES)
        with self.cluster.endpoint.connect("bench") as c:
            row = c.execute(f"SELECT coalesce(sum(total_exec_time), 0) FROM pg_stat_statements WHERE ({like}) "
                            "AND query NOT ILIKE '%%pg_stat_statements_reset%%'",
                            [f"%{q}%" for q in OBSERVER_QUERIES]).fetchone()
        return float(row[0]) if row else 0.0


def sweep_one(lab: Lab, clients: int, threads: int, args: argparse.Namespace) -> Result:
    r = Result(clients, threads, lab.seconds)
    while len(r.ab) < args.max_pairs and not narrow_enough(r.ab, args.target, args.min_pairs):
        i = len(r.ab)
        sides = {}
        for name in order_of(i):
            sides[name] = lab.bare(clients, threads) if name == "bare" else lab.pgknee(clients)
            r.sides[name].append(sides[name])
        r.ab.append(math.log(sides["pgknee"].tps / sides["bare"].tps))
        aa = ""
        if i % args.aa_every == 0:
            a, b = lab.bare(clients, threads), lab.bare(clients, threads)
            r.aa.append(math.log(a.tps / b.tps))
            aa = f"; bare/bare {a.tps / b.tps:.3f}"
        mid, lo, hi = ratio_interval(r.ab)
        print(f"  c{clients} pair {i + 1}: pgknee/bare {sides['pgknee'].tps / sides['bare'].tps:.3f}  "
              f"(so far {mid:.3f} [{lo:.3f}, {hi:.3f}]){aa}", flush=True)
    return r


@dataclass(frozen=True)
class Figures:
    """One client count's figures (what the JSON holds)."""

    clients: int
    threads: int
    seconds: int
    pairs: int
    warm_up_s: int  # each side's, before its measured run
    ratio: float  # pgknee / bare, geometric mean over the pairs
    ratio_low: float
    ratio_high: float
    ratio_median: float
    aa_ratio: float  # bare / bare: the noise floor
    aa_low: float
    aa_high: float
    cpu_ms_bare_pgbench: float  # per 1,000 transactions (medians over the runs)
    cpu_ms_pgknee_pgbench: float
    cpu_ms_pgknee_itself: float
    cpu_ms_added: float
    cpu_ratio: float  # pgbench's CPU per transaction, pgknee's side over bare's (geometric mean over the pairs)
    cpu_ratio_low: float
    cpu_ratio_high: float
    server_ms_observer_queries: float
    sides: dict[str, list[dict[str, float]]]
    logged_transactions: int = 0  # the full log the sampling error is measured on
    sampling_rate: float = 1.0  # the rate pgknee would choose for it
    sampling_errors: dict[str, float] = field(default_factory=dict)

    def verdicts(self) -> tuple[str, str]:
        """The CPU target (pgbench's CPU per transaction within 3% of bare's) and the TPS target
        (at least 0.98 of bare's), each met, missed or not shown by the interval."""
        return (verdict(self.cpu_ratio, self.cpu_ratio_low, self.cpu_ratio_high, 1 + CPU_TARGET, at_least=False),
                verdict(self.ratio, self.ratio_low, self.ratio_high, TPS_TARGET, at_least=True))

    def line(self) -> str:
        cpu, tps = self.verdicts()
        return (f"c{self.clients}, {self.seconds} s steps, {self.pairs} pairs, {self.warm_up_s} s warm-up on each "
                f"side:\n     CPU per 1,000 transactions: bare pgbench {self.cpu_ms_bare_pgbench:.0f} ms, with pgknee "
                f"{self.cpu_ms_pgknee_pgbench:.0f} ms pgbench (x{self.cpu_ratio:.3f} [{self.cpu_ratio_low:.3f}, "
                f"{self.cpu_ratio_high:.3f}]: target within {CPU_TARGET:.0%}, {cpu}) + {self.cpu_ms_pgknee_itself:.0f}"
                f" ms pgknee itself = {self.cpu_ms_added:+.0f} ms; server time of pgknee's queries "
                f"{self.server_ms_observer_queries:.1f} ms\n     TPS pgknee/bare {self.ratio:.3f} "
                f"[{self.ratio_low:.3f}, {self.ratio_high:.3f}] (median pair {self.ratio_median:.3f}; target at "
                f"least {TPS_TARGET}, {tps}); "
                f"A/A noise floor {self.aa_ratio:.3f} [{self.aa_low:.3f}, {self.aa_high:.3f}]" + self._sampling())

    def _sampling(self) -> str:
        if not self.sampling_errors:
            return ""
        e = self.sampling_errors
        return (f"\n     percentiles from a {self.sampling_rate:g} sample of a full log of "
                f"{self.logged_transactions:,} "
                f"transactions (rate chosen for {LATENCY_SAMPLES:,}), 95% of draws within: p50 {e['p50_err95']:.1%}, "
                f"p95 {e['p95_err95']:.1%}, p99 {e['p99_err95']:.1%} (worst p99 {e['p99_errmax']:.1%})")


def figures(r: Result) -> Figures:
    mid, lo, hi = ratio_interval(r.ab)
    aa = ratio_interval(r.aa)

    def per_k(name: str, attr: str) -> float:
        xs = [getattr(s, attr) / s.transactions * 1000 for s in r.sides[name] if s.transactions]
        return statistics.median(xs) if xs else 0.0

    bare, with_log, own = (per_k("bare", "pgbench_cpu_s"), per_k("pgknee", "pgbench_cpu_s"),
                           per_k("pgknee", "observer_cpu_s"))
    cpu = ratio_interval(cpu_log_ratios(r))
    return Figures(r.clients, r.threads, r.seconds, len(r.ab), PROBE_S, mid, lo, hi,
                   math.exp(statistics.median(r.ab)), aa[0], aa[1], aa[2], bare * 1000, with_log * 1000, own * 1000,
                   (with_log + own - bare) * 1000, cpu[0], cpu[1], cpu[2], per_k("pgknee", "server_ms"),
                   {k: [asdict(s) for s in v] for k, v in r.sides.items()})


def cpu_log_ratios(r: Result) -> list[float]:
    """Per pair: log(pgknee's pgbench CPU per transaction / bare pgbench's)."""
    out = []
    for a, b in zip(r.sides["pgknee"], r.sides["bare"], strict=False):
        if a.transactions and b.transactions and a.pgbench_cpu_s > 0 and b.pgbench_cpu_s > 0:
            out.append(math.log((a.pgbench_cpu_s / a.transactions) / (b.pgbench_cpu_s / b.transactions)))
    return out


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--factors", default="2,4", help="client counts as multiples of the CPUs (default 2,4)")
    p.add_argument("--seconds", default="10,30",
                   help="each pgbench run's duration, one set of pairs per value (default 10,30: the demo's short "
                        "steps and long ones)")
    p.add_argument("--aa-every", type=int, default=1, help="an A/A pair after every Nth A/B pair (default 1)")
    p.add_argument("--min-pairs", type=int, default=6)
    p.add_argument("--max-pairs", type=int, default=30)
    p.add_argument("--target", default="2%", help="half-width of the ratio's 95%% interval to reach (default 2%%)")
    p.add_argument("--json", metavar="PATH", help="write the figures here too")
    a = p.parse_args(argv)
    a.target = float(a.target.rstrip("%")) / 100
    a.factors = [int(x) for x in a.factors.split(",")]
    a.seconds = [int(x.rstrip("s")) for x in str(a.seconds).split(",")]
    return a


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cpus = os.cpu_count() or 1
    out: list[Figures] = []
    with tempfile.TemporaryDirectory(prefix="pgknee-bench-") as tmp:
        os.chmod(tmp, 0o711)  # pgbench runs as the server's user when this runs as root
        # pg_stat_statements times pgknee's own queries on the server; no autovacuum, checkpoint or
        # commit fsync inside a run (both sides run so): the noise between runs is the machine's
        cluster = EmbeddedCluster(find_bindir(), {"shared_preload_libraries": "pg_stat_statements", **STEADY})
        try:
            print(f"starting a throwaway PostgreSQL in {cluster.root} ...", flush=True)
            cluster.start()
            cluster.create_database()
            with cluster.endpoint.connect("setup") as conn:
                EWallet(WorkloadSpec()).install(conn, say=lambda t: print(t, flush=True),
                                                run_pgbench=lambda args, schema: None)
                conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            for seconds in args.seconds:
                lab = Lab(cluster, Path(tmp), seconds)
                for f in args.factors:
                    clients = f * cpus
                    threads = Plan(clients=(clients,)).threads_for(clients, cpus)
                    print(f"{clients} clients, {threads} threads, {seconds} s runs:", flush=True)
                    f = figures(sweep_one(lab, clients, threads, args))
                    latency = lab.full_log(clients, threads)
                    rate = log_sampling_rate(latency.size)
                    errors = sampled_percentile_errors(latency, rate) if rate < 1 and latency.size else {}
                    out.append(dataclasses.replace(f, logged_transactions=int(latency.size), sampling_rate=rate,
                                                   sampling_errors=errors))
        except (KeyboardInterrupt, RuntimeError, subprocess.TimeoutExpired) as e:
            print(f"stopped: {e or type(e).__name__}", file=sys.stderr)
            return 130 if isinstance(e, KeyboardInterrupt) else 1
        finally:
            cluster.close()
    print("\n=== pgknee's observer effect against bare pgbench (e-wallet, embedded server, interleaved pairs) ===")
    for f in out:
        print(f.line())
    if args.json:
        Path(args.json).write_text(json.dumps({"cpus": cpus, "results": [{**asdict(f), "verdicts": f.verdicts()}
                                                                           for f in out]}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
