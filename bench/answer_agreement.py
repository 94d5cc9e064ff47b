"""Answer agreement: does the short sweep of `make demo` give the answer a long reference sweep
gives, run after run?

* the reference: every client count from 1 to 4x the CPUs, 3 repetitions, 30 s steps (--step),
  the e-wallet workload, extended protocol (as the demo), on pgknee's embedded server; or the
  counts of --reference-clients (measured here: 1..4x the CPUs stops too early for the e-wallet
  on 2 CPUs, whose group commit still gains 14% from 4 to 8; `1:8:1,10:16:2,20:32:4` reaches
  its plateau);
* the short sweeps (--short, default 5): the demo's direct variant alone, 2,4,8,16,32 clients,
  one repetition, 10 s steps, each on a fresh embedded server.

Each run's answer is read from its store as `pgknee recommend` reads it. The target: every short
sweep's count within one step of the reference's and of each other's, a step being one count of
the short sweep's grid (a reference count between two grid counts is one step from both). The
figures: each run's verdict, count and the counts noise would have picked, and the steps apart.

    PYTHONPATH=src .venv/bin/python bench/answer_agreement.py [--short 5] [--step 30s] \
        [--reference-clients 1:8:1,10:16:2,20:32:4] [--json PATH]
    PYTHONPATH=src .venv/bin/python bench/answer_agreement.py --reference STORE:RUN --shorts STORE:RUN,STORE:RUN,..

(the second form reads runs already made, e.g. the stores five `make demo` runs left, variant
'direct').
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

SHORT_GRID = (2, 4, 8, 16, 32)
REFERENCE_REPS = 3


@dataclass(frozen=True)
class Answer:
    run: str
    wall_s: float | None
    verdict: str
    connections: int | None
    counts_interval: tuple[int, int] | None
    headline: str


def steps_apart(a: int, b: int, grid: Sequence[int] = SHORT_GRID) -> float:
    """Steps of the grid between two counts; a count between two grid counts sits half a step
    from each (6 on 2,4,8,16: half a step above 4 and below 8)."""
    def position(n: int) -> float:
        if n <= grid[0]:
            return 0.0
        for i, (lo, hi) in enumerate(zip(grid, grid[1:], strict=False)):
            if n == hi:
                return float(i + 1)
            if lo < n < hi:
                return i + 0.5
        return float(len(grid) - 1) + (0.5 if n > grid[-1] else 0.0)
    return abs(position(a) - position(b))


def agreement(ref: Answer, shorts: Sequence[Answer]) -> dict[str, object]:
    """Within one step of the reference, and of each other (the largest spread among them)."""
    counts = [s.connections for s in shorts]
    answered = [c for c in counts if c is not None]
    to_ref = [steps_apart(c, ref.connections) for c in answered] if ref.connections is not None else []
    spread = max((steps_apart(a, b) for a in answered for b in answered), default=0.0)
    return {"all_answered": len(answered) == len(counts) and ref.connections is not None,
            "steps_to_reference": to_ref, "within_one_step_of_reference": bool(to_ref) and max(to_ref) <= 1,
            "largest_spread_steps": spread, "within_one_step_of_each_other": spread <= 1}


def answer_of(store: str, run: str, variant: str | None, wall_s: float | None = None) -> Answer:
    from pgknee.analyze.recommend import recommend
    from pgknee.analyze.run import build
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    view = build(load_run(Store(store, create=False), run))
    v = variant if variant in view.variants() else view.variants()[0]
    r = recommend(view, v)
    return Answer(view.data.run.run_id, wall_s, r.verdict, r.connections, r.counts_interval, r.headline())


def table(ref: Answer, shorts: Sequence[Answer], verdict: dict[str, object]) -> list[str]:
    def row(name: str, a: Answer) -> str:
        span = "{}..{}".format(*a.counts_interval) if a.counts_interval else "-"
        wall = f"{a.wall_s:,.0f} s" if a.wall_s is not None else "-"
        return f"  {name:<12}{a.run:<22}{a.verdict:<16}{str(a.connections):>6}  {span:<10}{wall:>8}"

    lines = [f"  {'':<12}{'run':<22}{'verdict':<16}{'count':>6}  {'noise':<10}{'wall':>8}", row("reference", ref)]
    lines += [row(f"short {i + 1}", s) for i, s in enumerate(shorts)]
    to_ref = ", ".join(f"{x:g}" for x in verdict["steps_to_reference"])  # type: ignore[attr-defined]
    lines += ["", f"  steps to the reference: {to_ref or '-'}; largest spread among the short sweeps: "
              f"{verdict['largest_spread_steps']:g} step(s)",
              f"  every short sweep answered: {'met' if verdict['all_answered'] else 'MISSED'}",
              f"  within one step of the reference: {'met' if verdict['within_one_step_of_reference'] else 'MISSED'}",
              f"  within one step of each other: {'met' if verdict['within_one_step_of_each_other'] else 'MISSED'}",
              "", "  headlines:", f"    reference: {ref.headline}", *(f"    short {i + 1}: {s.headline}"
                                                                        for i, s in enumerate(shorts))]
    return lines


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--short", type=int, default=5, help="short sweeps to run (default 5)")
    p.add_argument("--step", default="30s", help="the reference's step length (default 30s)")
    p.add_argument("--max-clients", type=int, default=4 * (os.cpu_count() or 1),
                   help="the reference's largest count (default 4x the CPUs)")
    p.add_argument("--reference-clients", metavar="CLIENTS",
                   help="the reference's counts, as --clients takes them (default 1 to --max-clients, every count)")
    p.add_argument("--reference", metavar="STORE:RUN", help="read the reference from a run already made")
    p.add_argument("--shorts", metavar="STORE:RUN,..", help="read the short sweeps from runs already made")
    p.add_argument("--variant", default="direct", help="the short sweeps' variant (default direct)")
    p.add_argument("--dir", help="where the stores and logs go (default: a new temporary directory)")
    p.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    from time_to_answer import run_pgknee  # bench/ is this script's directory: one way to run pgknee and time it

    a = parse_args(argv)
    runs = not (a.reference and a.shorts)  # reading stores already made writes nothing
    work = Path(a.dir or tempfile.mkdtemp(prefix="pgknee-agree-")) if runs else Path(".")
    if runs:
        work.mkdir(parents=True, exist_ok=True)
    common = ["--protocol", "extended", "--no-waits"]
    if a.reference:
        store, run = a.reference.rsplit(":", 1)
        ref = answer_of(store, run, None)
    else:
        clients = a.reference_clients or f"1:{a.max_clients}:1"
        print(f"reference: clients {clients}, {REFERENCE_REPS} reps, {a.step} steps ({work})", flush=True)
        wall = run_pgknee([*common, "--clients", clients, "--reps", str(REFERENCE_REPS), "--duration",
                           a.step, "--store", str(work / "reference.db")], work / "reference.log")
        ref = answer_of(str(work / "reference.db"), "last", None, wall)
    shorts: list[Answer] = []
    if a.shorts:
        for item in a.shorts.split(","):
            store, run = item.rsplit(":", 1)
            shorts.append(answer_of(store, run, a.variant))
    else:
        for i in range(a.short):
            print(f"short sweep {i + 1}/{a.short}: {','.join(map(str, SHORT_GRID))} clients, 10 s", flush=True)
            db = work / f"short{i + 1}.db"
            wall = run_pgknee([*common, "--clients", ",".join(map(str, SHORT_GRID)), "--duration", "10s",
                               "--variant", "direct", "--store", str(db)], work / f"short{i + 1}.log")
            shorts.append(answer_of(str(db), "last", "direct", wall))
    verdict = agreement(ref, shorts)
    print("\n".join(table(ref, shorts, verdict)))
    if a.json:
        Path(a.json).write_text(json.dumps({"reference": asdict(ref), "short": [asdict(s) for s in shorts],
                                            "agreement": verdict, "settings": vars(a)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
