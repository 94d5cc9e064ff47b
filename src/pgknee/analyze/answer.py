"""The recommendation as a record: its verdict, the count, how sure, and its headline. Pure.
analyze/recommend.py makes it from a sweep.

The verdicts:

* `levels-off`: the measured throughput stops growing (flat within the noise allowance over the
  last doubling of the count): the answer is the smallest measured count reaching the fraction
  (95%) of that plateau;
* `recommended`: the scalability model places a peak (or a ceiling the sweep reaches) and the
  answer is the smallest measured count reaching the fraction of it;
* `measured-peak`: throughput fell beyond the noise after its best, a peak the model does not
  place: the answer is read against the measured best;
* `saturated`: a resource was saturated (the server's CPU, a wait class, the pooler) while
  throughput still grew beyond the noise at the largest count: an answer for now, read against
  the measured best, with what would settle it;
* `not-identified`: throughput still grows and nothing is saturated: peak not reached; or, when
  the server's CPUs are unknown and its CPU is not sampled (a managed server), withheld: whether
  it saturated cannot be seen (`server_unseen` says why and the headline how to give them);
* `withheld` (the client set the pace), `open-loop` (--rate), `no-count-meets-target`,
  `not-enough-data`: no count."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pgknee.analyze.usl import Fit
from pgknee.keys import CheckId

ANSWERED = ("levels-off", "recommended", "measured-peak", "saturated")  # verdicts that give a count


@dataclass(frozen=True)
class Recommendation:
    variant: str
    verdict: str  # ANSWERED, 'not-identified', 'withheld', 'not-enough-data', 'no-count-meets-target', 'open-loop'
    connections: int | None  # the recommended (measured) count
    interval: tuple[float, float] | None  # the model's bootstrap interval of its count; else counts_interval
    modelled_n: float | None  # the model's own smallest N reaching the fraction
    fit: Fit | None
    knee: int | None  # Kneedle's knee of the measured curve (analyze/saturation.py)
    heuristic: int | None  # (cores x 2) + spindles, with the server's cores; None when they are unknown
    cores: int | None  # the server's CPUs (analyze/machine.py)
    spindles: int
    fraction: float
    p99_target_ms: float | None
    next_counts: tuple[int, ...] = ()
    reasons: tuple[str, ...] = ()
    checks: dict[CheckId, tuple[int, int]] = field(default_factory=dict)  # check -> (ok, warn) over the steps
    concurrency: str = "clients"  # or 'pool size' when a pooler caps it
    measured: tuple[int, ...] = ()  # the distinct database-side concurrencies measured
    cores_source: str = ""  # where the server's CPU count came from, or why it is unknown
    measured_best: int | None = None  # the count of the highest measured throughput (measured-peak, saturated)
    counts_interval: tuple[int, int] | None = None  # the measured counts plausible noise would have picked
    repetitions: int = 1  # the fewest repetitions of a measured count
    level_tps: float | None = None  # the plateau's throughput (levels-off), or the best measured
    saturated: tuple[str, ...] = ()  # the resources that were saturated, from which count
    family: bool = False  # a pool size read across the variants of a pool sweep (analyze/poolsize.py)
    target_missed: str = ""  # no-count-meets-target: what the target costs (analyze/recommend.py)
    server_unseen: str | None = None  # not-identified, yet the server's saturation could not be seen: why, and the cure
    pooler_bound: str = ""  # a pooler process neared a full core: from which count, and what to do

    @property
    def answered(self) -> bool:
        return self.verdict in ANSWERED and self.connections is not None

    @property
    def wide(self) -> bool:
        """Plausible noise would move the answer by more than one measured step."""
        if self.counts_interval is None or self.connections is None:
            return False
        lo, hi = self.counts_interval
        inside = [c for c in self.measured if lo <= c <= hi]
        return len(inside) > 2 or (len(inside) == 2 and self.connections not in inside)

    def count_text(self) -> str:
        """'8 connections (4..16)', or a pool: 'a pool of 8 server connections (4..16)'."""
        n = self.connections
        lo, hi = self.counts_interval or (n, n)
        span = f" ({lo}..{hi})" if (lo, hi) != (n, n) else ""
        return (f"a pool of {n} server connections{span}" if self.concurrency == "pool size"
                else f"{n} connections{span}")

    def noise_text(self) -> str:
        """What more measuring would settle, when noise could move the answer by more than a step."""
        if not self.wide:
            return ""
        more = ""
        if self.next_counts:
            *head, last = map(str, self.next_counts)
            more = f", or measure {', '.join(head) + ' and ' if head else ''}{last} too,"
        if self.repetitions <= 1:
            return f"; one repetition: run --reps 3{more} to narrow it"
        return f"; {self.repetitions} repetitions leave it this wide: more (--reps 5){more} would narrow it"

    def headline(self) -> str:
        v, n = self.variant, self.connections
        if self.concurrency == "pooler processes":
            return self._processes()
        if self.verdict == "levels-off" and n is not None:
            why = f" ({self.saturated[0]})" if self.saturated else ""
            return (f"{v}: use {self.count_text()} — throughput levels off near {self.level_tps or 0:,.0f} TPS{why}, "
                    f"and {n} is the smallest count measured reaching {self.fraction:.0%} of it"
                    + (f" with p99 under {self.p99_target_ms:g} ms" if self.p99_target_ms else "") + self.noise_text())
        if self.verdict == "recommended" and n is not None:
            lo, hi = self.interval or (math.nan, math.nan)
            return (f"{v}: use {self.count_text()}, the smallest count measured that reaches "
                    f"{self.fraction:.0%} of the modelled peak"
                    + (f" with p99 under {self.p99_target_ms:g} ms" if self.p99_target_ms else "")
                    + (f" (the model crosses {self.fraction:.0%} at {self.modelled_n:.1f}, 95% interval "
                       f"{lo:.1f}..{hi:.1f})" if self.modelled_n is not None else "") + self.noise_text())
        if self.verdict == "measured-peak" and n is not None and self.family:
            return (f"{v}: use {self.count_text()}, the smallest pool measured within {self.fraction:.0%} of the best "
                    f"(pool {self.measured_best}, {self.level_tps or 0:,.0f} TPS): larger pools lost throughput")
        if self.verdict == "not-identified" and self.family:
            return (f"{v}: the largest pool served most — throughput still grew beyond the noise; sweep larger pools "
                    f"({', '.join(map(str, self.next_counts))})")
        if self.verdict == "measured-peak" and n is not None:
            more = (f"measure {', '.join(map(str, self.next_counts))} clients too to narrow it (pgknee run --extend "
                    "RUN adds them to this run)" if self.next_counts else "repetitions (--reps 3) would narrow it")
            return (f"{v}: use {self.count_text()} for now, the smallest count measured within "
                    f"{self.fraction:.0%} of the best measured throughput (at {self.measured_best}); the model does "
                    f"not pin the peak down yet: {more}")
        if self.verdict == "saturated" and n is not None:
            what = self.saturated[0] if self.saturated else "a resource was saturated"
            upward = bool(self.next_counts) and min(self.next_counts) > max(self.measured, default=0)
            between = f"counts between ({', '.join(map(str, self.next_counts))})" if self.next_counts else ""
            if self.repetitions < 3:
                settle = (f"repetitions (--reps 3){' and ' + between if between else ''} would tell whether it "
                          "levels off")
            elif upward:
                settle = (f"the growth holds over {self.repetitions} repetitions, bought with latency: one doubling "
                          f"more ({self.next_counts[0]} clients) would show where it ends")
            else:
                settle = f"over {self.repetitions} repetitions" + (f"; {between} would narrow it" if between else "")
            return (f"{v}: use {self.count_text()} for now — {what}, yet throughput still grew beyond the noise at "
                    f"the largest count; {settle}")
        return self._no_count()

    def _processes(self) -> str:
        """A sweep of pgbouncer processes (analyze/poolprocs.py)."""
        v, n, best = self.variant, self.connections, self.measured_best
        if n is None:
            return (f"{v}: even {max(self.measured, default=0)} processes left the pooler near a full core or short "
                    f"of the best — try {', '.join(map(str, self.next_counts))} processes, or measure without it")
        lo, hi = self.counts_interval or (n, n)
        span = f" ({lo}..{hi})" if (lo, hi) != (n, n) else ""
        if self.level_tps is None:
            return (f"{v}: run {n} pgbouncer process{'es' if n > 1 else ''} — the fewest with none near a full "
                    "core (their server connections differed, so their throughput could not tell)")
        return (f"{v}: run {n} pgbouncer process{'es' if n > 1 else ''}{span} — the fewest reaching "
                f"{self.fraction:.0%} of the best ({self.level_tps or 0:,.0f} TPS with {best}) with none near a full "
                "core" + self.noise_text())

    def _no_count(self) -> str:
        v = self.variant
        if self.verdict == "not-identified" and self.pooler_bound:
            return (f"{v}: peak not reached below the pooler's ceiling — throughput still grew beyond the noise up "
                    f"to it: {self.pooler_bound}")
        if self.verdict == "not-identified" and self.server_unseen:
            return (f"{v}: no recommendation — throughput still grows beyond the noise, and whether the server "
                    f"saturated cannot be seen: {self.server_unseen}; or run "
                    f"{', '.join(map(str, self.next_counts))} clients next")
        if self.verdict == "not-identified":
            return (f"{v}: peak not reached — throughput still grows beyond the noise and nothing was saturated; run "
                    f"{', '.join(map(str, self.next_counts))} clients next (pgknee run --clients ...)")
        if self.verdict == "withheld" and self.pooler_bound:
            return f"{v}: no recommendation — {self.pooler_bound}"
        if self.verdict == "withheld":
            return f"{v}: no recommendation — the client, not the database, was the bottleneck"
        if self.verdict == "open-loop":
            return (f"{v}: no recommendation — an open-loop variant (--rate) runs at its schedule, so its throughput "
                    "does not show what more connections could do; read its latency and schedule lag instead")
        if self.verdict == "no-count-meets-target":
            target = f"p99 under {self.p99_target_ms:g} ms" if self.p99_target_ms else "the p99 target"
            cost = f": {self.target_missed}" if self.target_missed else ""
            return (f"{v}: no measured count meets both {self.fraction:.0%} of the peak and {target}{cost} — relax "
                    "--p99-target or --min-fraction, or read p99 by count in the tables")
        if self.concurrency == "pool size" and len(self.measured) < 3:
            return (f"{v}: not enough data for a scalability model — the pool caps the database-side concurrency, "
                    f"so the sweep measured only {', '.join(map(str, self.measured))}; sweep the pool size "
                    "instead (e.g. pool=2,4,8,16) to see which one serves best")
        return f"{v}: not enough data for a scalability model (needs at least three client counts)"
