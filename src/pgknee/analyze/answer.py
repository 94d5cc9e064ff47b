"""The recommendation as a record: its verdict, the count, how sure, and its headline. Pure.
analyze/recommend.py makes it from a sweep, reading the curve with analyze/curve.py.

The verdicts:

* `levels-off`: throughput stops growing within the noise the run measured: the answer is the
  smallest measured count reaching the fraction (95%) of the plateau's level; "for now"
  (`settled` False) when the last doubling still grew beyond what the fraction leaves but within
  the noise;
* `peaks`: throughput falls beyond the noise after its best: the answer is the smallest measured
  count reaching the fraction of the level around the peak, which may lie between two counts;
* `saturated`: a resource was saturated (the server's CPU, a wait class, the pooler) while
  throughput still grew beyond the noise at the largest count: an answer for now, read against
  the best so far, with what would settle it;
* `not-identified`: throughput still grows beyond the noise and no sampled resource saturated
  (or nothing could be sampled: `server_unseen` says why): peak not reached;
* `withheld` (the client set the pace), `open-loop` (--rate), `no-count-meets-target` (a p99
  target the user set that no count meets), `not-enough-data`: no count.

Every count comes with its 95% interval (`counts_interval`): the measured counts the same rule
picks on 95% of copies of the sweep moved by the noise the run measured (analyze/curve.py;
bench/calibration.py measures how often it holds the right count)."""

from __future__ import annotations

from dataclasses import dataclass, field

from pgknee.analyze.usl import Fit
from pgknee.analyze.words import clause, plural
from pgknee.model.keys import CheckId

ANSWERED = ("levels-off", "peaks", "saturated")  # verdicts that give a count
LEVEL_TEXT = "95% interval"  # what counts_interval is, wherever it is printed (analyze/curve.py LEVEL)


@dataclass(frozen=True)
class Recommendation:
    variant: str
    verdict: str  # ANSWERED, 'not-identified', 'withheld', 'not-enough-data', 'no-count-meets-target', 'open-loop'
    connections: int | None  # the recommended (measured) count
    fit: Fit | None  # the Universal Scalability Law: a second opinion, never the answer
    knee: int | None  # Kneedle's knee of the measured curve (analyze/saturation.py)
    heuristic: int | None  # (cores x 2) + spindles, with the server's cores; None when they are unknown
    cores: int | None  # the server's CPUs (analyze/cpus.py)
    spindles: int
    fraction: float
    p99_target_ms: float | None
    next_counts: tuple[int, ...] = ()
    reasons: tuple[str, ...] = ()
    checks: dict[CheckId, tuple[int, int]] = field(default_factory=dict)  # check -> (ok, warn) over the steps
    concurrency: str = "clients"  # or 'pool size' when a pooler caps it
    measured: tuple[int, ...] = ()  # the distinct database-side concurrencies measured
    cores_source: str = ""  # where the server's CPU count came from, or why it is unknown
    measured_best: int | None = None  # the count of the highest median throughput (steps out of line left out)
    counts_interval: tuple[int, int] | None = None  # the 95% interval: the measured counts noise would have picked
    repetitions: int = 1  # the fewest repetitions of a measured count
    level_tps: float | None = None  # the plateau's (or the peak's) level, or the best measured
    best_tps: float | None = None  # the highest median TPS measured (at measured_best)
    saturated: tuple[str, ...] = ()  # the resources that were saturated, from which count
    family: bool = False  # a pool size read across the variants of a pool sweep (analyze/poolsize.py)
    target_missed: str = ""  # no-count-meets-target: what the target costs (analyze/recommend.py)
    server_unseen: str | None = None  # not-identified, yet the server's saturation could not be seen: why, and the cure
    pooler_bound: str = ""  # a pooler process neared a full core: from which count, and what to do
    noise_pct: float | None = None  # the noise measured, % of one repetition's TPS (analyze/noise.py)
    noise_source: str = ""  # how: 'repetitions', 'scatter', 'repetitions and scatter', 'per-second', 'assumed'
    outliers: tuple[int, ...] = ()  # counts out of line with their neighbours, left out and proposed again
    settled: bool = True  # False: levels off for now (growth beyond the fraction's margin, within the noise)
    growing_share: float = 0.0  # the share of the noise's copies of the curve in which it still grows
    modelled_n: float | None = None  # the model's own N reaching the fraction of its peak (an opinion)
    modelled_interval: tuple[float, float] | None = None  # its bootstrap's 95% interval
    unsampled: str = ""  # what of the server's saturation was not sampled (peak not reached says so)
    unlike: str = ""  # withheld: a replay that did not run as the application it replays (analyze/holdcheck.py)

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

    def span_text(self) -> str:
        """'95% interval 4..16' (or '95% interval: 8 alone'), '' without one."""
        if self.counts_interval is None:
            return ""
        lo, hi = self.counts_interval
        return f"{LEVEL_TEXT} {lo}..{hi}" if lo != hi else f"{LEVEL_TEXT}: {lo} alone"

    def count_text(self) -> str:
        """'8 connections (95% interval 4..16)', or a pool: 'a pool of 8 server connections (...)'."""
        n, span = self.connections, self.span_text()
        span = clause(" ({})", span)
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

    def _target(self) -> str:
        return f" with p99 under {self.p99_target_ms:g} ms" if self.p99_target_ms else ""

    def headline(self) -> str:
        v, n = self.variant, self.connections
        if self.concurrency == "pooler processes":
            return self._processes()
        if self.verdict == "levels-off" and n is not None and not self.settled:
            top = max(self.measured, default=0)
            reps = "repetitions (--reps 3)" if self.repetitions < 3 else "more repetitions (--reps 5)"
            return (f"{v}: use {self.count_text()} for now — throughput levels off near {self.level_tps or 0:,.0f} TPS "
                    f"within the noise, but whether the last doubling's growth is real is not settled: "
                    f"{2 * top} clients and {reps} would settle it")
        if self.verdict == "levels-off" and n is not None:
            why = f" ({self.saturated[0]})" if self.saturated else ""
            what = "smallest pool measured" if self.family else "smallest count measured"
            return (f"{v}: use {self.count_text()} — throughput levels off near {self.level_tps or 0:,.0f} TPS{why}, "
                    f"and {n} is the {what} reaching {self.fraction:.0%} of it{self._target()}{self.noise_text()}")
        if self.verdict == "peaks" and n is not None:
            what = "pool" if self.family else "count"
            more = (f"; measure {', '.join(map(str, self.next_counts))} too to narrow it (pgknee run --extend RUN)"
                    if self.next_counts and not self.family else "")
            return (f"{v}: use {self.count_text()} — throughput peaks at {self.measured_best} "
                    f"({self.best_tps or 0:,.0f} TPS) and falls beyond the noise after it; {n} is the smallest {what} "
                    f"measured reaching {self.fraction:.0%} of the peak's level ({self.level_tps or 0:,.0f} TPS)"
                    f"{self._target()}{more}")
        if self.verdict == "not-identified" and self.family:
            return (f"{v}: the largest pool served most — throughput still grew beyond the noise; sweep larger pools "
                    f"({', '.join(map(str, self.next_counts))})")
        if self.verdict == "saturated" and n is not None:
            return self._saturated()
        return self._no_count()

    def _saturated(self) -> str:
        v, what = self.variant, self.saturated[0] if self.saturated else "a resource was saturated"
        upward = bool(self.next_counts) and min(self.next_counts) > max(self.measured, default=0)
        between = f"counts between ({', '.join(map(str, self.next_counts))})" if self.next_counts else ""
        if self.repetitions < 3:
            settle = (f"repetitions (--reps 3){clause(' and {}', between)} would tell whether it "
                      "levels off")
        elif upward:
            settle = (f"the growth holds over {self.repetitions} repetitions, bought with latency: one doubling "
                      f"more ({self.next_counts[0]} clients) would show where it ends")
        else:
            settle = f"over {self.repetitions} repetitions" + clause("; {} would narrow it", between)
        grew = "beyond the noise" if self.settled else "by more than 95% of the best leaves, within the noise,"
        return (f"{v}: use {self.count_text()} for now — {what}, yet throughput still grew {grew} at the largest "
                f"count; {settle}")
    def _processes(self) -> str:
        """A sweep of pgbouncer processes (analyze/poolprocs.py)."""
        v, n, best = self.variant, self.connections, self.measured_best
        if n is None:
            return (f"{v}: even {max(self.measured, default=0)} processes left the pooler near a full core or short "
                    f"of the best — try {', '.join(map(str, self.next_counts))} processes, or measure without it")
        span = f" ({self.span_text()})" if self.counts_interval and self.counts_interval != (n, n) else ""
        if self.level_tps is None:
            return (f"{v}: run {n} pgbouncer {plural(n, 'process', 'es')} — the fewest with none near a full "
                    "core (their server connections differed, so their throughput could not tell)")
        return (f"{v}: run {n} pgbouncer {plural(n, 'process', 'es')}{span} — the fewest reaching "
                f"{self.fraction:.0%} of the best ({self.level_tps or 0:,.0f} TPS with {best}) with none near a full "
                "core" + self.noise_text())

    def _no_count(self) -> str:
        v = self.variant
        if self.verdict == "not-identified" and self.pooler_bound:
            return (f"{v}: peak not reached below the pooler's ceiling — throughput still grew beyond the noise up "
                    f"to it: {self.pooler_bound}")
        if self.verdict == "not-identified" and self.server_unseen:
            grows = "still grows beyond the noise" if self.settled else "may still grow (within the noise)"
            return (f"{v}: no recommendation — throughput {grows}, and whether the server saturated cannot be seen: "
                    f"{self.server_unseen}; or run {', '.join(map(str, self.next_counts))} clients next")
        if self.verdict == "not-identified":
            seen = (f"whether a resource saturated is unknown: {self.unsampled}" if self.unsampled
                    else "no sampled resource was saturated")
            return (f"{v}: peak not reached — throughput still grows beyond the noise and {seen}; run "
                    f"{', '.join(map(str, self.next_counts))} clients next (pgknee run --clients ...)")
        if self.verdict == "withheld" and self.unlike:
            return f"{v}: no recommendation — the replay did not run as the application: {self.unlike}"
        if self.verdict == "withheld" and self.pooler_bound:
            return f"{v}: no recommendation — {self.pooler_bound}"
        if self.verdict == "withheld":
            return f"{v}: no recommendation — the client, not the database, was the bottleneck"
        if self.verdict == "open-loop":
            return (f"{v}: no recommendation — an open-loop variant (--rate) runs at its schedule, so its throughput "
                    "does not show what more connections could do; read its latency and schedule lag instead")
        if self.verdict == "no-count-meets-target":
            cost = clause(": {}", self.target_missed)
            return (f"{v}: no measured count meets both {self.fraction:.0%} of the peak and p99 under "
                    f"{self.p99_target_ms:g} ms{cost} — relax --p99-target or --min-fraction, or read p99 by count in "
                    "the tables")
        if self.concurrency == "pool size" and len(self.measured) < 3:
            return (f"{v}: not enough counts to read a curve — the pool caps the database-side concurrency, "
                    f"so the sweep measured only {', '.join(map(str, self.measured))}; sweep the pool size "
                    "instead (e.g. pool=2,4,8,16) to see which one serves best")
        return f"{v}: not enough counts to read a curve (it needs at least three client counts)"
