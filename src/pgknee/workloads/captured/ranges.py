"""A range on one column drawn as the application asks it: its upper bound from its lower at the
width probed on the source (probe.py), or one histogram bucket's; a bound written as a sum
(`col < $2 + $3`: the bound and a shift of 0; `col < $1 + $2` beside `col >= $1`: the width)."""

from __future__ import annotations

import dataclasses

from pgknee.workloads.captured import generators as gen
from pgknee.workloads.captured import probe, sqlmap
from pgknee.workloads.captured.manifest import Param
from pgknee.workloads.captured.source import Source, first_column, stats

NOT_PROBED = ("", "")  # no step found on the source, no words for it: one histogram bucket's, said so


def drawn_together(src: Source, sid: str, statement: tuple[str, sqlmap.Parsed],
                   each: dict[int, tuple[Param, gen.Drawn]], blocks: float) -> dict[int, int]:
    """A range on one column (`col >= $4 AND col < $3`, BETWEEN): its upper bound drawn from its
    lower (generators.upper_bound) at the width probed on the source for a SELECT that reads
    `blocks` a call (probe.py), else one histogram bucket's, in place in `each`; upper -> lower, the
    upper's line after it."""
    query, parsed = statement
    out: dict[int, int] = {}
    for column in {u.column for u in parsed.params.values() if u.side}:
        sides = {u.side: n for n, u in parsed.params.items()
                 if u.column == column and u.side and u.kind in ("column", "width")}
        lo, hi = sides.get("lower"), sides.get("upper")
        if lo is None or hi is None or each[lo][0].use != "column":
            continue
        table = each[lo][0].column.rsplit(".", 1)[0]
        st = stats(src, table, column)
        if st is None:
            continue
        width = parsed.params[hi].kind == "width"  # `col < $1 + $2`: $2 is the width itself
        given, told = _probed(src, (query, parsed), each, (lo, hi, width), st, blocks)
        var = f"{sid}_p{hi}"
        try:
            drawn, step = gen.range_width(var, st, given) if width else gen.upper_bound(var, f"{sid}_p{lo}", st, given)
        except gen.CannotDraw:
            continue  # drawn apart, as each alone
        why = told or (
            f"{probe.said(step, lo, width)} (one histogram bucket; the width the application asks is not in the "
            "statistics, and probing the statement on the source did not tell it: edit the script)")
        each[hi] = (dataclasses.replace(each[hi][0], drawn=why, mcv=[], mcf=[]), drawn)
        if not width:
            out[hi] = lo
    return out


def _probed(src: Source, statement: tuple[str, sqlmap.Parsed], each: dict[int, tuple[Param, gen.Drawn]],
            bounds: tuple[int, int, bool], st: gen.ColumnStats, blocks: float) -> tuple[str, str]:
    """probe.range_width for a SELECT that locks nothing and whose every other parameter is a
    column's value (or a bound's shift, 0): the step and the words saying how it was found;
    NOT_PROBED for any other statement, or a probe that told nothing."""
    query, parsed = statement
    if parsed.kind != "read" or parsed.locks:
        return NOT_PROBED
    values: dict[int, str] = {}
    for n, (p, _) in each.items():
        if n in bounds[:2]:
            continue
        value = probe.typical(src, p.column) if p.use == "column" else "0" if p.use == "shift" else None
        if value is None:
            return NOT_PROBED
        values[n] = value
    shifts = tuple(n for n, (p, _) in each.items() if p.use == "shift")
    return probe.range_width(src, query, values, bounds, st, blocks, shifts) or NOT_PROBED


def in_sum(src: Source, var: str, n: int, use: sqlmap.ParamUse) -> tuple[Param, gen.Drawn]:
    """A parameter of a range's bound written as a sum. A 'shift' (`col < $2 + $3`, the bound $2
    drawn from the lower): nothing, 0 (a zero interval on a timestamp). A 'width' (`col < $1 + $2`
    beside `col >= $1`): one histogram bucket's width until _ranges probes the one the application
    reads; numbers only."""
    found, st = first_column(src, use)
    kind = gen.base_type(st.type) if st is not None else ""
    if use.kind == "shift":
        zero = "interval '0'" if kind.startswith("timestamp") else "0"
        return (Param(n, "shift", f"{found}.{use.column}", kind, f"{zero}: added to the range's bound, which is drawn "
                      "as the bound itself (the lower plus the range's width)"), gen.Drawn((), zero))
    if st is None or kind not in gen.INTEGERS | gen.FLOATS:
        raise gen.CannotDraw(f"${n} is the width of a range on {use.column} ({kind or 'no statistics'}): numbers only")
    drawn, step = gen.range_width(var, st)
    return (Param(n, "width", f"{found}.{use.column}", kind, f"the range's width: {step} (one histogram bucket)"),
            drawn)
