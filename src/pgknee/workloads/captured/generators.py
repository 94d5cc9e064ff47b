"""A parameter's values, drawn like the column's own: pg_stats' most common values at their
frequencies, the rest uniformly over a histogram bucket chosen uniformly (each bucket holds the
same share of the other rows), written in pgbench's script language. Numbers are drawn by
pgbench itself; any other type is a quoted literal picked from a list by an index pgbench draws
(pgbench's variables hold numbers only). Pure: no server."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

INTEGERS = frozenset({"smallint", "integer", "bigint"})
FLOATS = frozenset({"numeric", "real", "double precision"})
SCALE = 1_000_000  # the MCVs' cumulative frequencies in millionths
NEXT = " \\\n    "  # a meta-command continued on the next line (pgbench: backslash-return)
# a type name as format_type writes it, and nothing else, becomes part of the script
TYPE_NAME = re.compile(r"[a-z][a-z ]{0,40}(\(\d{1,4}(,\d{1,4})?\))?(\[\])?")
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


@dataclass(frozen=True)
class Drawn:
    """A parameter's pgbench lines and what stands for `$n` in the statement."""

    lines: tuple[str, ...]
    placeholder: str


def quote_literal(value: str) -> str:
    """A value as an SQL string literal that reads the same whatever the target's
    standard_conforming_strings: with a backslash in it, an escape string (E'...', backslashes
    doubled), where a plain literal would let a backslash end it early under the setting's off."""
    if UNSAFE.search(value):
        raise CannotDraw(f"the value {value[:20]!r} holds a character pgknee cannot pass safely in a pgbench script")
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
        return f"({int(x)})" if x < 0 else str(int(x))
    return f"({x!r})" if x < 0 else repr(x)


def _numeric(var: str, st: ColumnStats) -> Drawn:
    integer = base_type(st.type) in INTEGERS
    mcv = [_number(v, integer) for v in st.mcv]
    bounds = [_number(v, integer) for v in st.histogram]
    lines = [f"\\set {var}_r random(1, {SCALE})"]
    rest = mcv[-1] if mcv else "0"
    if len(bounds) >= 2:
        lines.append(f"\\set {var}_b random(0, {len(bounds) - 2})")
        picks = [f"when :{var}_b = {i} then {_within(lo, hi, integer)}" for i, (lo, hi)
                 in enumerate(zip(bounds, bounds[1:], strict=False))]
        rest = "case " + NEXT.join(picks[:-1]) + f" else {_within(bounds[-2], bounds[-1], integer)} end"
    if mcv:
        whens = NEXT.join(f"when :{var}_r <= {t} then {v}" for t, v in zip(_thresholds(st), mcv, strict=True))
        lines.append(f"\\set {var} case {whens}{NEXT}else {rest} end")
    else:
        lines.append(f"\\set {var} {rest}")
    return Drawn(tuple(lines), f":{var}")


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
        whens = NEXT.join(f"when :{var}_r <= {t} then {i}" for i, t in enumerate(_thresholds(st), 1))
        lines.append(f"\\set {var} case {whens}{NEXT}else {rest} end")
    else:
        lines.append(f"\\set {var} {rest}")
    return Drawn(tuple(lines), f"(ARRAY[{', '.join(values)}]::{st.type}[])[:{var}]")

