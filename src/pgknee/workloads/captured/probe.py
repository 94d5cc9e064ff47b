"""A range's width found on the source. `col >= $4 AND col < $3` (a stock level's last twenty
orders) says nothing in pg_stat_statements or pg_stats about how wide the application asks, and
the width decides the plan: on the order entry's copy a nested loop over twenty orders' lines
reads 626 shared blocks in 0.5 ms, thirty orders a hash join over the whole stock table, 908
blocks in 3-5 ms. So the statement is run under EXPLAIN (ANALYZE, BUFFERS) at widths around one
histogram bucket, each other parameter at a typical value of its column, and the width whose
shared blocks come nearest the application's per call (pg_stat_statements' shared_blks_hit +
shared_blks_read over its calls) is kept.

Only a SELECT that locks nothing is run, in the capture's read-only transaction, each run in a
savepoint rolled back at once, under a statement_timeout of PROBE_MS; a dozen runs of a statement
the application runs thousands of times. A width that changes nothing read (or a probe refused)
leaves the bucket's width, said so."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
from psycopg import sql

from pgknee.workloads import queries
from pgknee.workloads.captured import generators as gen
from pgknee.workloads.captured.source import Source, stats

FACTORS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1, 2, 4)  # of one histogram bucket's width
PROBE_MS = 2000
NUMBERS = gen.INTEGERS | gen.FLOATS | {"unknown"}  # the types a probe may name for its parameters
NARROWING = 6  # halvings between the two widths that straddle the application's blocks


@dataclass(frozen=True)
class Scale:
    """A column's numbers as a probe widens and narrows a range on them: whole (an integer
    column's) or real."""

    whole: bool
    widened: Callable[[float, float], float]  # one bucket's width and a factor of FACTORS -> the width probed
    between: Callable[[float, float], float]  # two widths -> the one probed between them
    shown: Callable[[float], str]  # a number as the statement's literal


# whole: widths rounded, one at least, halved between two; real: as they are, the geometric mean between two
WHOLE = Scale(True, lambda bucket, f: max(1.0, float(round(bucket * f))), lambda a, b: float((a + b) // 2),
              lambda x: str(int(x)))
REAL = Scale(False, lambda bucket, f: bucket * f, lambda a, b: math.sqrt(a * b), repr)


def typical(src: Source, column: str) -> str | None:
    """A value of schema.table.column the application is likely to ask: its most common, else the
    middle of its histogram; None without statistics."""
    table, name = column.rsplit(".", 1)
    st = stats(src, table, name)
    if st is None:
        return None
    if st.mcv:
        return st.mcv[0]
    return st.histogram[len(st.histogram) // 2] if st.histogram else None


def blocks(src: Source, query: str, values: dict[int, str], types: dict[int, str]) -> float | None:
    """The shared blocks the statement's execution reads with these values ($n -> a literal's text,
    every $n of it), the numbers among them of the `types` given (`id < $2 + $3` leaves the server
    nothing to infer them from; any other is inferred: 'unknown'); None when the server refuses it
    or it runs out of time."""
    args = sql.SQL(", ").join(sql.Literal(values[n]) for n in sorted(values))
    given = [types.get(n, "unknown") for n in sorted(values)]
    if any(t not in NUMBERS for t in given):  # (a type's name in the statement: a known one only)
        return None
    typed = sql.SQL(" ({})").format(sql.SQL(", ").join(sql.SQL(t) for t in given))
    try:
        with src.conn.transaction(force_rollback=True):  # the timeout undone with it
            src.conn.execute(queries.text("captured_probe_timeout"), {"ms": str(PROBE_MS)})
            src.conn.execute(sql.SQL("PREPARE pgknee_capture_probe{} AS {}").format(typed, sql.SQL(query)))
            try:
                with src.conn.transaction():  # a probe out of time: the prepared statement still deallocated
                    # EXPLAIN's one row: FORMAT JSON's array of one object, its Plan's buffer figures always
                    # there under BUFFERS (every figure is shown in the structured formats, zeros too)
                    explain = sql.SQL("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) EXECUTE pgknee_capture_probe ({})")
                    [(explained,)] = src.conn.execute(explain.format(args)).fetchall()
            finally:
                src.conn.execute("DEALLOCATE pgknee_capture_probe")
    except psycopg.Error:
        return None
    plan = explained[0]["Plan"]
    return float(plan["Shared Hit Blocks"] + plan["Shared Read Blocks"])


def width(at: Callable[[float], float | None], bucket: float, scale: Scale,
          target: float) -> tuple[float, dict[float, float]] | None:
    """The width (of a range of one histogram bucket `bucket`) at which `at(width)`, the blocks read,
    comes nearest `target` (the application's blocks per call), and every width probed with its
    blocks; None when no two widths read differently (the width changes nothing: keep the bucket).
    Pure but for `at`."""
    widths = sorted({scale.widened(bucket, f) for f in FACTORS})
    seen = {w: b for w in widths if (b := at(w)) is not None}
    if target <= 0 or len(set(seen.values())) < 2:
        return None
    below = [w for w in sorted(seen) if seen[w] < target]
    above = [w for w in sorted(seen) if seen[w] >= target]
    if below and above and below[-1] < above[0]:  # narrowed between the two: plans change within a bucket
        a, b = below[-1], above[0]
        for _ in range(NARROWING):
            m = scale.between(a, b)
            if scale.whole and b - a <= 1 or (got := at(m)) is None:
                break
            seen[m] = got
            a, b = (m, b) if got < target else (a, m)
    best = min(seen, key=lambda w: (abs(math.log(max(seen[w], 0.5) / target)), w))
    return best, seen


def range_width(src: Source, query: str, values: dict[int, str], params: tuple[int, int, bool],
                st: gen.ColumnStats, target: float, shifts: tuple[int, ...] = ()) -> tuple[str, str] | None:
    """The step a range's upper bound `$hi` is drawn above its lower `$lo` (generators.upper_bound's
    `step`), or the range's width `$hi` itself (`col < $lo + $hi`: `relative`), found by probing the
    statement with `values` for its other parameters (`shifts`: of the column's type, as the
    bounds); with the words saying how. None: numbers only, and a width that changed nothing."""
    lo, hi, relative = params
    kind = gen.base_type(st.type)
    if kind not in gen.INTEGERS | gen.FLOATS or len(st.histogram) < 2:
        return None
    try:
        bounds = [float(v) for v in st.histogram]
    except ValueError:
        return None
    bucket = gen.median_bucket(bounds)
    lower = bounds[len(bounds) // 2]
    scale = WHOLE if kind in gen.INTEGERS else REAL
    shown = scale.shown
    numbers = {n: kind for n in (lo, hi, *shifts)}
    found = width(lambda w: blocks(src, query, {**values, lo: shown(lower), hi: shown(w if relative else lower + w)},
                                   numbers), bucket, scale, target)
    if found is None:
        return None
    best, seen = found
    probed = ", ".join(f"{shown(w)}: {b:.0f}" for w, b in sorted(seen.items()))
    return shown(best), (f"{said(shown(best), lo, relative)}, the width at which the statement reads "
                         f"nearest the application's {target:.0f} shared blocks a call on the source (width: blocks "
                         f"read, {probed})")


def said(step: str, lo: int, relative: bool) -> str:
    """A range's step in words: the width itself (`relative`: `col < $lo + $hi`), or the upper
    bound drawn `step` above the lower `$lo`."""
    return f"the range's width: {step}" if relative else f"the range's upper bound: ${lo} + {step}"
