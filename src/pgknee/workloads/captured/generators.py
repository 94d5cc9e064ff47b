"""A parameter's values, drawn like the column's own: pg_stats' most common values at their
frequencies, the rest uniformly over a histogram bucket chosen uniformly (each bucket holds the
same share of the other rows), written in pgbench's script language. Numbers are drawn by
pgbench itself; so are dates, times with their day and intervals, as numbers (seconds since the
epoch, days since 2000-01-01, seconds) turned back into their type in the statement
(to_timestamp, a date plus days, make_interval): their text holds colons, which pgbench would take
for its variables. Any other type is a quoted literal picked from a list by an index pgbench
draws (pgbench's variables hold numbers only). Pure: no server."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime

INTEGERS = frozenset({"smallint", "integer", "bigint"})
FLOATS = frozenset({"numeric", "real", "double precision"})
EVEN = 0.2  # histogram buckets this close to their mean width are drawn as one range
SCALE = 1_000_000  # the MCVs' cumulative frequencies in millionths
NEXT = " \\\n    "  # a meta-command continued on the next line (pgbench: backslash-return)
# a type name as format_type writes it, and nothing else, becomes part of the script
TYPE_NAME = re.compile(r"[a-z][a-z ]{0,40}(\(\d{1,6}(,\d{1,6})?\))?(\[\])?")
DAY_ZERO = date(2000, 1, 1)
INTERVAL = re.compile(r"(?:(-?\d+) days? ?)?(?:(-)?(\d+):(\d\d):(\d\d(?:\.\d+)?))?")
# pgbench replaces ':name' in a statement even inside a quoted literal; control characters stay out
UNSAFE = re.compile(r"[\x00-\x1f\x7f]|:[A-Za-z0-9_]")


class CannotDraw(Exception):
    """The column's statistics cannot be turned into a generator: the reason, in words."""


@dataclass(frozen=True)
class ColumnStats:
    type: str  # format_type's name
    null_frac: float = 0.0
    n_distinct: float = 0.0
    mcv: tuple[str, ...] = ()
    mcf: tuple[float, ...] = ()
    histogram: tuple[str, ...] = ()
    rows: float = 0.0  # the table's, as pg_class last counted them (0: never counted)


@dataclass(frozen=True)
class Drawn:
    """A parameter's pgbench lines and what stands for `$n` in the statement."""

    lines: tuple[str, ...]
    placeholder: str


def quote_literal(value: str) -> str:
    """A value as an SQL string literal that reads the same whatever the target's
    standard_conforming_strings: with a backslash in it, an escape string (E'...', backslashes
    doubled), where a plain literal would let a backslash end it early under the setting's off."""
    bad = UNSAFE.search(value)
    if bad:
        what = (f"{bad.group()!r}, which pgbench would read as one of its variables" if bad.group().startswith(":")
                else f"the control character U+{ord(bad.group()):04X}")
        shown = value if len(value) <= 40 else value[:37] + "..."
        raise CannotDraw(f"the value {shown!r} holds {what}: pgknee cannot pass it in a pgbench script")
    if "\\" in value:
        return "E'" + value.replace("\\", "\\\\").replace("'", "''") + "'"
    return "'" + value.replace("'", "''") + "'"


def draw(var: str, st: ColumnStats) -> Drawn:
    """The lines setting :var (and its helpers :var_r, :var_b) for a value of the column."""
    if not st.mcv and len(st.histogram) < 2:
        raise CannotDraw("pg_stats holds neither common values nor a histogram for its column "
                         "(run ANALYZE on the source, or grant SELECT on the table to the capturing role)")
    if base_type(st.type) in INTEGERS | FLOATS:
        return _numeric(var, st)
    if base_type(st.type) in TEMPORAL:
        return _temporal(var, st)
    return _listed(var, st)


def base_type(name: str) -> str:
    """'numeric(10,2)' -> 'numeric'."""
    return name.split("(", 1)[0].strip()


def _thresholds(st: ColumnStats) -> list[int]:
    """Cumulative MCV frequencies among the non-null rows, in millionths; the rest is the histogram's."""
    total = sum(st.mcf) if len(st.histogram) < 2 else max(1e-9, 1.0 - st.null_frac)
    out, acc = [], 0.0
    for f in st.mcf:
        acc += f / total
        out.append(min(SCALE, round(acc * SCALE)))
    return out


def _number(text: str, integer: bool) -> str:
    try:
        x = float(text)
    except ValueError:
        raise CannotDraw(f"the statistics value {text[:20]!r} is not a number") from None
    if not math.isfinite(x):
        raise CannotDraw(f"the statistics value {text[:20]!r} is not a finite number")
    if integer:
        return _signed(x, str(int(x)))
    return _signed(x, repr(x))


def _signed(x: float, text: str) -> str:
    """A number's text in pgbench's expressions: a negative one in parentheses."""
    return f"({text})" if x < 0 else text


def _numeric(var: str, st: ColumnStats) -> Drawn:
    integer = base_type(st.type) in INTEGERS
    mcv = [_number(v, integer) for v in st.mcv]
    bounds = [_number(v, integer) for v in st.histogram]
    lines = [f"\\set {var}_r random(1, {SCALE})"] if mcv else []  # which common value, if any
    if len(bounds) == 2 or _even(bounds):  # one bucket, or buckets alike (a key): one range, no case to choose
        rest = _within(bounds[0], bounds[-1], integer)
    elif len(bounds) > 2:
        lines.append(f"\\set {var}_b random(0, {len(bounds) - 2})")
        picks = [(str(i), _within(lo, hi, integer)) for i, (lo, hi) in enumerate(zip(bounds, bounds[1:], strict=False))]
        rest = _first_at_most(f":{var}_b", picks[:-1], picks[-1][1])
    else:  # no histogram, so common values (draw refuses a column with neither): the last is the case's else
        rest = mcv[-1]
    if mcv:
        arms = [(str(t), v) for t, v in zip(_thresholds(st), mcv, strict=True)]
        lines.append(f"\\set {var} {_first_at_most(f':{var}_r', arms, rest)}")
    else:
        lines.append(f"\\set {var} {rest}")
    return Drawn(tuple(lines), f":{var}")


def _first_at_most(x: str, arms: list[tuple[str, str]], other: str) -> str:
    """pgbench's expression for the value of the first arm (limit, value) whose limit `x` is at
    most, `other` past them all (limits rising): a tree of CASEs halving the arms, so a value of a
    hundred common ones costs pgbench's client seven comparisons, not fifty (the social
    network's replay, 8,000 transactions a second on the application's two cores, ran 6-25%
    below it with the arms compared one by one)."""
    if len(arms) <= 3:
        whens = NEXT.join(f"when {x} <= {limit} then {value}" for limit, value in arms)
        return f"case {whens}{NEXT}else {other} end" if arms else other
    mid = len(arms) // 2
    return (f"case when {x} <= {arms[mid][0]} then ({_first_at_most(x, arms[:mid], arms[mid][1])}){NEXT}"
            f"else ({_first_at_most(x, arms[mid + 1:], other)}) end")


def _even(bounds: list[str]) -> bool:
    """Histogram buckets all within 20% of their mean width: the rest of the values are spread
    evenly (a key's), drawn from one range; a case of a hundred buckets costs pgbench's client a
    hundred comparisons a value (the order entry's replay spent 27% of a core on them)."""
    values = [float(b.strip("()")) for b in bounds]
    widths = [b - a for a, b in zip(values, values[1:], strict=False)]
    mean = (values[-1] - values[0]) / len(widths) if widths else 0.0
    return len(widths) > 1 and mean > 0 and all(abs(w - mean) <= EVEN * mean for w in widths)


def _temporal(var: str, st: ColumnStats) -> Drawn:
    """A date, a time with its day or an interval, drawn as a number and turned back in the statement."""
    how = TEMPORAL[base_type(st.type)]
    as_numbers = replace(st, type=how.number_type, mcv=tuple(how.of_text(v) for v in st.mcv),
                         histogram=tuple(how.of_text(v) for v in st.histogram))
    drawn = _numeric(var, as_numbers)
    return Drawn(drawn.lines, how.expression.format(drawn.placeholder))


def _epoch(text: str) -> str:
    try:
        t = datetime.fromisoformat(text.strip())
    except ValueError:
        raise CannotDraw(f"the statistics value {text[:40]!r} is not a time pgknee can read (ISO, as DateStyle "
                         "ISO writes it)") from None
    return repr((t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp())


def _days(text: str) -> str:
    try:
        return str((date.fromisoformat(text.strip()) - DAY_ZERO).days)
    except ValueError:
        raise CannotDraw(f"the statistics value {text[:40]!r} is not a date pgknee can read") from None


def _seconds_of_interval(text: str) -> str:
    """'3 days 04:05:06.5', '00:05:00', '-1 days' (IntervalStyle postgres, without months) -> seconds."""
    m = INTERVAL.fullmatch(text.strip())
    if m is None or not any(m.groups()):
        raise CannotDraw(f"the statistics value {text[:40]!r} is not an interval pgknee can read (days and "
                         "hours only, IntervalStyle postgres)")
    days, neg, h, mi, sec = m.groups()
    clock = int(h or 0) * 3600 + int(mi or 0) * 60 + float(sec or 0)
    return repr(int(days or 0) * 86400 + (-clock if neg else clock))


def _within(lo: str, hi: str, integer: bool) -> str:
    if integer:
        return f"random({lo}, {hi})"
    return f"{lo} + ({hi} - {lo}) * random(0, {SCALE}) / {float(SCALE)!r}"


def _listed(var: str, st: ColumnStats) -> Drawn:
    """Any other type: a literal array of the common values then the histogram's bounds (values
    seen between them are not in the statistics), indexed by the drawn :var."""
    if not TYPE_NAME.fullmatch(st.type):
        raise CannotDraw(f"its column's type {st.type[:40]!r} is not one pgknee can name in a script")
    values = [quote_literal(v) for v in (*st.mcv, *st.histogram)]
    n_mcv = len(st.mcv)
    lines = [f"\\set {var}_r random(1, {SCALE})"]
    rest = f"random({n_mcv + 1}, {len(values)})" if st.histogram else str(max(1, n_mcv))
    if n_mcv:
        arms = [(str(t), str(i)) for i, t in enumerate(_thresholds(st), 1)]
        lines.append(f"\\set {var} {_first_at_most(f':{var}_r', arms, rest)}")
    else:
        lines.append(f"\\set {var} {rest}")
    return Drawn(tuple(lines), f"(ARRAY[{', '.join(values)}]::{st.type}[])[:{var}]")


@dataclass(frozen=True)
class AsNumber:
    """A type whose values pgbench draws as numbers: the number's unit, the statement's expression
    of it (`{}` the number), the number's type as _numeric draws it, the number from pg_stats' text."""

    unit: str
    expression: str
    number_type: str
    of_text: Callable[[str], str]

    @property
    def whole(self) -> bool:
        """Its numbers are whole: a range's width is one at least."""
        return self.number_type in INTEGERS


# temporal types drawn as numbers
TEMPORAL = {
    "timestamp with time zone": AsNumber("seconds since the epoch", "to_timestamp({})", "double precision", _epoch),
    "timestamp without time zone": AsNumber("seconds since the epoch", "(to_timestamp({}) AT TIME ZONE 'UTC')",
                                            "double precision", _epoch),
    "date": AsNumber("days since 2000-01-01", "(DATE '2000-01-01' + {})", "integer", _days),
    "interval": AsNumber("seconds", "make_interval(secs => {})", "double precision", _seconds_of_interval),
}
# every type a range's bounds may be drawn apart by a width: the numbers as they are, and the temporal ones
AS_NUMBER = {**{k: AsNumber("", "{}", k, str) for k in INTEGERS | FLOATS}, **TEMPORAL}


def median_bucket(bounds: list[float]) -> float:
    """The median width of a histogram's buckets (its bounds as numbers, at least two)."""
    return sorted(b - a for a, b in zip(bounds, bounds[1:], strict=False))[(len(bounds) - 1) // 2]


def range_width(var: str, st: ColumnStats, step: str = "") -> tuple[Drawn, str]:
    """A range's width as a parameter of its own (`col >= $1 AND col < $1 + $2`): `step` (probed
    on the source), else one histogram bucket's width. Numbers only."""
    if base_type(st.type) not in INTEGERS | FLOATS or len(st.histogram) < 2:
        raise CannotDraw(f"the width of a range on a column of type {st.type} without a histogram")
    width = median_bucket([float(v) for v in st.histogram])
    step = step or _step(width, AS_NUMBER[base_type(st.type)].whole)
    return Drawn((f"\\set {var} {step}",), f":{var}"), step


def upper_bound(var: str, lower: str, st: ColumnStats, step: str = "") -> tuple[Drawn, str]:
    """A range's upper bound drawn with its lower (`col >= $4 AND col < $3`): the lower (pgbench's
    number `lower`) plus `step` (the width probed on the source, workloads.captured.probe), else one
    histogram bucket's width (the median bucket: 1% of the rows at pg_stats' 100), where two values
    drawn apart would span half the table. Numbers and times only."""
    kind = base_type(st.type)
    how = AS_NUMBER.get(kind)
    if how is None or len(st.histogram) < 2:
        raise CannotDraw(f"a range on a column of type {kind} without a histogram: its bounds are drawn apart")
    width = median_bucket([float(how.of_text(v)) for v in st.histogram])
    step = step or _step(width, how.whole)
    return Drawn((f"\\set {var} :{lower} + {step}",), how.expression.format(f":{var}")), step


def _step(width: float, whole: bool) -> str:
    """A range's width as its script adds it: whole numbers rounded, one at least."""
    return str(max(1, round(width))) if whole else repr(width)
