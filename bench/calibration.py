"""Calibration of the answer: how often `pgknee recommend` names the right count on sweeps whose
right count is known, and how often its 95% interval holds it.

Generated sweeps: every family of curve a DBA meets, at five grids of five to nine counts, noise
of 1% to 15% of each repetition's TPS (log-normal, each repetition drawn on its own; each step's
per-second figures drawn too, AR(1) with lag-one correlation 0.5, a third of the step's noise:
the ratio tvondra/postgres-archaeology's runs show, see analyze/noise.py), one, three or five
repetitions, `--draws` sweeps each. The families:

* retrograde-at, retrograde-between: the Universal Scalability Law with its peak at a measured
  count, or halfway (geometrically) between two;
* plateau-early, plateau-late: a rise that bends into a flat ceiling (x / (x^p + knee^p)^(1/p))
  near the second count (sharpness p from 2 to 8), or reached late, inside the sweep: the knee at
  0.6 to 1 times a quarter of the largest count, p from 4 to 8 (a softer or later knee still
  grows at the top: the slow-growth and amdahl families have those);
* amdahl: the law with no coherency cost (σ from 0.02 to 0.3): it levels off slowly;
* slow-growth: a knee, then 4%, 8% or 12% more a doubling (the issue's 8%), flat from 8 times the
  largest count;
* linear: throughput doubles with the clients; flat: the same throughput at every count;
* outlier: a plateau-early curve with one repetition of one count, at each position in turn,
  15% to 25% low (a checkpoint, a noisy neighbour).

The right answer is the rule of docs/reading-the-answer.md applied to the true curve, before any
noise: the curve still grows when its last doubling (from the best count at or below half the
largest) gains more than 95% of the best leaves (5.3%); then no count is right, and the count the
rule would pick on the true curve extended by doublings is where it lies. Else the right count is
the smallest measured count reaching 95% of the best true throughput.

Each sweep is scored: *right* (the right count, or no count when the curve grows), *one step*
(the measured count next to the right one; on a growing curve, the largest count when the right
one is the next doubling), *wrong*, and *withheld* (no count where there is one). The 95%
interval *holds* when the right count lies in it (sweeps with a right count and an interval).
Published sweeps are judged the same way, against the rule applied to what was published: SPEC
SDM91 and the ray tracer of Gunther's "Guerrilla Capacity Planning" (the R usl package's
datasets), and the 20 star-join sweeps of tvondra/postgres-archaeology (bench/data), each run
alone (one repetition, its first 20 seconds) and the three together, against the rule on the
three runs' medians.

    PYTHONPATH=src .venv/bin/python bench/calibration.py [--draws 6] [--seed 1] [--jobs 2] [--json PATH]
    PYTHONPATH=src .venv/bin/python bench/calibration.py --from PATH     # print a saved run's figures again
    PYTHONPATH=src .venv/bin/python bench/calibration.py extract CLONE   # bench/data/archaeology.json again
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

FRACTION = 0.95
GRIDS = ((2, 4, 8, 16, 32), (2, 4, 8, 16, 32, 64), (1, 2, 4, 8, 16, 32, 64), (1, 2, 4, 8, 16, 32, 64, 128),
         (1, 2, 4, 8, 16, 32, 64, 128, 256))
NOISES = (0.01, 0.02, 0.05, 0.10, 0.15)
REPS = (1, 3, 5)
PLATEAUS = ("plateau-early", "plateau-late", "flat")  # a plateau reached inside the sweep: never 'peak not reached'
DATA = Path(__file__).resolve().parent / "data" / "archaeology.json"
Curve = Callable[[float], float]

# published: (what, counts, throughput), as the R usl package (smoeding/usl, data/*.rda) holds them
SPECSDM91 = ("SPEC SDM91 on a 16-CPU Sun SPARCcenter 2000 (users, scripts/hour)", (1, 18, 36, 72, 108, 144, 216),
             (64.9, 995.9, 1652.4, 1853.2, 1828.9, 1775.0, 1702.2))
RAYTRACER = ("a ray tracer on a 64-CPU SGI Origin 2000 (CPUs, operations/s)", (1, 4, 8, 12, 16, 20, 24, 28, 32, 48, 64),
             (20.0, 78.0, 130.0, 170.0, 190.0, 200.0, 210.0, 230.0, 260.0, 280.0, 310.0))


def usl(lam: float, sigma: float, kappa: float) -> Curve:
    return lambda n: lam * n / (1.0 + sigma * (n - 1.0) + kappa * n * (n - 1.0))


def bend(knee: float, p: float, top: float = 1000.0) -> Curve:
    """A rise that bends into a flat ceiling at `knee`, sharper with p."""
    return lambda n: top * n / (n ** p + knee ** p) ** (1.0 / p)


def _retrograde(rng: np.random.Generator, counts: Sequence[int], between: bool) -> Curve:
    i = int(rng.integers(1, len(counts) - 1))
    peak = math.sqrt(counts[i] * counts[i + 1]) if between else float(counts[i])
    sigma = float(rng.uniform(0.0, 0.05))
    return usl(1000.0, sigma, (1.0 - sigma) / peak ** 2)


def _slow(rng: np.random.Generator, counts: Sequence[int]) -> Curve:
    g = float(rng.choice([0.04, 0.08, 0.12]))
    knee, cap = float(counts[1]), 8.0 * counts[-1]
    base = bend(knee, 4.0)
    return lambda n: base(n) * (min(max(n, knee), cap) / knee) ** math.log2(1.0 + g)


FAMILIES: dict[str, Callable[[np.random.Generator, Sequence[int]], Curve]] = {
    "retrograde-at": lambda rng, c: _retrograde(rng, c, False),
    "retrograde-between": lambda rng, c: _retrograde(rng, c, True),
    "plateau-early": lambda rng, c: bend(c[1] * float(rng.uniform(0.8, 1.6)), float(rng.uniform(2, 8))),
    "plateau-late": lambda rng, c: bend(c[-1] / 4 * float(rng.uniform(0.6, 1.0)), float(rng.uniform(4, 8))),
    "amdahl": lambda rng, c: usl(1000.0, float(10 ** rng.uniform(math.log10(0.02), math.log10(0.3))), 0.0),
    "slow-growth": _slow,
    "linear": lambda rng, c: (lambda n: 1000.0 * n),
    "flat": lambda rng, c: (lambda n: 5000.0),
    "outlier": lambda rng, c: bend(c[1] * float(rng.uniform(0.8, 1.6)), float(rng.uniform(2, 8))),
}


@dataclass(frozen=True)
class Truth:
    count: int | None  # the right count; None: the curve still grows
    beyond: int | None = None  # where the rule lies past the largest count, when it grows


def rule(counts: Sequence[int], tps: Sequence[float], fraction: float = FRACTION) -> int | None:
    """docs/reading-the-answer.md's rule on a curve: None when the last doubling (from the best at
    or below half the largest) gains more than the fraction leaves; else the smallest count
    reaching the fraction of the best."""
    top = len(counts) - 1
    lower = [i for i in range(top) if counts[i] <= counts[top] / 2] or list(range(top))
    ref = max(lower, key=lambda i: tps[i])
    per_doubling = (tps[top] / tps[ref]) ** (1.0 / math.log2(counts[top] / counts[ref])) - 1.0
    if per_doubling > 1.0 / fraction - 1.0 + 1e-9:
        return None
    best = max(tps)
    return next(c for c, t in zip(counts, tps, strict=True) if t >= fraction * best - 1e-9)


def truth(curve: Curve, counts: Sequence[int]) -> Truth:
    right = rule(counts, [curve(n) for n in counts])
    if right is not None:
        return Truth(right)
    grid = list(counts)
    for _ in range(8):  # the truth past the largest count, doubling by doubling
        grid.append(2 * grid[-1])
        beyond = rule(grid, [curve(n) for n in grid])
        if beyond is not None:
            return Truth(None, beyond)
    return Truth(None)


def sweep(curve: Curve, counts: Sequence[int], noise: float, reps: int, rng: np.random.Generator,
          outlier: tuple[int, float] | None = None, seconds: int = 10
          ) -> tuple[dict[int, list[float]], dict[int, list[list[float]]]]:
    """Each repetition's TPS by count, and its per-second figures."""
    by_n: dict[int, list[float]] = {}
    progress: dict[int, list[list[float]]] = {}
    for i, n in enumerate(counts):
        values = curve(n) * np.exp(rng.normal(0.0, noise, reps))
        if outlier is not None and outlier[0] == i:
            values[0] *= 1.0 - outlier[1]
        by_n[n] = values.tolist()
        progress[n] = [per_second(v, noise / 3.0, seconds, rng) for v in values]
    return by_n, progress


def per_second(mean: float, se: float, seconds: int, rng: np.random.Generator, rho: float = 0.5) -> list[float]:
    """`seconds` figures around `mean`, AR(1), whose mean has standard error about `se` (relative)."""
    sd = se * math.sqrt(seconds * (1.0 - rho) / (1.0 + rho))
    e = np.empty(seconds)
    e[0] = rng.normal(0.0, sd)
    for t in range(1, seconds):
        e[t] = rho * e[t - 1] + math.sqrt(1.0 - rho * rho) * rng.normal(0.0, sd)
    x = mean * (1.0 + e - e.mean())
    return x.tolist()


def run_data(by_n: Mapping[int, Sequence[float]], progress: Mapping[int, Sequence[Sequence[float]]] | None = None
             ) -> Any:
    """The sweep as pgknee stores it: one completed step per repetition (Little's law holding: a
    closed loop's mean latency is clients / TPS), the per-second figures, no OS samples."""
    from pgknee.model.results import RunData, RunRecord, StepRecord
    from pgknee.plan import Plan

    plan = Plan(clients=tuple(sorted(by_n)), duration_s=10, reps=max(len(v) for v in by_n.values()))
    run = RunRecord(run_id="20260101-000000-cali", created_at="2026-01-01 00:00:00.000", finished_at=None,
                    status="completed", status_reason=None, workload="ewallet", target_kind="embedded",
                    target_label="calibration", plan_json=json.dumps(plan.to_dict()), steps_planned=0)
    steps, prog, seq = [], {}, 0
    for n, values in sorted(by_n.items()):
        for rep, tps in enumerate(values, 1):
            seq += 1
            lat = 1000.0 * n / tps
            steps.append(StepRecord(
                step_id=seq, run_id=run.run_id, seq=seq, variant="base", clients=n, rep=rep, threads=1,
                protocol="prepared", duration_s=10.0, warmup_s=0.0, status="completed", status_reason=None,
                started_at="2026-01-01 00:00:00.000", bench_start=0.0, bench_end=10.0, transactions=int(tps * 10),
                failed=0, retried=0, retries=0, tps=tps, lat_avg_ms=lat, lat_stddev_ms=lat / 4, lat_min_ms=lat / 4,
                lat_p50_ms=lat, lat_p95_ms=2 * lat, lat_p99_ms=3 * lat, lat_max_ms=5 * lat, tps_pgbench=tps,
                lat_avg_pgbench_ms=lat, conn_time_ms=1.0, tps_db=tps))
            if progress is not None:
                prog[seq] = [(float(t + 1), x) for t, x in enumerate(progress[n][rep - 1])]
    return RunData(run=run, env={"host.cpus": "2", "target.kind": "embedded"}, commands=[], steps=steps, scripts={},
                   failures={}, waits={}, waits_bg={}, snaps={}, progress=prog)


def answer(by_n: Mapping[int, Sequence[float]], progress: Mapping[int, Sequence[Sequence[float]]] | None = None
           ) -> Any:
    """pgknee's recommendation for the sweep, as `pgknee recommend` reads it."""
    from pgknee.analyze.recommend import recommend
    from pgknee.analyze.run import build

    return recommend(build(run_data(by_n, progress)), "base", fraction=FRACTION)


def score(t: Truth, connections: int | None, span: tuple[int, int] | None, counts: Sequence[int]
          ) -> tuple[str, bool | None]:
    """The sweep's category, and whether its interval held the right count (None: no interval or
    no right count)."""
    if t.count is None:
        if connections is None:
            return "right", None
        return ("one step" if connections == counts[-1] and t.beyond == 2 * counts[-1] else "wrong"), None
    if connections is None:
        return "withheld", None
    steps = abs(counts.index(connections) - counts.index(t.count))
    held = span[0] <= t.count <= span[1] if span is not None else None
    return ("right" if steps == 0 else "one step" if steps == 1 else "wrong"), held


@dataclass(frozen=True)
class Case:
    family: str
    grid: int
    noise: float
    reps: int
    seed: int


def cases(draws: int, seed: int) -> Iterator[Case]:
    k = 0
    for family in FAMILIES:
        for grid in range(len(GRIDS)):
            for noise in NOISES:
                for reps in REPS:
                    for _ in range(draws):
                        k += 1
                        yield Case(family, grid, noise, reps, seed * 1_000_003 + k)


def run_case(c: Case) -> dict[str, Any]:
    rng = np.random.default_rng(c.seed)
    counts = GRIDS[c.grid]
    curve = FAMILIES[c.family](rng, counts)
    outlier = (int(rng.integers(0, len(counts))), float(rng.uniform(0.15, 0.25))) if c.family == "outlier" else None
    t = truth(curve, counts)
    by_n, progress = sweep(curve, counts, c.noise, c.reps, rng, outlier)
    r = answer(by_n, progress)
    category, held = score(t, r.connections, r.counts_interval, counts)
    return {**dataclasses.asdict(c), "counts": len(counts), "right": t.count, "beyond": t.beyond,
            "verdict": r.verdict, "connections": r.connections, "interval": r.counts_interval, "category": category,
            "held": held, "noise_measured": r.noise_pct, "plateau_not_reached": (
                c.family in PLATEAUS and t.count is not None and r.verdict == "not-identified")}


def published() -> list[dict[str, Any]]:
    """The published sweeps, each judged by the rule on what was published."""
    out = []
    for what, counts, tps in (SPECSDM91, RAYTRACER):
        r = answer({n: [x] for n, x in zip(counts, tps, strict=True)})
        t = Truth(rule(counts, tps))
        out.append(_judged(what, "one repetition", t, r, counts))
    doc = json.loads(DATA.read_text())
    for name, series in doc["series"].items():
        counts = tuple(sorted(int(n) for n in series["counts"]))
        runs = {n: series["counts"][str(n)] for n in counts}
        medians = [statistics.median(x["mean"] for x in runs[n]) for n in counts]
        t = Truth(rule(counts, medians))
        r = answer({n: [x["mean"] for x in runs[n]] for n in counts})
        out.append(_judged(f"archaeology {name}", "three runs of 60 s", t, r, counts))
        for i in range(3):
            alone = {n: [statistics.fmean(runs[n][i]["per_second"])] for n in counts}
            r = answer(alone, {n: [runs[n][i]["per_second"]] for n in counts})
            out.append(_judged(f"archaeology {name}", f"run {i + 1} alone, 20 s", t, r, counts))
    return out


def _judged(what: str, how: str, t: Truth, r: Any, counts: Sequence[int]) -> dict[str, Any]:
    category, held = score(t, r.connections, r.counts_interval, counts)
    return {"sweep": what, "how": how, "right": t.count, "verdict": r.verdict, "connections": r.connections,
            "interval": r.counts_interval, "category": category, "held": held}


def table(rows: Sequence[Mapping[str, Any]], keys: Sequence[str]) -> list[str]:
    """Per group of `keys`: sweeps, right, within one step (right or one step), rightly withheld,
    wrongly withheld, plateaus called 'peak not reached', the interval's coverage."""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[tuple(r[k] for k in keys)].append(r)
    lines = [" | ".join([*keys, "sweeps", "right", "within one step", "rightly withheld", "wrongly withheld",
                         "plateau 'not reached'", "95% interval holds"]),
             " | ".join(["---"] * (len(keys) + 7))]
    for key, rs in sorted(groups.items()):
        lines.append(" | ".join([*map(_fmt, key), *_figures(rs)]))
    return lines


def _figures(rs: Sequence[Mapping[str, Any]]) -> list[str]:
    n = len(rs)
    cat = Counter(r["category"] for r in rs)
    grows = [r for r in rs if r["right"] is None]
    counted = [r["held"] for r in rs if r["held"] is not None]
    pct = lambda a, b: f"{100 * a / b:.0f}%" if b else "-"  # noqa: E731
    return [str(n), pct(cat["right"], n), pct(cat["right"] + cat["one step"], n),
            pct(sum(r["connections"] is None for r in grows), len(grows)),
            pct(cat["withheld"], n - len(grows)),
            pct(sum(r["plateau_not_reached"] for r in rs), sum(r["family"] in PLATEAUS and r["right"] is not None
                                                               for r in rs)),
            pct(sum(counted), len(counted)) + (f" of {len(counted)}" if counted else "")]


def _fmt(x: Any) -> str:
    return f"{100 * x:g}%" if isinstance(x, float) else str(x)


def targets(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The issue's targets, each with its figure."""
    low = [r for r in rows if r["noise"] <= 0.05 and r["reps"] == 3]
    ok = sum(r["category"] in ("right", "one step") for r in low)
    plateaus = [r for r in rows if r["family"] in PLATEAUS and r["right"] is not None]
    cover: dict[tuple[str, float], list[bool]] = defaultdict(list)
    for r in rows:
        if r["held"] is not None:
            cover[(r["family"], r["noise"])].append(r["held"])
    worst = min(cover.items(), key=lambda kv: statistics.fmean(kv[1]))
    high = max(cover.items(), key=lambda kv: statistics.fmean(kv[1]))
    by_family = {f: [r for r in low if r["family"] == f] for f in FAMILIES}
    weakest = min(by_family.items(), key=lambda kv: sum(r["category"] in ("right", "one step") for r in kv[1])
                  / max(len(kv[1]), 1))
    wf = sum(r["category"] in ("right", "one step") for r in weakest[1]) / max(len(weakest[1]), 1)
    return [f"right or within one step, noise 5% or less, three repetitions: {100 * ok / len(low):.1f}% of "
            f"{len(low)} (target 95%); the weakest family, {weakest[0]}: {100 * wf:.0f}%",
            f"a plateau called 'peak not reached': "
            f"{100 * statistics.fmean(r['plateau_not_reached'] for r in plateaus):.1f}% of {len(plateaus)} "
            "(target at most 5%)",
            f"the 95% interval's coverage, by family and noise: from {100 * statistics.fmean(worst[1]):.0f}% "
            f"({worst[0][0]}, {_fmt(worst[0][1])}) to {100 * statistics.fmean(high[1]):.0f}% ({high[0][0]}, "
            f"{_fmt(high[0][1])}) (target 90% to 100%)"]


def extract(clone: Path) -> None:
    """bench/data/archaeology.json from a clone of tvondra/postgres-archaeology."""
    import re

    series: dict[str, Any] = {}
    for log in sorted(clone.glob("oltp/*-glibc-tuned/results/1/*/*/*/*.log")):
        version, run, mode, clients = log.parts[-4], log.parts[-3], log.parts[-2], int(log.stem)
        tps = [float(m.group(1)) for m in re.finditer(r"progress: [\d.]+ s, ([\d.]+) tps", log.read_text())]
        s = series.setdefault(f"{version} {mode}", {"directory": str(log.parents[4].relative_to(clone)), "scale": 1,
                                                   "counts": {}})
        s["counts"].setdefault(str(clients), []).append(
            (run, {"mean": round(statistics.fmean(tps), 1), "per_second": [round(x) for x in tps[:20]]}))
    for s in series.values():
        ordered = sorted(s["counts"].items(), key=lambda kv: int(kv[0]))
        s["counts"] = {n: [x for _, x in sorted(runs)] for n, runs in ordered}
    doc = json.loads(DATA.read_text())
    doc["series"] = dict(sorted(series.items()))
    DATA.write_text(json.dumps(doc, separators=(",", ":")) + "\n")


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--draws", type=int, default=6, help="sweeps per family, grid, noise and repetitions")
    p.add_argument("--from", dest="saved", type=Path, help="print the figures of a run saved with --json")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    p.add_argument("--json", type=Path, help="write every sweep's figures here")
    if argv[:1] == ["extract"]:
        extract(Path(argv[1]))
        return 0
    args = p.parse_args(argv)
    if args.saved:
        doc = json.loads(args.saved.read_text())
        print("\n".join(report(doc["generated"], doc["published"], doc.get("header", ""))))
        return 0
    t0 = time.monotonic()
    all_cases = list(cases(args.draws, args.seed))
    with ProcessPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(run_case, all_cases, chunksize=16))
    pub = published()
    header = (f"# {len(rows)} generated sweeps and {len(pub)} published ones, {time.monotonic() - t0:.0f} s "
              f"(seed {args.seed}, {args.draws} draws)")
    print("\n".join(report(rows, pub, header)))
    if args.json:
        args.json.write_text(json.dumps({"header": header, "generated": rows, "published": pub}, indent=1))
    return 0


def report(rows: Sequence[Mapping[str, Any]], pub: Sequence[Mapping[str, Any]], header: str) -> list[str]:
    """What the bench prints: the targets, the tables, the published sweeps summed up, then each."""
    groups: dict[str, Counter[str]] = defaultdict(Counter)
    for r in pub:
        src = r["sweep"].split(" ")[0] if r["sweep"].startswith("archaeology") else r["sweep"].split(" on ")[0]
        groups[f"{src}, {'one run' if 'alone' in r['how'] else r['how']}"][r["category"]] += 1
    summary = [f"- {k}: " + ", ".join(f"{v} {c}" for c, v in sorted(cat.items())) for k, cat in groups.items()]
    return [header, "", "## The targets", "", *(f"- {x}" for x in targets(rows)), "",
            "## By family and noise (1, 3 and 5 repetitions)", "", *table(rows, ("family", "noise")), "",
            "## By noise and repetitions", "", *table(rows, ("noise", "reps")), "", "## Published sweeps", "",
            *summary, "", " | ".join(("sweep", "how", "right count", "pgknee", "95% interval", "scored")),
            " | ".join(["---"] * 6),
            *(" | ".join((r["sweep"], r["how"], str(r["right"] or "grows"), f"{r['verdict']} {r['connections'] or ''}",
                          "..".join(map(str, r["interval"] or ())), r["category"])) for r in pub)]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
