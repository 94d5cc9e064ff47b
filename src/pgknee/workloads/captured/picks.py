"""How an application picks the values it looks rows up by (`col = $1`, `col IN ($1, ...)`, the one
condition of a plain SELECT of one table, sqlmap.Parsed.picks): as often as the rows hold each
(pg_stats' frequencies, as generators draws them: a tweet's author as often as the author tweeted)
or each key alike (a user, then that user's tweets). Where the column's values are not unique the
two ways differ in the rows a call returns, which pg_stat_statements counts: picked by its rows, a
value of c rows of N comes up c/N of the time, and a call returns sum(c * c / N) rows a value on
average; picked by its keys, N/K (K the keys drawn from: those of the table a foreign key
references, else the span of the column's whole numbers). The capture draws the way whose rows per
call are nearer those the application's calls returned, when the two are far enough apart to tell,
and an IN list with as many distinct values as those rows say (an application padding its list to a
fixed length with its last value, as BenchBase does and Hibernate's in_clause_parameter_padding).
Pure: no server; the source is read by source.keys_of."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from pgknee.workloads.captured import generators as gen
from pgknee.workloads.captured.manifest import Param

APART = 1.5  # the two ways' rows per call at least this far apart (a ratio), or the rows cannot tell them apart


@dataclass(frozen=True)
class Keys:
    """The keys a column's values are drawn from when picked by keys: their statistics (a
    referenced key's, or one range of whole numbers), how many, and where they come from, in words."""

    stats: gen.ColumnStats
    count: float
    said: str


# no keys known to draw from: as many as a division by them leaves no rows (per_value's 0.0)
NO_KEYS = Keys(gen.ColumnStats(""), math.inf, "no keys known")


@dataclass(frozen=True)
class Judged:
    """The rows a call would return picked each way (each of its values distinct), the rows the
    application's calls returned, and what pgknee makes of them."""

    by_rows: float
    by_keys: float  # 0.0: no keys to draw from
    seen: float
    keyed: bool  # drawn by keys
    distinct: int  # values a call holds, as its rows say (an IN list's others repeat the last)

    @property
    def apart(self) -> bool:
        """The two ways' rows far enough apart for the application's to tell them apart."""
        return self.by_keys > 0 and max(self.by_rows, self.by_keys) >= APART * min(self.by_rows, self.by_keys)

    def said(self, k: int) -> str:
        way = ("each key alike" if self.keyed else "as often as its rows hold it")
        why = (f"the application's calls returned {self.seen:.1f} rows; picked by the rows {self.by_rows:.1f}"
               + (f", by the keys {self.by_keys:.1f}" if self.by_keys else ", with no keys to pick from"))
        pad = (f"; {self.distinct} distinct of the {k} values a call, as its rows say (the others repeat the "
               "last, as an application padding its list does)" if self.distinct < k else "")
        return f"picked {way} ({why}){pad}"


def distinct(st: gen.ColumnStats) -> float:
    """The column's distinct values (pg_stats' n_distinct: a count, or minus a share of the rows)."""
    return st.n_distinct if st.n_distinct > 0 else -st.n_distinct * st.rows


def classes(st: gen.ColumnStats) -> list[tuple[float, float]]:
    """The column's values as classes of (values, rows each): each common value; the others spread
    over the histogram's buckets, each bucket the same share of their rows and of their distinct
    values in proportion to its width (numbers and times), else one class of them all. Empty when
    pg_class has not counted the table's rows."""
    n = st.rows
    if n <= 0:
        return []
    out = [(1.0, f * n) for f in st.mcf]
    rest_rows = n * (1.0 - st.null_frac) - sum(c for _, c in out)
    rest_values = distinct(st) - len(out)
    if rest_rows <= 0 or rest_values < 1:
        return out
    widths = _widths(st)
    if not widths or sum(widths) <= 0:
        return [*out, (rest_values, rest_rows / rest_values)]
    for w in widths:
        values = max(1.0, rest_values * w / sum(widths))
        out.append((values, rest_rows / len(widths) / values))
    return out


def _widths(st: gen.ColumnStats) -> list[float]:
    how = gen.AS_NUMBER.get(gen.base_type(st.type))
    if how is None or len(st.histogram) < 2:
        return []
    try:
        bounds = [float(how.of_text(b).strip("()")) for b in st.histogram]
    except (gen.CannotDraw, ValueError):
        return []
    return [b - a for a, b in zip(bounds, bounds[1:], strict=False)]


def per_value(values: list[tuple[float, float]], keys: float) -> tuple[float, float]:
    """A value's rows on average picked by its rows (sum c*c / N) and by keys (N / keys: 0.0 with
    NO_KEYS' infinitely many)."""
    rows = sum(n * c for n, c in values)
    if rows <= 0:
        return 0.0, 0.0
    return sum(n * c * c for n, c in values) / rows, rows / keys


def judge(st: gen.ColumnStats, keys: float, k: int, seen: float) -> Judged:
    """The way the application picks the `k` values of a call from what its calls returned
    (`seen` rows each on average) against each way's prediction; when the statistics or the calls
    say nothing (the table's rows never counted, no row returned), a judgement that changes nothing
    (not apart, every value distinct)."""
    rows, keyed = per_value(classes(st), keys)
    told = Judged(k * rows, k * keyed, seen, False, k)
    if rows <= 0 or seen <= 0:
        return told
    by_keys = told.apart and abs(math.log(seen / (k * keyed))) < abs(math.log(seen / (k * rows)))
    each = keyed if by_keys else rows
    return replace(told, keyed=by_keys, distinct=max(1, min(k, round(seen / each))))


def whole_span(st: gen.ColumnStats) -> Keys:
    """A column of whole numbers whose values fill at least half their span: its keys, each
    number from the least to the greatest pg_stats shows; NO_KEYS otherwise."""
    if gen.base_type(st.type) not in gen.INTEGERS or st.rows <= 0:
        return NO_KEYS
    try:
        numbers = [int(float(v)) for v in (*st.mcv, *st.histogram)]
    except ValueError:
        return NO_KEYS
    if len(numbers) < 2:
        return NO_KEYS
    lo, hi = min(numbers), max(numbers)
    values = distinct(st)
    if hi - lo + 1 > 2 * values:
        return NO_KEYS
    return Keys(gen.ColumnStats(st.type, histogram=(str(lo), str(hi))), hi - lo + 1.0,
                f"each whole number from {lo} to {hi} alike ({values:.0f} distinct values fill the span)")


def redrawn(sid: str, each: dict[int, tuple[Param, gen.Drawn]], ns: tuple[int, ...], judged: Judged,
            keys: Keys) -> dict[int, tuple[Param, gen.Drawn]]:
    """The picking parameters `ns` drawn as judged: by keys from `keys`, an IN list's values past
    the distinct ones the last distinct one's; each Param saying how. Unchanged, and nothing said,
    where the rows could not tell the ways apart and count every value (a unique key's lookup)."""
    if not judged.apart and judged.distinct == len(ns):
        return each
    out = dict(each)
    said = judged.said(len(ns))  # in full on the first; the others point to it
    for i, n in enumerate(ns):
        param, drawn = each[n]
        if i >= judged.distinct:
            last = ns[judged.distinct - 1]
            out[n] = (replace(param, drawn=f"the same value as ${last} (the list padded, as ${ns[0]} says)", mcv=[],
                              mcf=[]), gen.Drawn((), out[last][1].placeholder))
            continue
        why = said if i == 0 else f"as ${ns[0]}"
        if judged.keyed:  # only with keys to draw from: NO_KEYS predicts no rows, never apart
            out[n] = (replace(param, drawn=f"{keys.said}: {why}", mcv=[], mcf=[]), gen.draw(f"{sid}_p{n}", keys.stats))
        else:
            out[n] = (replace(param, drawn=f"{param.drawn}; {why}"), drawn)
    return out
