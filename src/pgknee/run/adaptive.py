"""pgknee run --until-answer: the steps chosen as the run goes. The plan's client counts are the
coarse start (cli/run.py makes them: analyze.adaptive.coarse over the allowed range); after it,
and after each count chosen, the run so far is read back from the store and analyze/adaptive.py
says what to measure next and why, or why it stops. Each choice is a batch: the plan's --reps
repetitions of one count, numbered 1.. as a plan naming the count again would number them.

--budget is the wall time since the command started, setup included: a batch that would not end
within it, less the choice after it (the time the last choice took, FIRST_CHOICE_S before one
was timed) and what the run's end needs (TAIL_S: the workload's check, stopping the server), is
not started; nor is a choice made with no room for a step after it. What the command prints
after the run (the tables; a recommendation or a report when asked for) is not in the budget. A step's expected
time is the longest a step of this run took, or the plan's estimate before the first one.

The stored plan says what ran: until_answer and budget_s, and as its client counts those of the
batches run and chosen (rewritten after each choice), so that the run reads as any other."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pgknee.analyze.run import build
from pgknee.model.keys import Env
from pgknee.plan import Plan
from pgknee.run.schedule import StepSpec
from pgknee.run.ui import UI
from pgknee.store.load import load_run
from pgknee.store.writer import RunWriter

if TYPE_CHECKING:  # the model (scipy) loads when an adaptive run makes its first choice
    from pgknee.analyze import adaptive as ad

TAIL_S = 5.0  # kept from the budget for the run's end, besides the last choice's time
FIRST_CHOICE_S = 5.0  # what a choice (a fit of the model) is reckoned to take before one was timed


@dataclass(frozen=True)
class Answer:
    """The answer looked for (the recommendation's options) and when the budget's clock started."""

    fraction: float = 0.95
    p99_target_ms: float | None = None
    started: float = field(default_factory=time.monotonic)


def _clock(seconds: float) -> str:
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


class AdaptiveSteps:
    """The run's steps, chosen as it goes; iterate it as the orchestrator iterates a plan's steps
    (each step is run and written before the next is asked for). len(): the steps chosen so far."""

    def __init__(self, plan: Plan, writer: RunWriter, ui: UI, answer: Answer, first: list[StepSpec]) -> None:
        from pgknee.analyze import adaptive as ad

        self.plan, self.writer, self.ui, self.answer = plan, writer, ui, answer
        self.variant = plan.variants[0]
        self.settings = ad.Settings(min(plan.clients), max(plan.clients), fraction=answer.fraction,
                                    p99_target_ms=answer.p99_target_ms, batch=plan.reps, max_reps=max(3, 2 * plan.reps))
        self.batches: list[list[StepSpec]] = []
        for s in first:
            if s.rep == 1 or not self.batches:
                self.batches.append([])
            self.batches[-1].append(s)
        self.walls: list[float] = []  # each step's wall time, its write included
        self.choice_s = FIRST_CHOICE_S  # the time the last choice took (a fit of the model)
        self.stopped: str | None = None

    def __len__(self) -> int:
        return sum(len(b) for b in self.batches)

    def __iter__(self) -> Iterator[StepSpec]:
        from pgknee.analyze import adaptive as ad

        s = self.settings
        budget = f", budget {_clock(self.plan.budget_s)}" if self.plan.budget_s else ""
        self.ui.say(f"until-answer: looking for the answer between {s.lo} and {s.hi} clients (grid "
                    f"{','.join(map(str, ad.grid(s.lo, s.hi)))}){budget}; coarse sweep first: "
                    + ", ".join(str(b[0].clients) for b in self.batches))
        self.writer.set_environment({Env.UNTIL_ANSWER_TARGET: f"{s.fraction:g} of the peak" + (
            f", p99 under {s.p99_target_ms:g} ms" if s.p99_target_ms else "")})
        i = 0
        while True:
            while i < len(self.batches):
                if self._affordable() < 1:
                    why = f"budget spent: the next batch ({self._batch_text(i)}) would not end within it"
                    del self.batches[i:]
                    self._stop(why)
                    return
                for spec in self.batches[i]:
                    t0 = time.monotonic()
                    yield spec
                    self.walls.append(time.monotonic() - t0)
                i += 1
            if self._affordable() < 1:  # no room for a step after the choice: no choice
                self._stop("budget spent: no room left for another step")
                return
            nxt = self._next()
            if nxt.stopped:
                self._stop(nxt.why)
                return
            self._add(nxt.counts)
            self.ui.say(f"until-answer: measuring next {nxt.why}")

    def _batch_text(self, i: int) -> str:
        b = self.batches[i]
        return f"{b[0].clients} clients" + (f" x {len(b)}" if len(b) > 1 else "")

    def _step_s(self) -> float:
        p = self.plan
        return max(self.walls) if self.walls else p.duration_s + p.warmup_s + p.pre_s + p.post_s + p.settle_s + 2.0

    def _left_s(self) -> float:
        if self.plan.budget_s is None:
            return math.inf
        # the choice after the batch; the run's end: the workload's check, stopping the server
        return self.answer.started + self.plan.budget_s - time.monotonic() - TAIL_S - self.choice_s

    def _affordable(self) -> int:
        """Batches that still end within the budget."""
        left = self._left_s()
        if math.isinf(left):
            return 1_000_000
        return max(0, int(left // (self._step_s() * self.plan.reps)))

    def _next(self) -> ad.Next:
        from pgknee.analyze import adaptive as ad

        t0 = time.monotonic()
        view = build(load_run(self.writer.store, self.writer.run_id))
        nxt = ad.next_step(view, self.variant.name, self.settings, affordable=self._affordable())
        self.choice_s = time.monotonic() - t0
        if nxt.counts and self._affordable() < len(nxt.counts):  # the choice itself took the time
            kept = nxt.counts[:self._affordable()]
            if not kept:
                return ad.Next((), f"budget spent: the next step ({nxt.why}) would not end within it",
                               ad.BUDGET_SPENT, nxt.recommendation)
            nxt = ad.Next(kept, nxt.why, None, nxt.recommendation)
        return nxt

    def _add(self, counts: tuple[int, ...]) -> None:
        seq = max((s.seq for b in self.batches for s in b), default=0)
        for c in counts:
            self.batches.append([StepSpec(seq + r, self.variant, c, r) for r in range(1, self.plan.reps + 1)])
            seq += self.plan.reps
        self._replan()

    def _replan(self) -> None:
        self.writer.replan({**self.plan.to_dict(), "clients": [b[0].clients for b in self.batches]}, len(self))

    def _stop(self, why: str) -> None:
        self.stopped = why
        self._replan()
        self.writer.set_environment({Env.UNTIL_ANSWER_STOPPED: why})
        wall = time.monotonic() - self.answer.started
        budget = f" of the {_clock(self.plan.budget_s)} budget" if self.plan.budget_s else ""
        self.ui.say(f"until-answer: stopped after {len(self)} steps, {_clock(wall)}{budget}: {why}")
