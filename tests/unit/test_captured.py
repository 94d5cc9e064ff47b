"""Captured workloads without a server: reading normalised statements (pglast), drawing a
parameter from a column's statistics in pgbench's language, the manifest's checks, the
resemblance of a replay to its capture."""

from __future__ import annotations

import dataclasses
import functools
import os
import random
import re
import shutil
import subprocess
import types
from collections.abc import Callable
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path

import pytest

from pgknee.analyze.resemblance import resemblance
from pgknee.base.errors import UserError
from pgknee.model.results import CapturedStatement, ReplayedStatement
from pgknee.workloads.captured import generators as gen
from pgknee.workloads.captured import grouping, probe, sqlmap, txscript
from pgknee.workloads.captured.manifest import Manifest, Param, ScriptEntry, Statement, load


def test_parameters_are_tied_to_their_columns() -> None:
    p = sqlmap.parse("SELECT o.id FROM orders o JOIN accounts a ON a.id = o.account_id "
                     "WHERE a.owner IN ($1, $2) AND o.amount BETWEEN $3 AND $4 LIMIT $5")
    assert p.kind == "read" and p.tables == (("", "accounts"), ("", "orders"))
    assert [(u.kind, u.column, u.tables) for u in p.params.values()] == [
        ("column", "owner", ("accounts",)), ("column", "owner", ("accounts",)),
        ("column", "amount", ("orders",)), ("column", "amount", ("orders",)), ("limit", "", ())]
    ins = sqlmap.parse("INSERT INTO app.orders (account_id, amount) VALUES ($1, $2)")
    assert ins.kind == "write" and ins.params[2] == sqlmap.ParamUse("column", "amount", ("app.orders",), inserted=True)
    upd = sqlmap.parse("UPDATE accounts SET balance = balance + $1, note = $2 WHERE id = $3")
    assert [u.kind for u in upd.params.values()] == ["delta", "column", "column"]
    cte = sqlmap.parse("WITH x AS (DELETE FROM t WHERE k = $1 RETURNING *) SELECT * FROM x")
    assert cte.kind == "write" and cte.tables == (("", "t"),)  # the CTE's name is no table


@pytest.mark.parametrize(("query", "why"), [
    ("CREATE TABLE x (a int)", "DDL"), ("COPY t FROM STDIN", "COPY"), ("VACUUM t", "utility"),
    ("SELECT FROM WHERE", "parser"), ("SELECT a INTO b FROM t", "creates a table")])
def test_what_cannot_be_replayed_says_why(query: str, why: str) -> None:
    p = sqlmap.parse(query)
    assert p.kind == "skip" and why in p.reason


def test_fingerprint_ignores_constants_and_list_lengths() -> None:
    a = sqlmap.statement_fingerprint("SELECT a FROM t WHERE x IN ($1, $2) AND y = $3")
    assert a == sqlmap.statement_fingerprint("SELECT a FROM t WHERE x IN (1, 2, 3) AND y = 'z'")
    assert a != sqlmap.statement_fingerprint("SELECT a FROM t WHERE x IN ($1) AND z = $2")


PLAIN = r"(?:(?!case |end).)*?"  # text holding no CASE of its own
INNER_CASE = rf"case ((?:when {PLAIN} then {PLAIN} )+)else ({PLAIN}) end"


def _simulate(lines: tuple[str, ...], var: str, rng: random.Random) -> float:
    """Evaluate the generator's lines as pgbench would (random, CASE, arithmetic), in Python."""
    env: dict[str, float] = {}
    for line in lines:
        name, code = _compiled(line)
        env[name] = eval(code, {"rng": rng, "env": env, "_if": _if})  # noqa: S307 - the test's own generator text
    return env[var]


@functools.cache
def _compiled(line: str) -> tuple[str, types.CodeType]:
    """A line's variable and its expression as Python, compiled once for the many draws."""
    name, expr = re.fullmatch(r"\\set (\w+) (.*)", line.replace(gen.NEXT, " ")).groups()  # type: ignore[union-attr]
    py = re.sub(r"random\(([^,]+), ([^)]+)\)", r"rng.randint(int(\1), int(\2))", expr)
    py = re.sub(r":(\w+)", r"env['\1']", py)
    while "case " in py:  # innermost CASE first: when A then B ... else C end -> (B if A else (...))
        py = re.sub(INNER_CASE, _case, py)
    return name, compile(py, "<generator>", "eval")


def _case(m: re.Match[str]) -> str:
    pairs = re.findall(r"when (.*?) then (.*?) (?=when |$)", m.group(1))
    out = f"({m.group(2)})"
    for cond, val in reversed(pairs):  # no 'else' left in the text for an outer CASE's match to stop at
        out = f"_if(({cond.replace(' = ', ' == ')}), lambda: ({val}), lambda: {out})"
    return out


def _if(cond: bool, then: Callable[[], float], other: Callable[[], float]) -> float:
    return then() if cond else other()


def test_common_values_come_at_their_frequencies_and_the_rest_from_the_histogram() -> None:
    st = gen.ColumnStats("integer", 0.0, -0.5, ("1", "7"), (0.30, 0.10), ("10", "20", "1000"))
    drawn = gen.draw("s01_p1", st)
    assert drawn.placeholder == ":s01_p1"
    rng = random.Random(5)
    values = [_simulate(drawn.lines, "s01_p1", rng) for _ in range(20000)]
    assert abs(values.count(1) / len(values) - 0.30) < 0.015
    assert abs(values.count(7) / len(values) - 0.10) < 0.01
    rest = [v for v in values if v not in (1, 7)]
    assert min(rest) >= 10 and max(rest) <= 1000
    assert abs(sum(1 for v in rest if v <= 20) / len(rest) - 0.5) < 0.03  # a bucket each: half the rest


def test_other_types_are_quoted_literals_picked_by_index() -> None:
    st = gen.ColumnStats("character varying(10)", 0.0, 3, ("eu", "it's"), (0.6, 0.4))
    drawn = gen.draw("s02_p1", st)
    assert drawn.placeholder == "(ARRAY['eu', 'it''s']::character varying(10)[])[:s02_p1]"
    with pytest.raises(gen.CannotDraw, match="holds .:b., which pgbench would read as one of its variables"):
        gen.draw("x", dataclasses.replace(st, mcv=("a:b",)))
    # a backslash cannot end the literal early where standard_conforming_strings is off
    assert gen.quote_literal("\\'; DROP TABLE t; --") == "E'\\\\''; DROP TABLE t; --'"
    with pytest.raises(gen.CannotDraw, match="not one pgknee can name"):
        gen.draw("x", dataclasses.replace(st, type="text); DROP TABLE t; --"))
    with pytest.raises(gen.CannotDraw, match="neither common values nor a histogram"):
        gen.draw("x", gen.ColumnStats("integer"))


def _manifest(**kw: object) -> Manifest:
    s = Statement("s01", "SELECT 1 FROM t WHERE a = $1", "write", 10, 1.0, 0.1, 10, 1.0, 1.0, ["public.t"], "f")
    base = dict(source="x", database="d", system_identifier="1", server_version=150000, captured_at="now",
                order_by="time", top=1, tables=["public.t"], statements=[s],
                scripts=[ScriptEntry("s01", "s01.sql", 5, ["s01"])])
    return Manifest(**{**base, **kw})  # type: ignore[arg-type]


def test_the_manifest_round_trips_and_a_bad_edit_is_one_line(tmp_path: Path) -> None:
    m = _manifest()
    (tmp_path / "workload.toml").write_bytes(m.to_toml())
    assert load(str(tmp_path)) == m and m.writes() == ["s01"]
    bad = _manifest(scripts=[ScriptEntry("s01", "../x.sql", 5, ["s01"])])
    (tmp_path / "workload.toml").write_bytes(bad.to_toml())
    with pytest.raises(UserError, match="must be a .sql file name"):
        load(str(tmp_path))
    with pytest.raises(UserError, match="holds no workload.toml"):
        load(str(tmp_path / "nothing"))


def test_resemblance_within_and_outside_tolerance() -> None:
    captured = [CapturedStatement("s01", "q1", "read", 0.6, 0.2),  # shares of the whole database
                CapturedStatement("s02", "q2", "write", 0.2, 0.6)]
    replayed = [ReplayedStatement(1, "s01", 740, 20.0), ReplayedStatement(1, "s02", 260, 80.0),
                ReplayedStatement(2, "s01", 10, 1.0)]
    r = resemblance(captured, replayed, [1])
    assert r is not None
    assert [round(x.captured_calls, 2) for x in r.rows] == [0.75, 0.25]  # among the replayed statements
    assert [round(x.replayed_calls, 2) for x in r.rows] == [0.74, 0.26] and r.ok
    far = resemblance(captured, [ReplayedStatement(1, "s01", 500, 20.0), ReplayedStatement(1, "s02", 500, 80.0)])
    assert far is not None and not far.ok
    assert resemblance([], replayed) is None


def test_show_points_at_begin_calls_as_the_one_hint_of_transactions() -> None:
    from pgknee.report.terminal import render
    from pgknee.report.workload import captured_tables
    from pgknee.workloads.captured.manifest import Skipped

    m = _manifest(skipped=[Skipped("BEGIN", 11, "transaction control"), Skipped("COMMIT", 11, "transaction control")])
    text = render(captured_tables(m), width=200)
    assert "BEGIN was called 11 times; statements with about as many calls: s01" in text
    assert "Not scripted" in text and "transaction control" in text
    plain = render(captured_tables(_manifest()), width=200)
    assert "own transaction (autocommit)" in plain


def test_a_directory_given_as_the_workload_is_a_captured_one(tmp_path: Path) -> None:
    from pgknee.plan import WorkloadSpec
    from pgknee.plan.model import Plan

    w = WorkloadSpec(name=str(tmp_path) + "/", allow_writes=True)
    assert w.name == "captured" and w.path == str(tmp_path) and Plan(workload=w).workload.allow_writes
    with pytest.raises(UserError, match="--allow-writes belongs to"):
        Plan(workload=WorkloadSpec(name="ewallet", allow_writes=True))
    with pytest.raises(UserError, match="unknown workload 'myapp'") as e:
        Plan(workload=WorkloadSpec(name="myapp"))  # not a directory, no slash: an unknown name
    assert "directory of a captured workload" in e.value.one_line()


@pytest.mark.parametrize(("argv", "says"), [
    (["workload", "capture", "--dsn", "postgresql://x@127.0.0.1:1/db", "-o", "OUT", "--top", "0"], "--top must be"),
    (["workload", "show", "OUT/none"], "holds no workload.toml"),
    (["workload", "mix", "--store", "OUT/none.db"], "no collector database"),
])
def test_workload_command_bad_input_is_one_line(argv: list[str], says: str, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from pgknee import cli

    code = cli.main([a.replace("OUT", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and says in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def _pgbench_parses(tmp_path: Path, lines: tuple[str, ...], statement: str) -> str:
    """What pgbench's own parser says of a script (it parses before it connects: pointed at a
    server that cannot exist, a script it reads ends in the connection's error)."""
    pgbench = shutil.which("pgbench")
    assert pgbench is not None, "make setup installs pgbench"
    script = tmp_path / "s.sql"
    script.write_text("\n".join([*lines, statement]) + "\n")
    env = {"PATH": os.environ.get("PATH", ""), "PGHOST": str(tmp_path / "no-server"), "PGPORT": "1",
           "PGCONNECT_TIMEOUT": "1"}
    r = subprocess.run([pgbench, "-n", "-t", "1", "-f", str(script), "x"], capture_output=True, text=True, env=env,
                       timeout=30, check=False)
    assert "connection" in r.stderr or "syntax error" in r.stderr or "error found here" in r.stderr, r.stderr
    return "" if "syntax error" not in r.stderr and "error found here" not in r.stderr else r.stderr


STATS = {  # each kind of column an OLTP application's parameters stand for, as pg_stats shows it
    "one histogram bucket": gen.ColumnStats("integer", 0.0, -1, (), (), ("1", "2")),
    "a timestamp with time zone": gen.ColumnStats(
        "timestamp with time zone", 0.0, -1, (), (),
        ("2026-11-28 01:15:29.123456+00", "2026-11-28 02:00:00+00", "2026-11-28 03:30:00+00")),
    "a timestamp without": gen.ColumnStats("timestamp without time zone", 0.0, -1, ("2026-01-01 00:00:00",), (0.2,),
                                           ("2026-01-02 00:00:00", "2026-01-03 12:00:00")),
    "a date": gen.ColumnStats("date", 0.0, -1, (), (), ("2025-12-01", "2026-01-01", "2026-11-28")),
    "an interval": gen.ColumnStats("interval", 0.0, -1, ("00:05:00",), (0.5,), ("1 day 02:00:00", "3 days")),
    "long text": gen.ColumnStats("character varying(20000)", 0.0, 2, ("short", "a much longer body of text"),
                                 (0.5, 0.5)),
}


@pytest.mark.parametrize("kind", STATS)
def test_every_kind_of_column_draws_lines_pgbench_parses(kind: str, tmp_path: Path) -> None:
    """Issue 39: '\\set s19_p1 case  else random(1, 2) end' (one histogram bucket) failed pgbench's
    parser; a timestamp's text was refused for its ':' (pgbench's variables); 'character
    varying(20000)' was not a type pgknee could name."""
    drawn = gen.draw("s01_p1", STATS[kind])
    assert _pgbench_parses(tmp_path, drawn.lines, f"SELECT {drawn.placeholder};") == ""


def test_times_are_drawn_as_numbers_within_their_statistics() -> None:
    """A timestamp's histogram as seconds since the epoch, a date's as days since 2000-01-01, an
    interval's as seconds: every drawn value lies within the bounds pg_stats gave."""
    rng = random.Random(3)
    ts = gen.draw("t", STATS["a timestamp with time zone"])
    assert ts.placeholder == "to_timestamp(:t)"
    lo = datetime.fromisoformat("2026-11-28 01:15:29.123456+00:00").timestamp()
    hi = datetime.fromisoformat("2026-11-28 03:30:00+00:00").timestamp()
    assert all(lo <= _simulate(ts.lines, "t", rng) <= hi for _ in range(2000))
    d = gen.draw("d", STATS["a date"])
    assert d.placeholder == "(DATE '2000-01-01' + :d)"
    days = [_simulate(d.lines, "d", rng) for _ in range(2000)]
    assert min(days) >= (date(2025, 12, 1) - date(2000, 1, 1)).days and max(days) <= (date(2026, 11, 28)
                                                                                      - date(2000, 1, 1)).days
    iv = gen.draw("i", STATS["an interval"])
    secs = [_simulate(iv.lines, "i", rng) for _ in range(4000)]
    assert abs(secs.count(300.0) / len(secs) - 0.5) < 0.03 and max(secs) <= 3 * 86400
    assert all(s == 300.0 or s >= 86400 + 2 * 3600 for s in secs)
    with pytest.raises(gen.CannotDraw, match="not an interval pgknee can read"):
        gen.draw("x", gen.ColumnStats("interval", 0.0, -1, (), (), ("1 mon", "2 mons")))


def test_every_parameter_an_oltp_application_sends_is_tied_to_something() -> None:
    """Issue 39: an INSERT without a column list and a parameter inside an expression were skipped
    as 'not compared with a column'; a LIMIT and an OFFSET were one kind. Now: the table's column
    at the value's place, the column the expression is compared with, and each of LIMIT and OFFSET."""
    p = sqlmap.parse("INSERT INTO s.history VALUES (DEFAULT, $1, $2, now(), $3)")
    assert [(u.kind, u.column, u.tables) for _, u in sorted(p.params.items())] == [
        ("position", "1", ("s.history",)), ("position", "2", ("s.history",)), ("position", "4", ("s.history",))]
    p = sqlmap.parse("INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)")
    assert [p.params[i].column for i in (1, 2, 3, 4)] == ["a", "b", "a", "b"]
    p = sqlmap.parse("SELECT * FROM t WHERE region = $1 % $2 AND c = $3 LIMIT $4 OFFSET $5")
    assert [p.params[i].kind for i in (1, 2, 3, 4, 5)] == ["expression", "expression", "column", "limit", "offset"]
    assert p.params[1].column == "region"
    assert sqlmap.parse("SELECT $1::int + 1 FROM t").params[1].kind == "unknown"  # nothing compared: not guessed


def test_a_fresh_key_starts_above_the_target_s_highest_and_keeps_clients_apart() -> None:
    """Each run of pgbench: the base one above the highest the target holds, each client a block
    of its own as wide as the type leaves room for (2**24 at most), refused when it cannot."""
    from pgknee.workloads.captured.writes import fresh_defines

    d = fresh_defines("s05_p1", 3000, "integer", 8)
    assert d == {"s05_p1_base": "3001", "s05_p1_stride": str(2 ** 24), "s05_p1_seq": "0"}
    near = fresh_defines("s05_p1", 2 ** 31 - 1_000_002, "integer", 10)
    assert int(near["s05_p1_stride"]) == 100_000  # the million left above the base, shared by ten clients
    # the last client's last key (its counter counts from 1 to the stride) stays within the type
    assert int(near["s05_p1_base"]) + 9 * 100_000 + 100_000 <= 2 ** 31 - 1
    with pytest.raises(gen.CannotDraw, match="within 9,999 of its type's largest value"):
        fresh_defines("s05_p1", 2 ** 31 - 1 - 10_000, "integer", 8)
    assert fresh_defines("k", 2 ** 40, "bigint", 1000)["k_stride"] == str(2 ** 24)


def _part(sid: str, sql: str, params: list[tuple[str, str, str]], repeat: float = 1.0,
          keys: frozenset[str] = frozenset()) -> txscript.Part:
    """A statement of a transaction as capture.py hands it over: each parameter drawn on its own line."""
    ps = tuple(Param(n, use, column, "integer", "") for n, (use, column, _) in enumerate(params, 1))
    metas = tuple(f"\\set {sid}_p{n} {draw}" for n, (_, _, draw) in enumerate(params, 1))
    for n in range(len(params), 0, -1):
        sql = sql.replace(f"${n}", f":{sid}_p{n}")
    return txscript.Part(sid, metas, sql, ps, repeat, keys, bool(keys))


def test_an_order_s_values_agree_and_its_lines_repeat_as_the_application_runs_them(tmp_path: Path) -> None:
    """Issue 39: the order entry replayed with its lines once, their rest in autocommit, and every
    value drawn apart (order lines for orders that do not exist). An order of about ten lines:
    the district locked then updated takes one district, the order's lines take its fresh id and
    district, each line's item, stock row and line agree within the pass, the line number is the
    pass, and the stock rows are updated in the order of their items (two orders that lock them in
    different orders deadlock: the replay of the capture stalled at 8.7 TPS)."""
    w, d, o = "oe.district.d_w_id", "oe.district.d_id", "oe.orders"
    links = txscript.links_of([(f"{o}.o_w_id", w), (f"{o}.o_d_id", d),
                               ("oe.order_line.ol_w_id", f"{o}.o_w_id"), ("oe.order_line.ol_d_id", f"{o}.o_d_id"),
                               ("oe.order_line.ol_o_id", f"{o}.o_id"), ("oe.order_line.ol_i_id", "oe.stock.s_i_id"),
                               ("oe.stock.s_i_id", "oe.item.i_id")])
    line_key = frozenset({"oe.order_line.ol_w_id", "oe.order_line.ol_d_id", "oe.order_line.ol_o_id",
                          "oe.order_line.ol_number"})
    parts = [
        _part("s02", "SELECT d_next_o_id FROM oe.district WHERE d_w_id = $1 AND d_id = $2 FOR UPDATE;",
              [("column", w, "random(1, 2)"), ("column", d, "random(1, 10)")]),
        _part("s14", "UPDATE oe.district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2;",
              [("column", w, "random(1, 2)"), ("column", d, "random(1, 10)")]),
        _part("s10", "INSERT INTO oe.orders (o_id, o_w_id, o_d_id) VALUES ($1, $2, $3);",
              [("fresh", f"{o}.o_id", "1"), ("column", f"{o}.o_w_id", "random(1, 2)"),
               ("column", f"{o}.o_d_id", "random(1, 10)")], keys=frozenset({f"{o}.o_id"})),
        _part("s09", "SELECT i_price FROM oe.item WHERE i_id = $1;", [("column", "oe.item.i_id", "random(1, 100)")],
              repeat=10.2),
        replace(_part("s06", "UPDATE oe.stock SET s_ytd = s_ytd + 1 WHERE s_i_id = $1;",
                      [("column", "oe.stock.s_i_id", "random(1, 100)")], repeat=9.9), table="oe.stock"),
        _part("s04", "INSERT INTO oe.order_line (ol_o_id, ol_w_id, ol_d_id, ol_number, ol_i_id) "
                     "VALUES ($1, $2, $3, $4, $5);",
              [("fresh", "oe.order_line.ol_o_id", "7"), ("column", "oe.order_line.ol_w_id", "random(1, 2)"),
               ("column", "oe.order_line.ol_d_id", "random(1, 10)"),
               ("column", "oe.order_line.ol_number", "random(1, 15)"),
               ("column", "oe.order_line.ol_i_id", "random(1, 100)")], repeat=10.0, keys=line_key),
    ]
    g = grouping.Group(tuple(p.sid for p in parts), 100, 30, "seen together")
    script = txscript.text("t01", g, parts, links, [])
    assert "UPDATE oe.district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = :s02_p1 AND d_id = :s02_p2;" in script
    assert "VALUES (:s10_p1, :s02_p1, :s02_p2);" in script  # the order in the district locked
    assert "\\set t01_b4_n random(5, 15)" in script and script.count("\\endif") == 10  # 5..15 passes
    assert script.count("WHERE s_i_id = :s09_p1;") == 15  # the stock row of the item read
    assert script.count("VALUES (:s10_p1, :s02_p1, :s02_p2, :t01_b4_i, :s09_p1);") == 15
    assert "\\set s14_p" not in script and "\\set s04_p1" not in script  # drawn once, where first needed
    # the stock rows are locked in the order of their items, as the application does to not deadlock
    assert script.count("\\set s09_p1 1 + (:t01_b4_i - 1) * 100 / :t01_b4_n + random(0, greatest(0, 100 / "
                        ":t01_b4_n - 1))") == 15 and "\\set s09_p1 random(1, 100)" not in script
    assert _pgbench_parses(tmp_path, (), script.replace("BEGIN;", "").replace("COMMIT;", "")) == ""


def test_what_a_select_returns_as_it_is() -> None:
    """The columns a SELECT returns as they are, under the name it returns them by: not `*`, not an
    expression, not a set operation's, not a write's."""
    got = sqlmap.parse("SELECT no_o_id, c.c_id AS cid, now(), c_balance + 1 FROM oe.new_order n, oe.customer c "
                       "WHERE n.no_d_id = $1").returns
    assert [(r.side, r.column, r.tables) for r in got] == [
        ("no_o_id", "no_o_id", ("oe.new_order", "oe.customer")), ("cid", "c_id", ("oe.customer",))]
    for q in ("SELECT * FROM t", "SELECT a FROM t UNION SELECT b FROM u", "UPDATE t SET a = 1 RETURNING a"):
        assert sqlmap.parse(q).returns == (), q


def test_a_value_read_then_used_agrees(tmp_path: Path) -> None:
    """Issue 39's "a value read and then written in one transaction kept the same", for a value the
    application reads from a result: a delivery finds its district's oldest new order (SELECT ...
    LIMIT 1 FOR UPDATE), then deletes that order and updates it. Drawn apart, every delivery locked
    the same oldest rows and deleted others (its SELECT 2.6 ms a call against the application's 0.8,
    lock waits). The value returned goes into a variable (\\aset), -1 when no row was found (no key
    is); an INSERT keeps its own draw (the row it inserts is new)."""
    no, o = "oe.new_order", "oe.orders"
    links = txscript.links_of([(f"{no}.no_o_id", f"{o}.o_id"), (f"{no}.no_d_id", f"{o}.o_d_id")])
    parts = [
        replace(_part("s05", "SELECT no_o_id FROM oe.new_order WHERE no_d_id = $1 ORDER BY no_o_id LIMIT 1 FOR UPDATE;",
                      [("column", f"{no}.no_d_id", "random(1, 10)")]), returns=(("no_o_id", f"{no}.no_o_id"),)),
        _part("s26", "DELETE FROM oe.new_order WHERE no_o_id = $1 AND no_d_id = $2;",
              [("column", f"{no}.no_o_id", "random(2100, 3000)"), ("column", f"{no}.no_d_id", "random(1, 10)")]),
        _part("s18", "UPDATE oe.orders SET o_carrier_id = 1 WHERE o_id = $1 AND o_d_id = $2;",
              [("column", f"{o}.o_id", "random(1, 3000)"), ("column", f"{o}.o_d_id", "random(1, 10)")]),
        _part("s30", "INSERT INTO oe.orders (o_id, o_d_id) VALUES ($1, $2);",
              [("column", f"{o}.o_id", "random(3001, 4000)"), ("column", f"{o}.o_d_id", "random(1, 10)")],
              keys=frozenset({f"{o}.o_id", f"{o}.o_d_id"})),
    ]
    g = grouping.Group(tuple(p.sid for p in parts), 100, 30, "seen together")
    script = txscript.text("t03", g, parts, links, [])
    assert "\\set s05_r_no_o_id -1" in script
    assert "ORDER BY no_o_id LIMIT 1 FOR UPDATE \\aset s05_r_" in script
    assert "WHERE no_o_id = :s05_r_no_o_id AND no_d_id = :s05_p1;" in script  # the order found is deleted
    assert "WHERE o_id = :s05_r_no_o_id AND o_d_id = :s05_p1;" in script  # and updated (a foreign key's column)
    assert "VALUES (:s30_p1, :s05_p1);" in script and "\\set s30_p1 random(3001, 4000)" in script
    assert "s26's no_o_id is the value s05 returned" in script
    assert _pgbench_parses(tmp_path, (), script.replace("BEGIN;", "").replace("COMMIT;", "")) == ""
    # nothing after it uses what it returns: it stays as it was
    alone = txscript.text("t04", grouping.Group(("s05", "s30"), 100, 30, "seen"), [parts[0], parts[3]], links, [])
    assert "\\aset" not in alone and "s05_r_" not in alone


def test_a_loop_over_districts_holds_its_warehouse(tmp_path: Path) -> None:
    """Issue 39: the order entry's delivery runs ten districts of one warehouse, each pass locking
    that district's oldest new order. Sliced pass by pass, the two warehouses' range (1..2) put
    every delivery on warehouse 1 first and warehouse 2 last: its SELECT ... FOR UPDATE waited
    2.1-2.3 ms a call against the application's 0.47. A key column with fewer values than the
    block's passes (2 against up to 8) is one value for the whole block, uniform over its range;
    the district (10 values) still rises pass by pass."""
    no = "oe.new_order"
    part = replace(_part("s05", "SELECT no_o_id FROM oe.new_order WHERE no_d_id = $1 AND no_w_id = $2 "
                                "ORDER BY no_o_id LIMIT 1 FOR UPDATE;",
                         [("column", f"{no}.no_d_id", "random(1, 10)"), ("column", f"{no}.no_w_id", "random(1, 2)")],
                         repeat=5.6), locked=frozenset({no}))
    script = txscript.text("t03", grouping.Group(("s05",), 100, 30, "seen together"), [part], {}, [])
    assert "\\set t03_b1_n random(3, 8)" in script and "\\set t03_b1_h random(0, 999999)" in script
    assert script.count("\\set s05_p2 1 + :t03_b1_h % 2") == 8  # each pass, the block's one warehouse
    assert script.count("\\set s05_p1 1 + (:t03_b1_i - 1) * 10 / :t03_b1_n") == 8  # its districts rising
    assert script.index("\\set t03_b1_h") < script.index("BEGIN;")
    assert _pgbench_parses(tmp_path, (), script.replace("BEGIN;", "").replace("COMMIT;", "")) == ""
    rng = random.Random(3)
    head = tuple(ln for ln in script.split("BEGIN;")[0].splitlines() if ln.startswith("\\set"))
    held = [_simulate((*head, "\\set s05_p2 1 + :t03_b1_h % 2"), "s05_p2", rng) for _ in range(400)]
    assert set(held) == {1, 2} and 150 <= held.count(1) <= 250  # either warehouse, about half the time each


def test_a_range_s_bounds_are_drawn_together(tmp_path: Path) -> None:
    """Issue 39: 'ol_o_id < $3 AND ol_o_id >= $4' drawn as two independent values spanned half the
    table (22.6 ms a call against the application's 0.92). The upper bound is the lower plus one
    histogram bucket: ids 1..3,000 in 100 buckets of 30, so every range holds 30 ids."""
    p = sqlmap.parse("SELECT count(*) FROM ol WHERE ol_w_id = $1 AND ol_o_id < $3 AND ol_o_id >= $4 "
                     "AND y BETWEEN $5 AND $6 AND $7 > z")
    assert [(n, u.side) for n, u in p.params.items()] == [(1, ""), (3, "upper"), (4, "lower"), (5, "lower"),
                                                         (6, "upper"), (7, "upper")]
    ids = gen.ColumnStats("integer", 0.0, -1, (), (), tuple(str(1 + 30 * i) for i in range(101)))
    low = gen.draw("s08_p4", ids)
    high, step = gen.upper_bound("s08_p3", "s08_p4", ids)
    assert step == "30" and high.lines == ("\\set s08_p3 :s08_p4 + 30",)
    rng = random.Random(7)
    for _ in range(200):
        lo = _simulate(low.lines + high.lines, "s08_p4", rng)
        assert 1 <= lo <= 3001
    assert _pgbench_parses(tmp_path, low.lines + high.lines, "SELECT :s08_p4, :s08_p3;") == ""
    days = gen.ColumnStats("date", 0.0, -1, (), (), ("2026-01-01", "2026-01-08", "2026-01-15"))
    assert gen.upper_bound("d2", "d1", days)[0].placeholder == "(DATE '2000-01-01' + :d2)"
    with pytest.raises(gen.CannotDraw):
        gen.upper_bound("t2", "t1", gen.ColumnStats("text", 0.0, -1, (), (), ("a", "b")))


def test_a_bound_written_as_a_sum_is_the_bound_or_the_width(tmp_path: Path) -> None:
    """The order entry's `id < :id + 50` reached the capture as `id < $2 + $3`: each term was drawn
    from id's statistics, the sum about twice an id. A sum of two parameters as a bound is the
    bound and a shift of nothing; beside a lower bound of the same parameter it is that lower and
    the width. A sum that is not a bound, or of a column, stays what it was."""
    def uses(q: str) -> dict[int, tuple[str, str, str]]:
        return {n: (u.kind, u.column, u.side) for n, u in sorted(sqlmap.parse(q).params.items())}

    assert uses("SELECT 1 FROM t WHERE id >= $1 AND id < $2 + $3") == {
        1: ("column", "id", "lower"), 2: ("column", "id", "upper"), 3: ("shift", "id", "")}
    assert uses("SELECT 1 FROM t WHERE id >= $1 AND id < $1 + $2") == {
        1: ("column", "id", "lower"), 2: ("width", "id", "upper")}
    assert uses("SELECT 1 FROM t WHERE $2 + $3 > id AND id >= $1") == {
        1: ("column", "id", "lower"), 2: ("column", "id", "upper"), 3: ("shift", "id", "")}
    assert uses("SELECT 1 FROM t WHERE id > $1 - $2 AND id <= $3") == {
        1: ("column", "id", "lower"), 2: ("shift", "id", ""), 3: ("column", "id", "upper")}
    assert uses("SELECT 1 FROM t WHERE region = $1 % $2") == {1: ("expression", "region", ""),
                                                               2: ("expression", "region", "")}
    assert uses("UPDATE t SET n = n + $1 WHERE id = $2") == {1: ("delta", "n", ""), 2: ("column", "id", "")}
    # the width alone: a histogram bucket (ids 1..3,001 in 100 buckets of 30) until a probe says more
    ids = gen.ColumnStats("integer", 0.0, -1, (), (), tuple(str(1 + 30 * i) for i in range(101)))
    width, step = gen.range_width("s09_p2", ids)
    assert step == "30" and width.lines == ("\\set s09_p2 30",) and width.placeholder == ":s09_p2"
    assert gen.range_width("s09_p2", ids, "288")[0].lines == ("\\set s09_p2 288",)
    low = gen.draw("s09_p1", ids)
    assert _pgbench_parses(tmp_path, low.lines + width.lines, "SELECT :s09_p1, :s09_p1 + :s09_p2;") == ""
    with pytest.raises(gen.CannotDraw):
        gen.range_width("t2", gen.ColumnStats("text", 0.0, -1, (), (), ("a", "b")))


def test_a_range_s_width_is_the_one_reading_the_application_s_blocks() -> None:
    """Issue 39: the order entry's stock level asks the last 20 orders; one histogram bucket (30
    orders) tipped its plan from a nested loop (about 31 blocks an order) to a hash join over the
    stock table (900 blocks whatever the width), 3-5 ms a call against 0.5. The application's 631
    blocks a call lie at 20 orders (20 x 31 = 620, 21 x 31 = 651): the width found is 20, with every
    width probed; a width that changes nothing read is no evidence (None: the bucket's kept)."""
    probed: list[float] = []

    def nested_then_hash(w: float) -> float:
        probed.append(w)
        return 31.0 * w if w <= 24 else 900.0

    best, seen = probe.width(nested_then_hash, 30.0, probe.WHOLE, 631.0) or (0.0, {})
    assert best == 20.0 and seen[20.0] == 620.0
    assert {2.0, 4.0, 8.0, 15.0, 30.0, 60.0, 120.0} <= set(seen) and len(probed) <= 7 + probe.NARROWING
    assert all(w == int(w) for w in seen)  # an integer column's widths are whole
    assert probe.width(lambda w: 50.0, 30.0, probe.WHOLE, 631.0) is None  # the width changes nothing
    assert probe.width(lambda w: None, 30.0, probe.WHOLE, 631.0) is None  # every probe refused
    # the application reads more than the widest probe: the widest; a float column's widths are not rounded
    assert (probe.width(lambda w: 10.0 * w, 0.5, probe.REAL, 1e6) or (0.0, {}))[0] == 2.0


def test_a_row_is_locked_before_it_is_updated_and_inserted_before_what_references_it(tmp_path: Path) -> None:
    """Issue 39: the order entry's script ran the INSERT first and the SELECT ... FOR UPDATE after the
    UPDATE it guards; its new_order row before the order it references. Whatever order the samples
    suggest, a row locked comes before its update and a parent's insert before its child's; a
    statement the application runs in a tenth of its transactions runs under one draw, in that share."""
    d, o = "oe.district", "oe.orders"
    upd = replace(_part("s17", "UPDATE oe.district SET n = n + 1 WHERE d_id = $1;",
                        [("column", f"{d}.d_id", "random(1, 10)")]), table=d)
    lock = replace(_part("s02", "SELECT n FROM oe.district WHERE d_id = $1 FOR UPDATE;",
                         [("column", f"{d}.d_id", "random(1, 10)")]), locked=frozenset({d}))
    child = replace(_part("s13", "INSERT INTO oe.new_order (no_o_id) VALUES ($1);",
                          [("fresh", "oe.new_order.no_o_id", "1")], keys=frozenset({"oe.new_order.no_o_id"})),
                    table="oe.new_order")
    parent = replace(_part("s12", "INSERT INTO oe.orders (o_id) VALUES ($1);", [("fresh", f"{o}.o_id", "1")],
                           keys=frozenset({f"{o}.o_id"})), table=o)
    rare = _part("s32", "SELECT c_data FROM oe.customer WHERE c_id = $1;", [("column", "oe.customer.c_id", "1")],
                 repeat=0.1)
    got = txscript.ordered([child, upd, parent, lock, rare], {"oe.new_order": {o}})
    assert [p.sid for p in got] == ["s12", "s13", "s02", "s17", "s32"]  # each moved just before what needs it
    links = txscript.links_of([("oe.new_order.no_o_id", f"{o}.o_id")])
    script = txscript.text("t01", grouping.Group(tuple(p.sid for p in got), 100, 9, "seen"), got, links, [])
    assert "INSERT INTO oe.new_order (no_o_id) VALUES (:s12_p1);" in script  # the order just inserted
    assert "\\set t01_o5 random(1, 1000)" in script and "\\if :t01_o5 <= 100" in script
    assert _pgbench_parses(tmp_path, (), script.replace("BEGIN;", "").replace("COMMIT;", "")) == ""


def test_the_two_arms_of_a_choice_run_under_one_draw(tmp_path: Path) -> None:
    """Issue 39: a vote inserts its row one way or the other (60% and 39%, 1% neither). Drawn
    apart, 23% of the replayed votes inserted twice and 24% not at all; under one draw never
    both. Two statements in some of the transactions that are not one choice keep their draws."""
    parts = [_part("v1", "SELECT 1 FROM c WHERE n = $1;", [("column", "v.c.n", "random(1, 6)")]),
             _part("v4", "INSERT INTO v (p, s) VALUES ($1, 'XX');", [("column", "v.v.p", "random(1, 9)")],
                   repeat=0.39),
             _part("v5", "INSERT INTO v (p, s) VALUES ($1, $2);", [("column", "v.v.p", "random(1, 9)"),
                                                                   ("column", "v.v.s", "random(1, 50)")],
                   repeat=0.60),
             _part("v6", "SELECT 1 FROM w WHERE n = $1;", [("column", "v.w.n", "random(1, 6)")], repeat=0.2)]
    g = grouping.Group(("v1", "v4", "v5", "v6"), 100, 0, "moved", moved=True, choices=((("v4",), ("v5",)),))
    script = txscript.text("t01", g, parts, {}, [])
    body = script[script.index("BEGIN;"):]
    assert body.count("\\if ") == 2 and body.count("\\elif ") == 1 and body.count("\\endif") == 2, body
    assert ("\\if :t01_o2 <= 390\n\\set v4_p1 random(1, 9)\nINSERT INTO v (p, s) VALUES (:v4_p1, 'XX');\n"
            "\\elif :t01_o2 <= 990\n") in body
    assert "\\if :t01_o4 <= 200\n\\set v6_p1 random(1, 6)\nSELECT 1 FROM w" in body  # not a choice: its own draw
    assert "v4 in 39% of the transactions, or else v5 in 60%: one choice, never both" in script
    assert _pgbench_parses(tmp_path, (), script.replace("BEGIN;", "").replace("COMMIT;", "")) == ""
    # their shares adding to well over all the transactions: both run in some, each its own draw
    over = txscript.text("t01", g, [parts[0], replace(parts[1], repeat=0.5), parts[2], parts[3]], {}, [])
    assert "\\elif" not in over


def test_a_hundred_common_values_cost_seven_comparisons_and_keep_their_frequencies(tmp_path: Path) -> None:
    """Issue 39: the social network's user, 100 common values then 100 buckets, was a CASE of 200
    arms pgbench compared one by one for every transaction; at 8,000 a second on two cores the
    replay ran up to 25% below the application. A tree of CASEs halves the arms: the value is still
    the first arm whose cumulative frequency the draw is at most (checked against that rule at
    every threshold and either side of it), in at most ceil(log2(100)) + 1 comparisons."""
    freqs = tuple(round(0.004 + 0.0001 * (i % 7), 4) for i in range(100))
    st = gen.ColumnStats("integer", 0.0, -0.5, tuple(str(1000 + i) for i in range(100)), freqs,
                         tuple(str(x) for x in (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233)))
    lines = gen.draw("k", st).lines
    value, bucket = lines[-1], lines[-2]
    assert value.count("case ") <= 2 * 40 and bucket.startswith("\\set k_b random(0, 10)")
    limits = [int(t) for t in re.findall(r":k_r <= (\d+)", value)]
    cumulative = sorted(limits)
    for r in sorted({1, *cumulative, *(t + 1 for t in cumulative), gen.SCALE}):
        want = next((1000 + i for i, t in enumerate(cumulative) if r <= t), None)
        got = _simulate((f"\\set k_r {r}", "\\set k_b 3", value), "k", random.Random(1))
        assert got == want if want is not None else 5 <= got <= 8, (r, got, want)
    depth = max(len(re.findall(r":k_r <= ", part)) for part in _paths(value))
    assert depth <= 8, depth
    assert _pgbench_parses(tmp_path, lines, "SELECT :k;") == ""


def _paths(expr: str) -> list[str]:
    """Every root-to-leaf chain of comparisons of a tree of CASEs (one string each), to count its depth."""
    m = re.fullmatch(r"\\set \w+ (.*)", expr.replace(gen.NEXT, " "))
    text = m.group(1) if m else expr

    def walk(t: str) -> list[str]:
        t = t.strip()
        while t.startswith("(") and t.endswith(")"):
            t = t[1:-1].strip()
        if not t.startswith("case when "):
            return [""]
        depth, arms = 0, []
        body = t[len("case "):-len(" end")]
        parts, start = [], 0
        for i, ch in enumerate(body):  # split the top level's "when ... then ..." and "else ..."
            depth += ch == "("
            depth -= ch == ")"
            if depth == 0 and (body.startswith(" when ", i) or body.startswith(" else ", i)):
                parts.append(body[start:i])
                start = i + 1
        parts.append(body[start:])
        for part in parts:
            cond, _, value = part.partition(" then ") if part.startswith("when ") else ("", "", part[len("else "):])
            arms.append((cond, value))
        out = []
        for k, (_, value) in enumerate(arms):
            before = " ".join(c for c, _ in arms[:k + 1] if c)
            out += [before + " " + sub for sub in walk(value)]
        return out

    return walk(text)


def test_a_key_s_even_histogram_is_one_range_and_a_skewed_one_keeps_its_buckets() -> None:
    """A primary key's pg_stats: 100 buckets of 30 ids each. Drawn as one range, not a case of a
    hundred arms pgbench compares one by one for every value; buckets of unequal widths (the
    values crowd somewhere) keep their case, each as likely."""
    ids = gen.ColumnStats("integer", 0.0, -1, (), (), tuple(str(1 + 30 * i) for i in range(101)))
    assert gen.draw("k", ids).lines == ("\\set k random(1, 3001)",)
    skew = gen.ColumnStats("integer", 0.0, -1, (), (), ("1", "2", "4", "8", "1000"))
    assert "case when :k_b <= 0" in " ".join(gen.draw("k", skew).lines)


def test_statements_of_one_parse_tree_are_compared_with_the_capture_as_one() -> None:
    # the vote's two INSERT arms: one parse tree (pgbench numbers both scripts' variables in order, so the
    # target's pg_stat_statements holds one entry); a third statement, and one in a script of weight 0
    arm = Statement("s01", "INSERT INTO v (a, b) VALUES ($1, $3, $2)", "write", 60, 1.0, 0.1, 60, 0.6, 0.5, ["v"], "fa")
    other = dataclasses.replace(arm, id="s03", query="INSERT INTO v (a, b) VALUES ($1, $2, $3)", share_calls=0.1,
                                share_time=0.2)
    read = dataclasses.replace(arm, id="s02", query="SELECT 1 FROM v WHERE a = $1", kind="read", fingerprint="fb",
                               share_calls=0.3, share_time=0.3)
    unused = dataclasses.replace(read, id="s04", fingerprint="fa")
    m = _manifest(statements=[arm, read, other, unused], scripts=[
        ScriptEntry("t01", "t01.sql", 5, ["s02", "s01", "s03"]), ScriptEntry("s04", "s04.sql", 0, ["s04"])])
    assert [[s.id for s in g] for g in m.by_parse_tree()] == [["s01", "s03"], ["s02"]]
