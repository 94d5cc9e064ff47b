"""The order of a run's steps: client counts in the order given, repetitions, and the variants
interleaved inside each (clients, repetition), so that machine drift does not look like a
difference between variants."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass

from pgknee.plan import Plan, Variant


@dataclass(frozen=True)
class StepSpec:
    seq: int
    variant: Variant
    clients: int
    rep: int


def schedule(plan: Plan, *, first_seq: int = 1) -> list[StepSpec]:
    out: list[StepSpec] = []
    for clients in plan.clients:
        for rep in range(1, plan.reps + 1):
            for v in plan.variants:
                out.append(StepSpec(first_seq + len(out), v, clients, rep))
    return out


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + secrets.token_hex(2)
