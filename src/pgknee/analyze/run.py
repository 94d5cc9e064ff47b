"""The analysis of one run: its steps grouped by variant and client count (analyze/groups.py),
with the warnings (analyze/warnings.py); several runs combined into one view. Pure: it reads a
RunData and returns records (analyze/view.py) for the renderers."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pgknee.analyze.groups import group_of
from pgknee.analyze.view import RunView
from pgknee.analyze.warnings import run_warnings
from pgknee.model.results import RunData, RunRecord, StepRecord
from pgknee.model.rules import DEFAULT_NOISE_PCT, DEFAULT_SUMMARY

__all__ = ["RunListing", "RunView", "build", "combined", "combined_name", "listing", "missing_steps",
           "planned_variants"]  # RunView: cli/run.py imports it from here


def build(data: RunData, summary: str | None = None, noise_pct: float | None = None) -> RunView:
    """`summary`: 'median' of the repetitions (default), or 'best' of N (the repetition with the
    highest TPS, as article 002 reports); `noise_pct`: the TPS spread across repetitions above
    which a step is flagged noisy. By default both are what the run's plan asked for."""
    plan = data.run.plan
    if summary is None:
        summary = plan.get("summary", DEFAULT_SUMMARY)
    if noise_pct is None:
        noise_pct = float(plan.get("noise_pct", DEFAULT_NOISE_PCT))
    by_key: dict[tuple[str, int], list[StepRecord]] = {}  # in the order first run
    for s in data.steps:
        by_key.setdefault((s.variant, s.clients), []).append(s)
    groups = tuple(group_of(data, variant, clients, steps, summary, noise_pct)
                   for (variant, clients), steps in by_key.items())
    view = RunView(data, groups, summary=summary)
    return RunView(data, groups, tuple(run_warnings(view)), summary=summary)


def planned_variants(view: RunView) -> list[str]:
    """The variants the run's plan asked for (those that ran, for a plan without names)."""
    return [str(v.get("name")) for v in view.run.plan.get("variants") or []] or view.variants()


def combined_name(label: str, view: RunView, variant: str) -> str:
    """A variant's name in several runs combined: the run's label, or LABEL:variant when the
    run planned several."""
    return label if len(planned_variants(view)) <= 1 else f"{label}:{variant}"


def _shifted(t: float | None, shift: float) -> float | None:
    """A step's time on the combined timeline; one not recorded (None, or 0) stays None."""
    return t + shift if t else None


def combined(views: Sequence[RunView], labels: Sequence[str]) -> RunView:
    """Several runs as one view whose 'variants' are LABEL or LABEL:variant. Steps keep
    their own records; the first run's environment stands for the machine."""
    groups = []
    steps: list[StepRecord] = []
    progress: dict[int, list[tuple[float, float]]] = {}
    seq = 0
    cursor: float | None = None  # the runs' steps follow one another on the timeline, 10 s apart
    for label, v in zip(labels, views, strict=True):
        groups += [dataclasses.replace(g, variant=combined_name(label, v, g.variant)) for g in v.groups]
        own = sorted(v.data.steps, key=lambda s: s.seq)
        starts = [s.bench_start for s in own if s.bench_start]
        shift = 0.0 if cursor is None or not starts else cursor - min(starts)
        for s in own:
            seq += 1
            steps.append(dataclasses.replace(
                s, variant=combined_name(label, v, s.variant), seq=seq,
                bench_start=_shifted(s.bench_start, shift), bench_end=_shifted(s.bench_end, shift)))
        ends = [s.bench_end + shift for s in own if s.bench_end]
        if ends:
            cursor = max(ends) + 10.0
        progress.update(v.data.progress)
    data = dataclasses.replace(views[0].data, steps=steps, progress=progress)
    return dataclasses.replace(views[0], data=data, groups=tuple(groups),
                               warnings=tuple(f"{lb}: {w}" for lb, v in zip(labels, views, strict=True)
                                              for w in v.warnings))


def missing_steps(view: RunView) -> list[tuple[str, int, int]]:
    """Steps the run's plan asked for that the store has no record of: (variant, clients, rep)."""
    plan = view.run.plan
    want = Counter((v, c, r) for c in plan.get("clients", []) for r in range(1, int(plan.get("reps", 1)) + 1)
                   for v in planned_variants(view))
    lost = want - Counter((s.variant, s.clients, s.rep) for s in view.data.steps)  # a count may repeat
    return [k for k in want if k in lost for _ in range(lost[k])]


@dataclass(frozen=True)
class RunListing:
    """A stored run in a list of runs: how many steps completed, and the best of them."""

    run: RunRecord
    completed: int
    best: StepRecord | None  # the completed step with the highest TPS
    # 'running' but its pgknee is gone (dead on this host, silent past claims.STALE_RUN_S on another)
    gone: bool = False
    silent_s: float | None = None  # 'running': since its pgknee last wrote to it

    @property
    def status(self) -> str:
        """The stored status, and what is known of a 'running' run's pgknee."""
        if self.run.status != "running":
            return self.run.status
        if self.gone:
            return "running, its pgknee gone"
        if self.silent_s is not None and self.silent_s >= SILENT_S:
            return f"running (silent {self.silent_s / 60:.0f} min)"
        return "running"


SILENT_S = 120.0  # a running run's pgknee writes every few seconds while a step samples


def listing(run: RunRecord, steps: Sequence[StepRecord], *, gone: bool = False,
            silent_s: float | None = None) -> RunListing:
    done = [s for s in steps if s.status == "completed"]
    return RunListing(run, len(done), max(done, key=lambda s: s.tps or 0) if done else None, gone, silent_s)
