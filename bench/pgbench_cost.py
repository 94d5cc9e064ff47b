"""What do pgknee's pgbench flags cost pgbench itself, counted instead of timed?

bench/observer_effect.py times pgbench's CPU per transaction on both sides of its pairs; on this
shared virtual machine that time moves ±20% from run to run with the host's load, so a 3% target
stays out of reach there. Here the same work is counted: pgbench runs under valgrind
(cachegrind, no cache simulation), which counts every instruction pgbench executes in user space,
whatever else the machine is doing. The sides, interleaved in rotating order (A B C, B C A, ...):

- bare: pgbench with no log and no progress report (what a user runs by hand);
- pgknee: the flags pgknee gives it, the progress report every second and the per-transaction
  log sampled at the rate pgknee would choose for a step of --seconds at the TPS a bare 3 s run
  measured (rules.log_sampling_rate: about 10,000 transactions logged);
- full log: every transaction logged (what pgknee did for steps under 20 s before 0.1.0);
- progress: the progress report alone, which prices one report: pgknee's side pays it once per
  second of valgrind's slow wall time, far more often per transaction than at full speed, so the
  figure at full speed replaces those reports with one per second at the probe's TPS.

Each side runs a fixed number of transactions per client (--transactions), and then four times
as many, so each is the same work; the figure is the difference's instructions per transaction
(failures and retries counted as pgbench counts them): what pgbench spends per transaction, its
start and its clients' logins left out. What the count leaves out, and is said: the kernel's side
of the log's writes (one write(2) per buffer, the log's bytes per transaction are printed) and the
cost of the progress report, counted under valgrind and restated at full speed (the progress side).

    .venv/bin/python bench/pgbench_cost.py [--clients 4] [--transactions 2000] [--rounds 3]
                                           [--seconds 10] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from pgknee.driver.pgbench import PgbenchRun, find_pgbench, log_files, parse_summary, pgbench_version
from pgknee.model.rules import PROBE_S, log_sampling_rate
from pgknee.plan import Plan, WorkloadSpec
from pgknee.system import proc
from pgknee.targets.local import EmbeddedCluster, find_bindir
from pgknee.workloads.base import write_scripts
from pgknee.workloads.ewallet import EWallet

CPU_TARGET = 0.03  # pgbench's CPU per transaction with pgknee's flags, within this share of bare pgbench's
STEADY = {"autovacuum": "off", "checkpoint_timeout": "1h", "max_wal_size": "16GB", "synchronous_commit": "off"}
SIDES = ("bare", "pgknee", "full log", "progress")
_IREFS = re.compile(r"I\s+refs:\s+([\d,]+)")


# ---- figures (tests/unit/test_bench_pgbench_cost.py) --------------------------------------------
def instructions(valgrind_stderr: str) -> int:
    """The instructions valgrind counted ("==PID== I   refs:      12,345,678")."""
    m = _IREFS.search(valgrind_stderr)
    if m is None:
        raise RuntimeError("valgrind printed no instruction count: " + valgrind_stderr.strip()[-300:])
    return int(m.group(1).replace(",", ""))


def rotation(n: int) -> tuple[str, ...]:
    """Round n's order of the sides: each side first, second and third in turn."""
    k = n % len(SIDES)
    return SIDES[k:] + SIDES[:k]


@dataclass(frozen=True)
class Spread:
    median: float
    low: float
    high: float

    @classmethod
    def of(cls, xs: Sequence[float]) -> Spread:
        return cls(statistics.median(xs), min(xs), max(xs))


def cost_verdict(ratios: Spread, target: float = CPU_TARGET) -> str:
    """Met when even the highest round's ratio is within the target; missed when even the lowest is
    beyond it; otherwise the rounds straddle it."""
    if ratios.high <= 1 + target:
        return "met"
    if ratios.low > 1 + target:
        return "missed"
    return "not shown"


# ---- the runs -----------------------------------------------------------------------------------
@dataclass
class Round:
    side: str
    instructions: int  # the marginal ones (Lab.side)
    transactions: int
    log_bytes_per_txn: float
    reports: int = 0  # progress reports over those transactions

    @property
    def per_txn(self) -> float:
        return self.instructions / self.transactions


class Lab:
    def __init__(self, cluster: EmbeddedCluster, tmp: Path, clients: int, per_client: int) -> None:
        self.cluster, self.tmp, self.clients, self.per_client = cluster, tmp, clients, per_client
        self.valgrind = shutil.which("valgrind")
        if self.valgrind is None:
            raise RuntimeError("valgrind is not installed (apt-get install valgrind)")
        # the binary itself: valgrind counts the process it starts, and Debian's /usr/bin/pgbench is a
        # Perl wrapper that execs it
        real = Path(find_bindir()) / "pgbench"
        self.pgbench = str(real) if real.is_file() else find_pgbench()
        _, self.version_num = pgbench_version(self.pgbench)
        workload = EWallet(WorkloadSpec())
        self.threads = Plan(clients=(clients,)).threads_for(clients, os.cpu_count() or 1)
        self.base = PgbenchRun(pgbench=self.pgbench, clients=clients, threads=self.threads, duration_s=PROBE_S,
                               protocol="prepared",
                               scripts=tuple(write_scripts([(s, s.text) for s in workload.sources()], tmp,
                                                           cluster.run_as)),
                               defines=tuple(workload.defines().items()), log_prefix=None, max_tries=3,
                               version_num=self.version_num, progress_s=0)
        self.env = cluster.endpoint.child_env(tmp, cluster.run_as)

    def probe_tps(self) -> float:
        """A bare 3 s run at full speed, as pgknee's probe before a variant's first step."""
        out, _ = self._run(self.base.argv())
        return parse_summary(out).tps or 0.0

    def side(self, name: str, rate: float) -> Round:
        """One side's marginal instructions per transaction: two runs, of --transactions and of four
        times as many per client; the difference leaves out what does not grow with the
        transactions (the binary's start, the logins' SCRAM: about 360 million instructions here)."""
        run = self.base
        if name != "bare":
            run = replace(run, progress_s=1)
        if name in ("pgknee", "full log"):
            run = replace(run, log_prefix=self.tmp / "logs" / "log",
                          log_sampling_rate=1.0 if name == "full log" else rate)
        (i1, t1, _, r1), (i4, t4, size, r4) = (self._counted(run, k * self.per_client) for k in (1, 4))
        if t4 <= t1:
            raise RuntimeError(f"{name}: pgbench ran no more transactions when asked for more")
        return Round(name, i4 - i1, t4 - t1, size / t4, r4 - r1)

    def _counted(self, run: PgbenchRun, per_client: int) -> tuple[int, int, int, int]:
        """(instructions, transactions, log bytes, progress reports) of one run of `per_client`
        transactions a client."""
        logs = self.tmp / "logs"
        shutil.rmtree(logs, ignore_errors=True)
        logs.mkdir()
        if self.cluster.run_as is not None:
            os.chown(logs, self.cluster.run_as.uid, self.cluster.run_as.gid)
        # the same work on every side: a fixed number of transactions per client, not a duration
        argv = [a if not a.startswith("--time=") else f"--transactions={per_client}" for a in run.argv()]
        out, err = self._run([str(self.valgrind), "--tool=cachegrind", "--cache-sim=no",
                              "--cachegrind-out-file=/dev/null", *argv])
        s = parse_summary(out)
        done = (s.transactions or 0) + (s.failed or 0)
        return (instructions(err), done, sum(p.stat().st_size for p in log_files(logs / "log")),
                err.count("progress: "))

    def _run(self, argv: list[str]) -> tuple[str, str]:
        p = proc.spawn(argv, env=self.env, run_as=self.cluster.run_as)
        with proc.guarded(p, first=signal.SIGINT):
            out, err = p.communicate(timeout=3600)
        if p.returncode != 0:
            raise RuntimeError(f"{argv[0]} exited with {p.returncode}: {err.decode(errors='replace').strip()[-300:]}")
        return out.decode(errors="replace"), err.decode(errors="replace")


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clients", type=int, default=2 * (os.cpu_count() or 1))
    ap.add_argument("--transactions", type=int, default=2000, help="per client, on every side")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10, help="the step length whose log sampling rate is used")
    ap.add_argument("--json")
    return ap.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rounds: list[Round] = []
    with tempfile.TemporaryDirectory(prefix="pgknee-bench-") as tmp:
        os.chmod(tmp, 0o711)  # pgbench runs as the server's user when this runs as root
        cluster = EmbeddedCluster(find_bindir(), STEADY)
        try:
            print(f"starting a throwaway PostgreSQL in {cluster.root} ...", flush=True)
            cluster.start()
            cluster.create_database()
            with cluster.endpoint.connect("setup") as conn:
                EWallet(WorkloadSpec()).install(conn, say=lambda t: print(t, flush=True),
                                                run_pgbench=lambda a, schema: None)
            lab = Lab(cluster, Path(tmp), args.clients, args.transactions)
            tps = lab.probe_tps()
            rate = log_sampling_rate(tps * args.seconds)
            print(f"{args.clients} clients, {lab.threads} threads: bare {tps:,.0f} TPS at full speed; pgknee's "
                  f"log for a {args.seconds} s step keeps {rate:g} of the transactions", flush=True)
            for n in range(args.rounds):
                for name in rotation(n):
                    r = lab.side(name, rate)
                    rounds.append(r)
                    print(f"  round {n + 1} {name:>8}: {r.per_txn:,.0f} instructions per transaction "
                          f"(over {r.transactions:,} more transactions, log {r.log_bytes_per_txn:.1f} bytes each)",
                          flush=True)
        except (KeyboardInterrupt, RuntimeError) as e:
            print(f"stopped: {e or type(e).__name__}", file=sys.stderr)
            return 130 if isinstance(e, KeyboardInterrupt) else 1
        finally:
            cluster.close()
    result = summarize(rounds, args, rate, tps)
    print("\n=== pgbench's instructions per transaction under pgknee's flags against bare (valgrind) ===")
    for line in result["lines"]:
        print(line)
    if args.json:
        Path(args.json).write_text(json.dumps({**result, "rounds": [asdict(r) for r in rounds]}, indent=2))
    return 0


def summarize(rounds: Sequence[Round], args: argparse.Namespace, rate: float, tps: float) -> dict[str, Any]:
    """Per side the median (min..max) instructions per transaction; per round each side's ratio
    to that round's bare run; and pgknee's at full speed: its progress reports (priced by the
    progress side against bare) one per second at the probe's TPS instead of valgrind's many."""
    n = len(rounds) // len(SIDES)
    by = {s: [r for r in rounds if r.side == s] for s in SIDES}
    lines, ratios = [], {}
    for s in SIDES:
        per = Spread.of([r.per_txn for r in by[s]])
        lines.append(f"{s:>8}: {per.median:,.0f} ({per.low:,.0f}..{per.high:,.0f}) instructions per transaction")
    for s in SIDES[1:]:
        ratios[s] = Spread.of([by[s][i].per_txn / by["bare"][i].per_txn for i in range(n)])
    report = statistics.median(per_report(by["progress"][i], by["bare"][i]) for i in range(n))
    full_speed = Spread.of([at_full_speed(by["pgknee"][i], report, tps) / by["bare"][i].per_txn for i in range(n)])
    ratios["pgknee at full speed"] = full_speed
    k = ratios["pgknee"]
    lines.append(f"pgknee / bare under valgrind: x{k.median:.4f} ({k.low:.4f}..{k.high:.4f}) over {n} rounds")
    lines.append(f"one progress report: {report:,.0f} instructions; pgknee's side made "
                 f"{statistics.median(r.reports for r in by['pgknee']):,.0f} over its transactions under valgrind, "
                 f"{by['pgknee'][0].transactions / tps:.1f} at full speed ({tps:,.0f} TPS)")
    lines.append(f"pgknee / bare at full speed: x{full_speed.median:.4f} ({full_speed.low:.4f}..{full_speed.high:.4f}):"
                 f" {cost_verdict(full_speed)} (target within {CPU_TARGET:.0%})")
    f = ratios["full log"]
    lines.append(f"full log / bare: x{f.median:.4f} ({f.low:.4f}..{f.high:.4f})")
    return {"clients": args.clients, "transactions_per_client": args.transactions, "step_seconds": args.seconds,
            "probe_tps": tps, "sampling_rate": rate, "lines": lines, "report_instructions": report,
            "ratios": {s: asdict(v) for s, v in ratios.items()},
            "verdict": cost_verdict(full_speed), "log_bytes_per_txn": {
                s: statistics.median(r.log_bytes_per_txn for r in by[s]) for s in SIDES}}


def per_report(progress: Round, bare: Round) -> float:
    """The instructions of one progress report: what the progress side ran beyond its round's bare
    run over the same transactions, per report."""
    if progress.reports <= 0:
        return 0.0
    return (progress.per_txn - bare.per_txn) * progress.transactions / progress.reports


def at_full_speed(pgknee: Round, report: float, tps: float) -> float:
    """pgknee's side's instructions per transaction with one progress report per second at `tps`
    in place of the reports it made under valgrind."""
    return (pgknee.instructions - report * pgknee.reports) / pgknee.transactions + report / tps


if __name__ == "__main__":
    raise SystemExit(main())
