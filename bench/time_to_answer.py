"""Time to answer: how much sooner `pgknee run --until-answer` gives the answer an exhaustive sweep
gives, and whether it is the same answer.

Two runs of the same workload on pgknee's embedded server (each `pgknee run` without --dsn
starts a throwaway one, set-up included in its wall time):

* the reference: every client count from 1 to 4x the CPUs, 3 repetitions each, fixed long steps
  (--step, default 30 s);
* the adaptive sweep: `pgknee run --until-answer` at its own defaults (its range, step length
  and budget: nothing set from the reference's wall time, which it does not know), one
  repetition per choice (it adds repetitions where it needs them).

Both wall times are reported as measured, set-up included. Each run's answer is read from its
store as `pgknee recommend` reads it. The targets: the same answer (the adaptive count inside
the counts the reference's own noise would have picked, or the same count), the peak TPS (the
highest median TPS of a count) within 5%, and at most 25% of the reference's wall time.

The workload is TPC-B (pgbench's, scale 1): its one branch row is updated by every transaction,
so throughput peaks inside 1..8 clients on a 2-CPU machine and both sweeps have a count to
recommend; the e-wallet's transfers contend only on the WAL, whose group commit keeps
throughput rising past 8 clients here, and both would answer "peak not reached" (--workload
ewallet to see it).

    PYTHONPATH=src .venv/bin/python bench/time_to_answer.py [--step 30s] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

WALL_TARGET = 0.25  # the adaptive run's wall time, at most this share of the reference's
PEAK_TARGET = 0.05  # its peak TPS within this share of the reference's
REFERENCE_REPS = 3


@dataclass(frozen=True)
class Outcome:
    """One run's wall time and answer."""

    wall_s: float
    steps: int
    verdict: str
    connections: int | None
    interval: tuple[float, float] | None
    peak_tps: float  # the highest median TPS of a client count
    peak_at: int
    modelled_peak: float | None
    stopped: str | None  # why the adaptive sweep stopped


@dataclass(frozen=True)
class Comparison:
    wall_ratio: float
    wall_ok: bool
    same_answer: bool
    answer_steps_apart: int | None  # grid steps between the two recommended counts (said, not judged)
    peak_ratio: float
    peak_ok: bool

    @property
    def all_ok(self) -> bool:
        return self.wall_ok and self.same_answer and self.peak_ok


def steps_apart(a: int, b: int, grid: Sequence[int]) -> int:
    """Grid steps between two counts (a count off the grid counts as the grid count at or above it)."""
    def index(n: int) -> int:
        return next((i for i, x in enumerate(grid) if x >= n), len(grid) - 1)
    return abs(index(a) - index(b))


def compare(ref: Outcome, ada: Outcome, grid: Sequence[int]) -> Comparison:
    """The targets: the same answer (the adaptive count is the reference's, or inside the counts
    the reference's own noise would have picked; the same verdict when neither has a count), peak
    TPS within 5%, at most 25% of the reference's wall time."""
    apart = (steps_apart(ref.connections, ada.connections, grid)
             if ref.connections is not None and ada.connections is not None else None)
    if ref.connections is not None and ada.connections is not None:
        lo, hi = ref.interval or (ref.connections, ref.connections)
        same = ada.connections == ref.connections or lo <= ada.connections <= hi
    else:
        same = ref.verdict == ada.verdict and ref.connections is None and ada.connections is None
    wall_ratio = ada.wall_s / ref.wall_s
    peak_ratio = ada.peak_tps / ref.peak_tps if ref.peak_tps else math.nan
    return Comparison(wall_ratio=wall_ratio, wall_ok=wall_ratio <= WALL_TARGET, same_answer=same,
                      answer_steps_apart=apart, peak_ratio=peak_ratio, peak_ok=abs(peak_ratio - 1) <= PEAK_TARGET)


def _answer_text(o: Outcome) -> str:
    if o.connections is None:
        return o.verdict
    lo, hi = o.interval or (math.nan, math.nan)
    return f"{o.connections} [{lo:.1f}..{hi:.1f}]"


def table(ref: Outcome, ada: Outcome, c: Comparison) -> list[str]:
    """Both runs side by side, then the targets."""
    def row(name: str, a: str, b: str) -> str:
        return f"  {name:<22}{a:>24}{b:>24}"

    def mark(ok: bool) -> str:
        return "met" if ok else "MISSED"

    lines = [row("", "reference", "until-answer"),
             row("wall time", f"{ref.wall_s:,.0f} s", f"{ada.wall_s:,.0f} s"),
             row("steps", str(ref.steps), str(ada.steps)),
             row("recommended [95% interval]", _answer_text(ref), _answer_text(ada)),
             row("peak TPS (measured)", f"{ref.peak_tps:,.0f} at c{ref.peak_at}",
                 f"{ada.peak_tps:,.0f} at c{ada.peak_at}"),
             row("modelled peak TPS", f"{ref.modelled_peak:,.0f}" if ref.modelled_peak else "-",
                 f"{ada.modelled_peak:,.0f}" if ada.modelled_peak else "-"),
             ""]
    if ada.stopped:
        lines.append(f"  until-answer stopped: {ada.stopped}")
    apart = "" if c.answer_steps_apart is None else f", {c.answer_steps_apart} step(s) apart"
    lines += [f"  wall ratio {c.wall_ratio:.2f} (target <= {WALL_TARGET:.2f}): {mark(c.wall_ok)}",
              f"  same answer (inside the reference's noise interval){apart}: {mark(c.same_answer)}",
              f"  peak TPS ratio {c.peak_ratio:.3f} (target within {PEAK_TARGET:.0%}): {mark(c.peak_ok)}"]
    return lines


def outcome(store: Path, wall_s: float) -> Outcome:
    """A run's answer from its store, as `pgknee recommend` reads it."""
    from pgknee.analyze.recommend import recommend
    from pgknee.analyze.run import build
    from pgknee.model.keys import Env
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    view = build(load_run(Store(str(store), create=False), "last"))
    rec = recommend(view)
    best = max((g for g in view.groups if g.tps is not None), key=lambda g: g.tps.value if g.tps else 0.0)
    return Outcome(wall_s=wall_s, steps=view.steps_done, verdict=rec.verdict, connections=rec.connections,
                   interval=rec.counts_interval,
                   peak_tps=best.tps.value if best.tps else 0.0, peak_at=best.clients,
                   modelled_peak=rec.fit.params.peak_x if rec.fit is not None and rec.fit.identified else None,
                   stopped=view.data.env.get(Env.UNTIL_ANSWER_STOPPED))


def run_pgknee(args: list[str], log: Path) -> float:
    """One `pgknee run`, its progress to a log file; its wall time."""
    t0 = time.monotonic()
    with log.open("w") as out:
        r = subprocess.run([sys.executable, "-m", "pgknee", "run", *args], stdout=out, stderr=subprocess.STDOUT,
                           check=False)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"pgknee run failed ({r.returncode}): see {log}")
    return wall


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--step", default="30s", help="the reference's step length (default 30s)")
    p.add_argument("--max-clients", type=int, default=4 * (os.cpu_count() or 1),
                   help="the largest count, for both (default 4x the CPUs)")
    p.add_argument("--workload", default="tpcb", help="tpcb (default) or ewallet; see the docstring")
    p.add_argument("--scale", default="1", help="the workload's scale (default 1)")
    p.add_argument("--dir", help="where the stores and logs go (default: a new temporary directory)")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    a = parse_args(argv)
    work = Path(a.dir or tempfile.mkdtemp(prefix="pgknee-tta-"))
    work.mkdir(parents=True, exist_ok=True)
    common = ["--workload", a.workload, "--scale", a.scale, "--no-waits"]  # progress to the log
    print(f"reference: clients 1..{a.max_clients}, {REFERENCE_REPS} reps, {a.step} steps ({work})", flush=True)
    ref_wall = run_pgknee([*common, "--clients", f"1:{a.max_clients}:1", "--reps", str(REFERENCE_REPS),
                           "--duration", a.step, "--store", str(work / "reference.db")], work / "reference.log")
    print("until-answer, at its own defaults", flush=True)
    ada_wall = run_pgknee([*common, "--until-answer", "--store", str(work / "adaptive.db")], work / "adaptive.log")
    from pgknee.analyze.adaptive import grid

    ref, ada = outcome(work / "reference.db", ref_wall), outcome(work / "adaptive.db", ada_wall)
    c = compare(ref, ada, grid(1, a.max_clients))
    print("\n".join(table(ref, ada, c)))
    if a.json:
        Path(a.json).write_text(json.dumps({"reference": asdict(ref), "until_answer": asdict(ada),
                                            "comparison": {**asdict(c), "all_ok": c.all_ok},
                                            "settings": vars(a)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
