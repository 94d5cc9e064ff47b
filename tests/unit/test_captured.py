"""Captured workloads without a server: reading normalised statements (pglast), drawing a
parameter from a column's statistics in pgbench's language, the manifest's checks, the
resemblance of a replay to its capture."""

from __future__ import annotations

import dataclasses
import os
import random
import re
import shutil
import subprocess
from datetime import date, datetime
from pathlib import Path

import pytest

from pgknee.analyze.resemblance import resemblance
from pgknee.errors import UserError
from pgknee.types import CapturedStatement, ReplayedStatement
from pgknee.workloads.captured import generators as gen
from pgknee.workloads.captured import sqlmap
from pgknee.workloads.captured.manifest import Manifest, ScriptEntry, Statement, load


def test_parameters_are_tied_to_their_columns() -> None:
    p = sqlmap.parse("SELECT o.id FROM orders o JOIN accounts a ON a.id = o.account_id "
                     "WHERE a.owner IN ($1, $2) AND o.amount BETWEEN $3 AND $4 LIMIT $5")
    assert p.kind == "read" and p.tables == (("", "accounts"), ("", "orders"))
    assert [(u.kind, u.column, u.tables) for u in p.params.values()] == [
        ("column", "owner", ("accounts",)), ("column", "owner", ("accounts",)),
        ("column", "amount", ("orders",)), ("column", "amount", ("orders",)), ("limit", "", ())]
    ins = sqlmap.parse("INSERT INTO app.orders (account_id, amount) VALUES ($1, $2)")
    assert ins.kind == "write" and ins.params[2] == sqlmap.ParamUse("column", "amount", ("app.orders",))
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
    for line in (ln.replace(gen.NEXT, " ") for ln in lines):
        name, expr = re.fullmatch(r"\\set (\w+) (.*)", line).groups()  # type: ignore[union-attr]
        py = re.sub(r"random\(([^,]+), ([^)]+)\)", r"rng.randint(int(\1), int(\2))", expr)
        py = re.sub(r":(\w+)", r"env['\1']", py)
        while "case " in py:  # innermost CASE first: when A then B ... else C end -> (B if A else (...))
            py = re.sub(INNER_CASE, _case, py)
        env[name] = eval(py, {"rng": rng, "env": env})  # noqa: S307 - the test's own generator text
    return env[var]


def _case(m: re.Match[str]) -> str:
    pairs = re.findall(r"when (.*?) then (.*?) (?=when |$)", m.group(1))
    out = f"({m.group(2)})"
    for cond, val in reversed(pairs):
        out = f"(({val}) if ({cond.replace(' = ', ' == ')}) else {out})"
    return out


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
