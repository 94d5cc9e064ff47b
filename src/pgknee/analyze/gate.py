"""The CI gate of `pgknee compare --fail-if`: rules such as 'tps < -5%' or 'p99 > +10%', judged
per client count (and variant) on the change from BASE to NEW and its 95% interval. Pure.

A step fails a rule when its change passes the threshold AND its interval excludes no change
(the change is beyond the noise). The interval: two runs' repetitions did not run side by side,
so it is Welch's t interval on the log of the metric (BASE's repetitions against NEW's); a run's
variants are interleaved, so it is the paired one of analyze/compare.py. With one repetition on
either side the noise is unknown: the threshold alone decides, and the row says so."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from pgknee.analyze.compare import Ratio, paired_ratio
from pgknee.analyze.view import Group, RunView
from pgknee.base import lazy
from pgknee.base.errors import UserError

# a rule's metric -> the step's field
METRICS = {"tps": "tps", "latency": "lat_avg_ms", "p50": "lat_p50_ms", "p95": "lat_p95_ms", "p99": "lat_p99_ms"}
_RULE = re.compile(r"^\s*([a-z0-9]+)\s*([<>])\s*([+-]?)(\d+(?:\.\d*)?)\s*%\s*$")
RULE_HELP = "write METRIC < -N% or METRIC > +N%, METRIC one of " + ", ".join(METRICS)


@dataclass(frozen=True)
class Rule:
    """'tps < -5%': fail when NEW's metric is more than 5% below BASE's."""

    metric: str
    op: str  # '<' (a drop) or '>' (a rise)
    pct: float  # signed: negative with '<', positive with '>'

    @property
    def text(self) -> str:
        return f"{self.metric} {self.op} {self.pct:+g}%"

    def passed_threshold(self, change_pct: float) -> bool:
        return change_pct < self.pct if self.op == "<" else change_pct > self.pct

    def beyond_noise(self, r: Ratio) -> bool | None:
        """Whether the interval lies wholly on the rule's side of no change (None: no interval)."""
        if r.lo is None or r.hi is None:
            return None
        return r.hi < 1.0 if self.op == "<" else r.lo > 1.0


def parse_rule(text: str) -> Rule:
    m = _RULE.match(text.lower())
    if m is None:
        raise UserError(f"--fail-if {text!r} is not a rule", RULE_HELP + ", e.g. 'tps < -5%' or 'p99 > +10%'")
    metric, op, sign, number = m.groups()
    if metric not in METRICS:
        raise UserError(f"--fail-if {text!r}: unknown metric {metric!r}", RULE_HELP)
    pct = float(number) * (-1 if sign == "-" else 1)
    if pct == 0 or (op == "<") != (pct < 0):
        want = f"{metric} < -{number}%" if op == "<" else f"{metric} > +{number}%"
        raise UserError(f"--fail-if {text!r}: a rule names a drop (< -N%) or a rise (> +N%) beyond a threshold "
                        "other than 0", f"write {want!r}" if float(number) else RULE_HELP)
    return Rule(metric, op, pct)


@dataclass(frozen=True)
class GateRow:
    rule: Rule
    variant: str  # NEW's variant (or 'A → B' between runs' variants of other names)
    clients: int
    base: float | None  # the geometric means of the repetitions (what the change is the ratio of)
    new: float | None
    ratio: Ratio | None  # NEW / BASE with its 95% interval; None: the metric was not measured
    noise: bool | None  # beyond the noise; None: unknown (one repetition)
    failed: bool

    @property
    def change_pct(self) -> float | None:
        return None if self.ratio is None else 100.0 * (self.ratio.value - 1.0)

    @property
    def verdict(self) -> str:
        if self.ratio is None:
            return "not measured"
        if self.failed:
            return "FAIL" + (" (noise unknown: one repetition)" if self.noise is None else "")
        if self.noise is False and self.rule.passed_threshold(self.change_pct or 0.0):
            return "PASS (within the noise)"
        return "PASS"


@dataclass(frozen=True)
class Gate:
    rules: tuple[Rule, ...]
    rows: tuple[GateRow, ...]
    base: str  # what NEW is measured against: a run id, or the first variant
    unmatched: tuple[str, ...] = ()  # steps of one side with nothing to compare to
    paired: bool = False  # a run's variants against its first (paired repetitions), not two runs

    @property
    def failed(self) -> bool:
        return any(r.failed for r in self.rows)


def welch_ratio(base: Sequence[float], new: Sequence[float]) -> Ratio | None:
    """NEW over BASE from two independent samples: the geometric means' ratio, with Welch's t
    interval on the logs (None bounds with fewer than two values on a side)."""
    a = [math.log(x) for x in base if x and x > 0]
    b = [math.log(x) for x in new if x and x > 0]
    if not a or not b:
        return None
    d = statistics.fmean(b) - statistics.fmean(a)
    if len(a) < 2 or len(b) < 2:
        return Ratio(math.exp(d), None, None, min(len(a), len(b)))
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0:
        return Ratio(math.exp(d), math.exp(d), math.exp(d), min(len(a), len(b)))
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    half = float(lazy.stats().t.ppf(0.975, df)) * math.sqrt(va + vb)
    return Ratio(math.exp(d), math.exp(d - half), math.exp(d + half), min(len(a), len(b)))


def _row(rule: Rule, variant: str, base: Group, new: Group, paired: bool) -> GateRow:
    attr = METRICS[rule.metric]
    if paired:
        r = paired_ratio(base.done, new.done, attr)
    else:
        r = welch_ratio([getattr(s, attr) for s in base.done if getattr(s, attr)],
                        [getattr(s, attr) for s in new.done if getattr(s, attr)])
    values = [statistics.geometric_mean(v) if (v := [getattr(s, attr) for s in g.done if getattr(s, attr)]) else None
              for g in (base, new)]
    if r is None:
        return GateRow(rule, variant, new.clients, values[0], values[1], None, None, False)
    noise = rule.beyond_noise(r)
    failed = rule.passed_threshold(100.0 * (r.value - 1.0)) and noise is not False
    return GateRow(rule, variant, new.clients, values[0], values[1], r, noise, failed)


def _pairs(views: Sequence[RunView]) -> tuple[list[tuple[str, Group, Group]], list[str], bool, str]:
    """(label, BASE's group, NEW's group) to judge, the unmatched steps, whether paired, the base."""
    if len(views) == 1:
        variants = views[0].variants()
        by = {(g.variant, g.clients): g for g in views[0].groups}
        pairs = [(g.variant, by[(variants[0], g.clients)], g) for g in views[0].groups
                 if g.variant != variants[0] and (variants[0], g.clients) in by]
        lost = [f"{g.variant} c{g.clients}" for g in views[0].groups
                if g.variant != variants[0] and (variants[0], g.clients) not in by]
        return pairs, lost, True, variants[0]
    a, b = views
    single = len(a.variants()) == 1 and len(b.variants()) == 1  # one variant each: its name may differ

    def key(g: Group) -> tuple[str, int]:
        return ("", g.clients) if single else (g.variant, g.clients)

    base = {key(g): g for g in a.groups}
    pairs = [(g.variant if a.variants() == b.variants() else f"{base[key(g)].variant} → {g.variant}",
              base[key(g)], g) for g in b.groups if key(g) in base]
    seen = {key(g) for g in b.groups}
    lost = ([f"{b.data.run.run_id} {g.variant} c{g.clients}" for g in b.groups if key(g) not in base]
            + [f"{a.data.run.run_id} {g.variant} c{g.clients}" for g in a.groups if key(g) not in seen])
    return pairs, lost, False, a.data.run.run_id


def judge(views: Sequence[RunView], rules: Sequence[Rule]) -> Gate:
    """Every rule at every matched client count (and variant)."""
    pairs, lost, paired, base = _pairs(views)
    if not pairs:
        raise UserError("--fail-if: the runs have no client count (and variant) in common to compare",
                        "compare runs that measured the same client counts")
    rows = tuple(_row(rule, label, b, n, paired) for rule in rules for label, b, n in pairs)
    for rule in rules:
        if all(r.ratio is None for r in rows if r.rule == rule):
            raise UserError(f"--fail-if {rule.text!r}: no compared step measured {rule.metric}",
                            "choose a metric the runs measured (tps, latency)")
    return Gate(tuple(rules), rows, base, tuple(lost), paired)
