"""One transaction's pgbench script, built from its statements' own scripts (capture.py) as the
application runs it. Pure.

- A statement run k times in each transaction (calls over the group's transactions) repeats:
  statements that repeat alike in a row make one block (an order's lines: the item read, the
  stock locked and updated, the line inserted), unrolled under \\if, its passes drawn per
  transaction uniformly around k (the observed mean; the spread is not observed).
- Values that must agree are kept the same. Columns are linked when they are one column or a
  foreign key joins them (order_line.ol_o_id to orders.o_id). A parameter on a column linked to
  one an earlier statement of the transaction set or compared takes that statement's value: the
  customer read, then updated; the order inserted, then its lines. A block's pass links within
  itself first (the item read is the stock row locked). A fresh key (writes.py) takes only a key
  inserted earlier in the transaction (the order's id, in its lines), never a value read: the
  row it inserts is new. Two parameters of one statement on one column (a range) keep their own
  values.
- A value a SELECT returns (an integer column, as it is) that a later statement compares or sets
  is that value (\\aset, the last row's; -1, which no key is, when no row was found): the
  delivery's oldest order found, then deleted. An INSERT keeps its own draw.
- An INSERT in a block whose unique key's other columns are all the transaction's values (the
  order's lines) sets the rest of that key, an integer column nothing else sets, to the pass:
  1, 2, ... (the line number).
- A statement run in a share of the transactions only (a bad credit's) runs under one draw per
  transaction, in that share; what it binds is not taken by the statements after it. The two arms
  of a choice (grouping found one by their sum: a vote inserted one way or the other) run under
  one draw, \\if and \\elif, never both.
- The rows a block locks or updates are locked in the order of their keys: pass i of n draws from
  the i-th of n slices of the column's range (random orders deadlock).
- The samples' order gives way where it must (ordered): a row locked before it is updated, a
  parent inserted before its child.
- The idle inside the transaction, less the client's own turnarounds (pauses.share_slept), is
  split over its gaps; none is slept when they account for all of it.
- A statement run once per transaction draws its values before BEGIN, as an application computes
  its inputs before it begins (the transaction holds only its statements and the idle between
  them); a block's or a share's draws stay where they run.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pgknee.workloads.captured import grouping, pauses
from pgknee.workloads.captured.generators import INTEGERS, base_type
from pgknee.workloads.captured.manifest import Param

AGREEING = frozenset({"column", "fresh", "expression"})
ALIKE = 0.25  # statements whose repeats per transaction differ by less make one block
OPTIONAL = 0.9  # a statement run in fewer of the transactions than this runs in that share of them
MAX_PASSES = 64


@dataclass(frozen=True)
class Part:
    """A statement of the transaction: its own script's meta-commands and SQL, its parameters,
    how many times it runs per transaction, and (an INSERT) its table's unique-key columns."""

    sid: str
    metas: tuple[str, ...]
    sql: str
    params: tuple[Param, ...]
    repeat: float = 1.0
    keys: frozenset[str] = frozenset()  # schema.table.column of the unique keys, for an INSERT
    inserts: bool = False
    table: str = ""  # the table an INSERT, UPDATE or DELETE writes (schema.table)
    locked: frozenset[str] = frozenset()  # the tables a SELECT ... FOR UPDATE locks rows of
    returns: tuple[tuple[str, str], ...] = ()  # a SELECT's integer columns: (the name returned, schema.table.column)


@dataclass
class _Scope:
    bound: dict[str, str] = field(default_factory=dict)  # a class of linked columns -> the variable holding it
    fresh: set[str] = field(default_factory=set)  # the classes bound to a key inserted in this transaction
    ascending: set[str] = field(default_factory=set)  # a block's rows it locks: their keys rise pass by pass
    said: list[str] = field(default_factory=list)
    read: set[str] = field(default_factory=set)  # the classes bound to a value a SELECT returned
    reading: frozenset[str] = frozenset()  # the statements whose returned values a later one uses
    passes: int = 0  # in a block's pass: the most passes the block runs

    def inner(self, ascending: set[str] | None = None, passes: int = 0) -> _Scope:
        """A scope inside this one (a share's, an arm's, a pass's): what it binds stays in it."""
        return _Scope(dict(self.bound), set(self.fresh), ascending or set(), [], set(self.read), self.reading,
                      passes)


def links_of(pairs: Sequence[tuple[str, str]]) -> dict[str, str]:
    """Each linked column's class: the columns the foreign keys' column pairs connect, one name
    standing for them all."""
    columns = list(dict.fromkeys(c for pair in pairs for c in pair))
    return {c: part[0] for part in grouping.components(columns, list(pairs)) for c in part}


def ordered(parts: Sequence[Part], parents: dict[str, set[str]]) -> list[Part]:
    """The samples' order, where it breaks what must come first moved: a row inserted before the
    rows that reference it (the order before its lines: a foreign key), a row locked (SELECT ...
    FOR UPDATE) before it is updated or deleted. Moves the earlier one to just before the later."""
    out = list(parts)

    def first(a: Part, b: Part) -> bool:
        if a.inserts and b.inserts and a.table in parents.get(b.table, set()):
            return True
        return bool(b.table) and not b.inserts and b.table in a.locked

    for _ in range(len(out) ** 2):
        bad = next(((i, j) for i in range(len(out)) for j in range(i + 1, len(out)) if first(out[j], out[i])), None)
        if bad is None:
            break
        i, j = bad
        out.insert(i, out.pop(j))
    return out


def runs(p: Part) -> float:
    """How many times the script runs the statement per transaction, on average: its repeats when
    it repeats (1.5 or more) or runs in some of them only, else once (the rest of its calls, run
    outside the transaction, keep a script of their own)."""
    return p.repeat if p.repeat >= 1.5 or p.repeat < OPTIONAL else 1.0


Choices = Sequence[tuple[tuple[str, ...], tuple[str, ...]]]


def blocks(parts: Sequence[Part], choices: Choices = ()) -> list[tuple[float, list[Part]]]:
    """The statements in order, those that repeat alike in a row together (passes, statements), and
    so those that run in only some transactions alike in a row (their share, statements); an arm
    of a choice (`choices`, its statements together: together()) is a unit of its own, in its share
    however near all the transactions."""
    out: list[tuple[float, list[Part]]] = []
    arm = {sid: (i, side) for i, pair in enumerate(choices) for side, sids in enumerate(pair) for sid in sids}
    for p in parts:
        mine = arm.get(p.sid)
        k = p.repeat if mine is not None and p.repeat < 1 else runs(p)
        theirs = {arm.get(m.sid) for m in out[-1][1]} if out else set()
        alike = bool(out) and k != 1 and out[-1][0] != 1 and (k > 1) == (out[-1][0] > 1) \
            and abs(k - out[-1][0]) <= ALIKE * out[-1][0]
        if (mine is not None and theirs == {mine}) or (mine is None and theirs == {None} and alike):
            prev_k, members = out[-1]
            out[-1] = ((prev_k * len(members) + k) / (len(members) + 1), [*members, p])
        else:
            out.append((k, [p]))
    return out


def together(parts: Sequence[Part], choices: Choices) -> list[Part]:
    """The two arms of each choice next to each other, the first's statements then the second's, where
    the most frequent of them runs (the samples place it best: a rare arm is seldom seen)."""
    out = list(parts)
    for first, second in choices:
        mine = [p for p in out if p.sid in first] + [p for p in out if p.sid in second]
        if not mine:
            continue
        anchor = max(mine, key=lambda p: p.repeat)
        at = [p.sid for p in out if p.sid not in {m.sid for m in mine} or p is anchor].index(anchor.sid)
        rest = [p for p in out if p not in mine]
        out = [*rest[:at], *mine, *rest[at:]]
    return out


def text(name: str, g: grouping.Group, parts: Sequence[Part], links: dict[str, str], points: Sequence[float],
         turn_ms: float = pauses.TURNAROUND_MS) -> str:
    """The transaction's script: BEGIN, its statements (blocks unrolled) with the application's idle
    time, less the client's own turnarounds (`turn_ms` each), split between them, COMMIT; the
    values drawn before each statement that needs them."""
    parts = together(parts, g.choices)
    outer = _Scope(reading=_reading(parts, links))
    body: list[str] = ["BEGIN;"]
    units = blocks(parts, g.choices)
    slots = sum(k * len(members) for k, members in units)
    gaps = gaps_of(units)
    slept = pauses.share_slept(points, slots, turn_ms)  # 0 without points: their mean is 0
    sleeps = slept > 0
    head: list[str] = []
    other = _other_arms(units, g.choices)
    for b, (k, members) in enumerate(units):
        if b in other.values():
            continue  # run as the other arm of an earlier unit's choice
        if b in other:
            _either(f"{name}_o{b + 1}", units[b], units[other[b]], outer, links, sleeps, head, body)
        elif k == 1:  # its draws before BEGIN, as an application computes its inputs before it begins
            lines = _statement(members[0], outer, links, None, sleeps)
            sql_at = next(i for i, line in enumerate(lines) if not line.startswith("\\"))
            head += lines[:sql_at]
            body += lines[sql_at:]
        elif k < 1:
            _sometimes(f"{name}_o{b + 1}", k, members, outer, links, sleeps, head, body)
        else:
            _repeated(f"{name}_b{b + 1}", k, members, outer, links, sleeps, head, body)
    while sleeps and slots > 1.5 and body[-1].startswith("\\sleep"):
        body.pop()  # the idle time lies between the statements (one alone: before COMMIT)
    body.append("COMMIT;")
    lines = [f"-- pgknee captured transaction {name}: {', '.join(g.statements)} in one transaction ({g.evidence})",
             _idle_said(points, slots, gaps, slept, turn_ms), *(f"-- {s}" for s in dict.fromkeys(outer.said))]
    return "\n".join([*lines, *head, *(pauses.sleep_lines(points, gaps, slept) if sleeps else []), *body, ""])


def _idle_said(points: Sequence[float], slots: float, gaps: int, slept: float, turn_ms: float) -> str:
    if not points:
        return "-- no idle time inside it was observed"
    turns = (f"{slots + 1:.0f} turnarounds of {turn_ms:.2f} ms (one before each statement and COMMIT: the "
             "client's own time between two statements, which pgbench spends too)")
    seen = f"about {pauses.mean_of(points):.1f} ms (p50 {points[5]:.1f}, p90 {points[9]:.1f}, p99 {points[10]:.1f})"
    if slept <= 0:
        return f"-- idle inside it {seen}, no more than {turns}: not slept"
    return (f"-- idle inside it, drawn per transaction: {seen}, {slept:.0%} of each draw slept over about "
            f"{gaps} sleep(s); the rest is {turns}")


def _sometimes(var: str, k: float, members: list[Part], outer: _Scope, links: dict[str, str], sleeps: bool,
               head: list[str], body: list[str]) -> None:
    """Statements run in a share k of the transactions: under one draw per transaction."""
    head.append(f"\\set {var} random(1, 1000)")
    outer.said.append(f"{', '.join(m.sid for m in members)} in {k:.0%} of the transactions")
    body.append(f"\\if :{var} <= {max(1, round(k * 1000))}")
    inner = outer.inner()  # what they bind is not there when they do not run
    for m in members:
        body += _statement(m, inner, links, None, sleeps)
    body.append("\\endif")
    outer.said += inner.said


def _other_arms(units: Sequence[tuple[float, list[Part]]], choices: Choices) -> dict[int, int]:
    """The units that are the two arms of a choice, the first's index -> the second's: each run in
    a share of the transactions, their shares together no more than all of them (within 5%)."""
    at = {m.sid: b for b, (_, members) in enumerate(units) for m in members}
    out: dict[int, int] = {}
    for first, second in choices:
        i, j = at.get(first[0], -1), at.get(second[0], -1)
        if 0 <= i < j and units[i][0] < 1 and units[j][0] < 1 and units[i][0] + units[j][0] <= 1.05 \
                and {m.sid for m in units[i][1]} <= set(first) and {m.sid for m in units[j][1]} <= set(second) \
                and not {i, j} & {*out, *out.values()}:
            out[i] = j
    return out


def _either(var: str, first: tuple[float, list[Part]], second: tuple[float, list[Part]], outer: _Scope,
            links: dict[str, str], sleeps: bool, head: list[str], body: list[str]) -> None:
    """The two arms of a choice under one draw per transaction: the first in its share, the second
    in its share of the rest, never both."""
    (k1, one), (k2, two) = first, second
    head.append(f"\\set {var} random(1, 1000)")
    cut1 = max(1, round(k1 * 1000))
    cut2 = min(1000, max(cut1 + 1, round((k1 + k2) * 1000)))
    outer.said.append(f"{', '.join(m.sid for m in one)} in {k1:.0%} of the transactions, or else "
                      f"{', '.join(m.sid for m in two)} in {k2:.0%}: one choice, never both")
    for cond, (_, members) in ((f"\\if :{var} <= {cut1}", first), (f"\\elif :{var} <= {cut2}", second)):
        body.append(cond)
        inner = outer.inner()  # what they bind is not there when they do not run
        for m in members:
            body += _statement(m, inner, links, None, sleeps)
        outer.said += inner.said
    body.append("\\endif")


def _repeated(var: str, k: float, members: list[Part], outer: _Scope, links: dict[str, str], sleeps: bool,
              head: list[str], body: list[str]) -> None:
    """A block run k times per transaction: unrolled, its passes drawn per transaction."""
    lo, hi = _passes(k)
    head.append(f"\\set {var}_n random({lo}, {hi})")
    outer.said.append(f"{', '.join(m.sid for m in members)} {k:.1f} times per transaction: a block of "
                      f"{lo}..{hi} passes")
    locked = {links.get(q.column, q.column) for m in members if m.locked or (m.table and not m.inserts)
              for q in m.params if q.use in AGREEING and q.column} - set(outer.bound)
    if locked:
        outer.said.append("the rows the block locks are locked in the order of their keys, pass by pass (each "
                          "pass's key from its slice of the column's range; a key column with fewer values than "
                          "the block has passes is one value for the whole block, as a loop over the districts "
                          "of one warehouse), as an application that does not deadlock must (edit the script if "
                          "yours does otherwise)")
    start = len(body)
    for i in range(1, hi + 1):
        # each pass draws its own, agreeing within itself
        inner = outer.inner(locked, hi)
        if i > lo:
            body.append(f"\\if :{var}_n >= {i}")
        body.append(f"\\set {var}_i {i}")
        for m in members:
            body += _statement(m, inner, links, f"{var}_i", sleeps)
        if i > lo:
            body.append("\\endif")
        if i == 1:
            outer.said += inner.said
    if any(f":{var}_h " in line for line in body[start:]):
        head.append(f"\\set {var}_h random(0, 999999)")  # the block's held keys' one draw


def gaps(parts: Sequence[Part]) -> int:
    """The gaps between a transaction's statements, as run on average (a block's passes counted)."""
    return gaps_of(blocks(parts))


def gaps_of(units: Sequence[tuple[float, list[Part]]]) -> int:
    return max(1, round(sum(k * len(members) for k, members in units)) - 1)


def _passes(k: float) -> tuple[int, int]:
    """A block's passes per transaction, uniform with mean about k: from half of it to 1.5 times."""
    lo = max(1, round(k / 2))
    return lo, min(MAX_PASSES, max(lo, round(2 * k) - lo))


def _statement(p: Part, scope: _Scope, links: dict[str, str], pass_var: str | None, sleeps: bool) -> list[str]:
    """A statement's lines in the transaction: its own draws but those it takes from earlier ones."""
    sql, drop, rising, put = p.sql, set(), [], {}
    columns = [q.column for q in p.params if q.use in AGREEING and q.column]
    for q in p.params:
        var = f"{p.sid}_p{q.n}"
        if q.use not in AGREEING or not q.column or columns.count(q.column) > 1:
            continue  # not a column's value, or a bound of a range on it: drawn as it is
        cls = links.get(q.column, q.column)
        bound = scope.bound.get(cls)
        if bound is not None and (q.use != "fresh" or cls in scope.fresh) and not (p.inserts and cls in scope.read):
            sql = _put(sql, var, bound)
            drop.add(var)
            put[var] = bound
            scope.said.append(_agrees(p.sid, q.column, bound, cls in scope.read))
        elif pass_var and p.inserts and q.use == "column" and q.column in p.keys and base_type(q.type) in INTEGERS \
                and _rest_bound(p, q, scope, links):
            sql = _put(sql, var, pass_var)
            drop.add(var)
            put[var] = pass_var
            scope.said.append(f"{q.column} is the block's pass (1, 2, ...): the rest of its key is the transaction's")
        else:
            scope.bound[cls] = var
            if q.use == "fresh":
                scope.fresh.add(cls)
            elif cls in scope.ascending and pass_var:
                sliced = _sliced(var, p.metas, pass_var, scope.passes)
                if sliced:
                    drop.add(var)  # its own draw gives way to its pass's slice
                    rising.append(sliced)
    metas = [m for m in p.metas if not any(m.startswith((f"\\set {v} ", f"\\set {v}_")) for v in drop)]
    for var, other in put.items():  # what else reads it (a multi-row INSERT's other rows) reads its value
        metas = [_put(m, var, other) for m in metas]
    sql, unread = _returning(p, sql, scope, links)
    return [*metas, *rising, *unread, sql, *(["\\sleep :pgknee_gap_us us"] if sleeps else [])]


def _agrees(sid: str, column: str, bound: str, read: bool) -> str:
    name = column.rsplit(".", 1)[-1]
    if read:
        return (f"{sid}'s {name} is the value {bound.split('_r_', 1)[0]} returned ({bound}): a value read, then "
                "used, agrees within a transaction")
    return f"{sid}'s {name} is the value {bound} an earlier statement used: linked columns agree within a transaction"


def _returning(p: Part, sql: str, scope: _Scope, links: dict[str, str]) -> tuple[str, list[str]]:
    """A SELECT whose returned values a later statement uses: its columns into variables (\\aset,
    the last row's), each first set to -1 (no key is): a read that finds no row leaves the later
    statement nothing to meet, as the application that read nothing would not go on with it."""
    if p.sid not in scope.reading:
        return sql, []
    unread = []
    for name, column in p.returns:
        cls = links.get(column, column)
        if cls not in scope.bound:  # a value the statement's own parameters do not already give
            var = f"{p.sid}_r_{name}"
            scope.bound[cls] = var
            scope.read.add(cls)
            unread.append(f"\\set {var} -1")
    return (sql.rstrip().rstrip(";") + f" \\aset {p.sid}_r_", unread) if unread else (sql, [])


def _reading(parts: Sequence[Part], links: dict[str, str]) -> frozenset[str]:
    """The SELECTs whose returned values a later statement compares or sets (not an INSERT's: the
    row it inserts is new)."""
    out = set()
    for i, p in enumerate(parts):
        classes = {links.get(c, c) for _, c in p.returns}
        if classes and any(q.use in ("column", "expression") and links.get(q.column, q.column) in classes
                           for later in parts[i + 1:] if not later.inserts for q in later.params):
            out.add(p.sid)
    return frozenset(out)


def _sliced(var: str, metas: Sequence[str], pass_var: str, passes: int) -> str:
    """A key a block locks, pass by pass in the order of the keys: pass i of n draws uniformly from
    the i-th of n equal slices of the range its column's statistics span (its own draw's bounds),
    so the keys rise without crowding the top ('' when its draw is not of integers). A column
    with fewer values than the block's most `passes` cannot rise through them: one value, drawn
    for the block (`_h`), as an application's loop runs over one warehouse's ten districts; sliced,
    every transaction began on the first warehouse, and its deliveries crowded each other's rows."""
    mine = " ".join(m for m in metas if m.startswith(f"\\set {var} "))  # not its helpers' (_r, _b) draws
    bounds = [int(x) for pair in re.findall(r"random\((-?\d+), (-?\d+)\)", mine) for x in pair]
    bounds += [int(x) for x in re.findall(r"then \(?(-?\d+)\)?(?=\s|$)", mine)]
    if not bounds:
        return ""
    lo, span, n = min(bounds), max(bounds) - min(bounds) + 1, pass_var.removesuffix("_i") + "_n"
    if span < passes:
        return f"\\set {var} {lo} + :{pass_var.removesuffix('_i')}_h % {span}"
    return (f"\\set {var} {lo} + (:{pass_var} - 1) * {span} / :{n} + random(0, greatest(0, {span} / :{n} - 1))")


def _rest_bound(p: Part, q: Param, scope: _Scope, links: dict[str, str]) -> bool:
    """The INSERT's other parameters on its key columns all take the transaction's values."""
    others = [x for x in p.params if x is not q and x.column in p.keys]
    return bool(others) and all(links.get(x.column, x.column) in scope.bound for x in others)


def _put(sql: str, var: str, other: str) -> str:
    return re.sub(rf":{re.escape(var)}(?!\w)", f":{other}", sql)
