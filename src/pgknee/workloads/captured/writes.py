"""The values a replay's writes need: keys that do not collide with the rows the copy holds, and
values that must agree between the statements of one transaction (the customer read, then
updated; the order inserted, then its lines). Catalogue reads through source.py."""

from __future__ import annotations

from pgknee.workloads.captured import generators as gen
from pgknee.workloads.captured import sqlmap
from pgknee.workloads.captured.manifest import Param
from pgknee.workloads.captured.source import Source, find_table, placed, stats, unique_keys

KEY_MAX = {"integer": 2 ** 31 - 1, "bigint": 2 ** 63 - 1}  # the key types given fresh values
MAX_STRIDE = 2 ** 24  # keys a client has to itself in one run of pgbench, at most
MIN_STRIDE = 10_000  # ... and at least


def fresh_keys(src: Source, sid: str, parsed: sqlmap.Parsed) -> dict[int, tuple[Param, gen.Drawn]]:
    """An INSERT's values that must not collide with the rows the copy holds: for each unique key of
    its table (the primary key first) set by the statement's values, one of its columns: an integer
    column's (the widest range) a key of the client's own above every value the target holds
    (_fresh), the statement as the application sent it; else DEFAULT where the column has one (a
    uuid's, say)."""
    into, by_column = _inserted(src, parsed)
    out: dict[int, tuple[Param, gen.Drawn]] = {}
    for _primary, columns, defaults in unique_keys(src, into):
        ours = [c for c in columns if c in by_column]
        if not ours or any(n in out for c in ours for n in by_column[c]):
            continue  # not set by this statement's values, or one of its columns is fresh already
        fresh = _fresh(src, sid, into, [(c, by_column[c][0]) for c in ours], max(len(by_column[c]) for c in ours))
        if fresh is not None:
            out[fresh[0].n] = fresh
            column = fresh[0].column.rsplit(".", 1)[1]
            out.update(_rows(sid, fresh[0], by_column[column]))
            continue
        with_default = [c for c, d in zip(columns, defaults, strict=True) if d and c in by_column]
        if with_default:  # a uuid's gen_random_uuid(), say: the statement's text changes (DEFAULT), its rows do not
            for n in by_column[with_default[0]]:
                out[n] = (Param(n, "default", f"{into}.{with_default[0]}", "", "DEFAULT: the column's own default, "
                                "so that no insert collides with a row"), gen.Drawn((), "DEFAULT"))
    return out


def upsert_rows(src: Source, sid: str, parsed: sqlmap.Parsed) -> dict[int, tuple[Param, gen.Drawn]]:
    """An INSERT ... ON CONFLICT's keys: drawn from the column's statistics (the application means
    them to meet rows), but one statement's rows apart (ON CONFLICT DO UPDATE refuses to change one
    row twice): the other rows' integer key row 1's plus 1, 2, ..."""
    into, by_column = _inserted(src, parsed)
    for _primary, columns, _defaults in unique_keys(src, into):
        for c in columns:
            st = stats(src, into, c)
            ns = by_column.get(c, [])
            if len(ns) > 1 and st is not None and gen.base_type(st.type) in KEY_MAX:
                var = f"{sid}_p{ns[0]}"
                return {n: (Param(n, "row", f"{into}.{c}", st.type, f"row {k + 1}'s key: row 1's plus {k}, so that "
                                  "one statement's rows do not meet one row (ON CONFLICT DO UPDATE refuses that)"),
                            gen.Drawn((f"\\set {sid}_p{n} :{var} + {k}",), f":{sid}_p{n}"))
                        for k, n in enumerate(ns) if k > 0}
    return {}


def _inserted(src: Source, parsed: sqlmap.Parsed) -> tuple[str, dict[str, list[int]]]:
    """The INSERT's table (schema.table) and each column its VALUES set: the parameters, row by row."""
    into = find_table(src, parsed.written)
    by_column: dict[str, list[int]] = {}
    for n, use in sorted(parsed.params.items()):
        if use.inserted:
            where = placed(src, n, use) if use.kind == "position" else use
            by_column.setdefault(where.column, []).append(n)
    return into, by_column


def _rows(sid: str, first: Param, ns: list[int]) -> dict[int, tuple[Param, gen.Drawn]]:
    """A multi-row INSERT's other rows' keys: the first row's fresh key less 1, 2, ... (its counter
    steps by the rows: none collides with another client's, another insert's, or another row's)."""
    var, rows = f"{sid}_p{first.n}", len(ns)
    return {n: (Param(n, "row", first.column, first.type, f"row {k + 1}'s key: row 1's fresh key less {k}, keys of "
                      "the client's own"), gen.Drawn((f"\\set {sid}_p{n} :{var} - {k}",), f":{sid}_p{n}"))
            for k, n in enumerate(ns) if k > 0 and rows > 1}


def _fresh(src: Source, sid: str, into: str, candidates: list[tuple[str, int]], rows: int = 1
           ) -> tuple[Param, gen.Drawn] | None:
    """A key column's values of the client's own: the integer candidate whose statistics span the
    widest range, set from the highest value the target holds when each pgbench run starts (its
    defines, read then: captured/__init__.py), a block per client, counted up per insert; None when
    no candidate is an integer column (its values are drawn as they are then, and may collide)."""
    best: tuple[float, str, int, str] | None = None
    for column, n in candidates:
        st = stats(src, into, column)
        if st is None or gen.base_type(st.type) not in KEY_MAX:
            continue
        seen = [float(v) for v in (*st.mcv, *st.histogram)] or [0.0]
        if best is None or max(seen) - min(seen) > best[0]:
            best = (max(seen) - min(seen), column, n, st.type)
    if best is None:
        return None
    _, column, n, type_name = best
    var = f"{sid}_p{n}"
    lines = (f"\\set {var}_seq :{var}_seq + {rows}",
             f"\\set {var} :{var}_base + :client_id * :{var}_stride + :{var}_seq")
    why = ("a key of the client's own, so that no insert collides with a row: above the highest value the target "
           "holds when each run of pgbench starts (read then), a block per client, counted up per insert")
    return Param(n, "fresh", f"{into}.{column}", type_name, why), gen.Drawn(lines, f":{var}")


def fresh_defines(var: str, highest: int, type_name: str, clients: int) -> dict[str, str]:
    """pgbench's variables for one fresh key, from the highest value the target holds: its base
    above it, each client's block (as wide as the type leaves room for, at most 2**24), the counter."""
    top = KEY_MAX[gen.base_type(type_name)]
    base = max(highest, 0) + 1
    stride = min(MAX_STRIDE, (top - base) // max(1, clients))
    if stride < MIN_STRIDE:
        raise gen.CannotDraw(f"the key {var} is within {top - base:,} of its type's largest value: "
                             f"{clients} clients' inserts cannot be kept apart")
    return {f"{var}_base": str(base), f"{var}_stride": str(stride), f"{var}_seq": "0"}
