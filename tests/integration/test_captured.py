"""A captured workload end to end: the test application (tests/data/capture_app: skewed accounts
and orders, a read-mostly mix with an UPDATE and an INSERT) run by pgbench as "production" on one
embedded cluster with pg_stat_statements, captured by a read-only role, replayed by pgknee on a
second cluster restored from the first (pg_dump | pg_restore)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgknee.driver.pgbench import find_pgbench
from pgknee.targets.local import EmbeddedCluster, find_bindir
from pgknee.workloads.captured import capture, probe
from pgknee.workloads.captured.manifest import Manifest, ScriptEntry, Statement
from pgknee.workloads.captured.observe import StatementCounts
from pgknee.workloads.captured.source import Source, stats

from .conftest import APP_ENV, QUICK, dsn_of, own_cluster, pgknee, sql, superuser

APP = Path(__file__).resolve().parent.parent / "data" / "capture_app"
PRODUCTION = (("lookup", 50), ("history", 20), ("region", 10), ("pay", 15), ("order", 5), ("upsert", 5),
              ("audit", 5), ("moved", 5))
STARTS = {"lookup": "SELECT balance", "history": "SELECT id, amount", "region": "SELECT count(*)", "pay": "UPDATE",
          "order": "INSERT INTO orders", "upsert": "INSERT INTO tallies", "audit": "INSERT INTO audit",
          "moved": "WITH moved"}
PW = "pw-capture"
ENV = {"PGPASSWORD": PW}


def _cluster(base: str) -> EmbeddedCluster:
    c = EmbeddedCluster(find_bindir(), {"shared_preload_libraries": "pg_stat_statements", "max_connections": "40"},
                        base_dir=base)
    c.start()
    c.create_database()
    with _conn(c) as conn:
        conn.execute(f"ALTER ROLE pgknee PASSWORD '{PW}'")
    return c


def _conn(c: EmbeddedCluster) -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="pgknee", autocommit=True)


def _dsn(c: EmbeddedCluster, user: str = "pgknee") -> str:
    return f"postgresql://{user}@127.0.0.1:{c.port}/pgknee"


def _production(c: EmbeddedCluster) -> None:
    with _conn(c) as conn:
        conn.execute("CREATE EXTENSION pg_stat_statements")
        conn.execute((APP / "schema.sql").read_text())
        conn.execute(f"CREATE ROLE ro LOGIN PASSWORD '{PW}' IN ROLE pg_read_all_stats, pg_monitor")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO ro")
        conn.execute("SELECT pg_stat_statements_reset()")
        conn.execute("CREATE ROLE ghost PASSWORD 'ghost-secret-pw'")  # a utility statement's text: not normalised
    pgbench = find_pgbench()  # as pgknee finds it: the servers of 16 and 17 come without one
    scripts = [a for name, w in PRODUCTION for a in ("-f", f"{APP / name}.sql@{w}")]
    subprocess.run([pgbench, "-n", "-T", "4", "-c", "2", "-h", str(c.sock), "-p", str(c.port), "-U", "pgknee",
                    *scripts, "pgknee"], check=True, capture_output=True, timeout=60)
    with _conn(c) as conn:  # what monitoring (and pg_dump before 18, once per dump) runs: not the application's
        for _ in range(200):
            conn.execute("SELECT last_value, is_called FROM public.orders_id_seq")


def _dump_tools() -> Path:
    """pg_dump and pg_restore of the server's major, or of a newer one (they read older servers):
    the servers' own where they have them (Debian's, the wheel's), else 18's (npm's 16 and 17 come
    with the server alone; scripts/servers.py fetches 18, make test and make matrix have)."""
    own = Path(find_bindir())
    if (own / "pg_dump").is_file():
        return own
    r = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[2] / "scripts" / "servers.py"), "18"],
                       capture_output=True, text=True, check=True)
    return Path(r.stdout.split()[1])


@pytest.fixture(scope="module")
def clusters(suite_share: Callable[[], AbstractContextManager[None]]) -> Iterator[tuple[EmbeddedCluster,
                                                                                      EmbeddedCluster]]:
    base = tempfile.mkdtemp(prefix="pgkt-capture-")
    os.chmod(base, 0o755)
    made: list[EmbeddedCluster] = []
    try:
        with suite_share():  # clusters made, pgbench as production: not beside a timing test
            made.append(_cluster(base))
            _production(made[0])
            made.append(_cluster(base))
            bindir = _dump_tools()
            dump = subprocess.run([str(bindir / "pg_dump"), "-Fc", "-h", str(made[0].sock), "-p", str(made[0].port),
                                   "-U", "pgknee", "pgknee"], check=True, capture_output=True, timeout=60).stdout
            restored = subprocess.run([str(bindir / "pg_restore"), "-h", str(made[1].sock), "-p", str(made[1].port),
                                       "-U", "pgknee", "--no-owner", "--no-privileges", "-d", "pgknee"],
                                      input=dump, capture_output=True, timeout=60, check=False)
            # a newer pg_restore sets what an older server does not know (18's SET transaction_timeout on
            # 16): that statement fails, the rest is restored
            errors = [ln for ln in restored.stderr.decode().splitlines() if "ERROR:" in ln]
            assert restored.returncode == 0 or all("transaction_timeout" in ln for ln in errors), restored.stderr
            with _conn(made[1]) as conn:
                conn.execute("ANALYZE")  # pg_dump carries no planner statistics: a restored copy needs its own
        yield made[0], made[1]
    finally:
        for c in made:
            c.close()
        shutil.rmtree(base, ignore_errors=True)


def _capture(source: EmbeddedCluster, out: Path) -> dict[str, Any]:
    r = pgknee("workload", "capture", "--dsn", _dsn(source, "ro"), "--top", "30", "--output", str(out), env=ENV)
    assert r.code == 0, r.err
    text = (out / "workload.toml").read_text()
    assert "ghost-secret-pw" not in text and "CreateRole is not a query" in text
    m = tomllib.loads(text)
    assert m["grouping"].startswith("not observed") and "observed" not in m  # it says what it could not learn
    return m


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_capture_then_replay_resembles_and_keeps_the_skew(clusters: tuple[EmbeddedCluster, EmbeddedCluster],
                                                          tmp_path: Path) -> None:
    source, copy = clusters
    m = _capture(source, tmp_path / "cap")
    stmts = m["statements"]
    assert {s["kind"] for s in stmts} == {"read", "write"}
    assert len(stmts) == len(PRODUCTION), m["skipped"]
    seq = [k for k in m["skipped"] if k["query"].startswith("SELECT last_value, is_called FROM public.orders_id_seq")]
    assert len(seq) == 1 and seq[0]["calls"] >= 200 and "state of sequence public.orders_id_seq" in seq[0]["reason"]

    def find(start: str) -> dict[str, Any]:
        return next(s for s in stmts if s["query"].startswith(start))

    # the capture holds the weights of the production mix (calls), within sampling noise
    total = sum(float(s["share_calls"]) for s in stmts)
    weights = sum(w for _, w in PRODUCTION)
    for name, weight in PRODUCTION:
        assert abs(find(STARTS[name])["share_calls"] / total - weight / weights) < 0.03, (name, stmts, m["skipped"])
    insert = find("INSERT INTO orders")
    # the INSERT's account_id is drawn from orders.account_id's statistics: account 1 is the top value
    p1 = insert["params"][0]
    assert p1["column"] == "public.orders.account_id" and p1["mcv"][0] == "1"
    top_freq = float(p1["mcf"][0])
    assert top_freq > 0.05
    # a write needs --allow-writes: refused before anything starts
    store = tmp_path / "replay.db"
    refused = pgknee("run", "--dsn", _dsn(copy), "--workload", str(tmp_path / "cap"), "--clients", "2",
                     "--duration", "3s", "--store", str(store), *QUICK, env=ENV)
    assert refused.code == 2 and "--allow-writes" in refused.err and not store.exists()
    # and never on the source itself (the same system identifier)
    same = pgknee("run", "--dsn", _dsn(source), "--workload", str(tmp_path / "cap"), "--allow-writes",
                  "--clients", "2", "--duration", "3s", "--store", str(store), *QUICK, env=ENV)
    assert same.code == 2 and "system identifier" in same.err
    with _conn(copy) as conn:
        (last,) = conn.execute("SELECT max(id) FROM orders").fetchone()
    # (the copy was analysed after its restore: without planner statistics the orders query sorts the frequent
    # accounts' orders, and its share of time goes from about 9% to 70-80%)
    r = pgknee("run", "--dsn", _dsn(copy), "--workload", str(tmp_path / "cap"), "--allow-writes", "--clients",
               "2,4", "--duration", "4s", "--store", str(store), "--no-waits", *QUICK, env=ENV)
    assert r.code == 0, r.err
    # every write succeeds: the upsert's two rows apart, the audit trail's two keys fresh and apart
    assert r.err.count(", 0 failed") == 2, r.err
    assert "Replay against capture" in r.out
    rows = sql(store, "SELECT statement, sum(calls) FROM step_statements GROUP BY statement")
    assert len(rows) == len(PRODUCTION)
    mix = pgknee("workload", "mix", "last", "--store", str(store))
    assert mix.code == 0 and mix.out.count(" yes") + mix.out.count(" NO") == len(PRODUCTION)
    shown = pgknee("show", "last", "--store", str(store), "--no-waits", "--json", str(tmp_path / "run.json"))
    assert shown.code == 0 and "Replay against capture" in shown.out
    doc = json.loads((tmp_path / "run.json").read_text())["replay_mix"]
    assert len(doc["statements"]) == len(PRODUCTION) and doc["within"] is True, doc  # shares of calls and of time
    report = pgknee("report", "last", "--store", str(store), "-o", str(tmp_path / "r.md"))
    assert report.code == 0 and "## Replay against capture" in (tmp_path / "r.md").read_text()
    # the replay's statement mix: share of calls within 5 points of the capture's, for every statement
    replayed = dict(rows)
    all_calls = sum(int(c) for c in replayed.values())
    captured_total = sum(float(s["share_calls"]) for s in m["statements"])
    for s in m["statements"]:
        share = int(replayed[s["id"]]) / all_calls
        assert abs(share - float(s["share_calls"]) / captured_total) < 0.05, (s["id"], share)
    # the skew: account 1 gets its captured share of the replayed orders, within four standard errors
    # of a binomial draw of that many orders (3 points held until a loaded CI run drew 55 of 467
    # against 8.3%: 2.7 standard errors; the skew lost, drawn uniformly over the 20,000 accounts,
    # would give account 1 none)
    with _conn(copy) as conn:
        n, ones = conn.execute("SELECT count(*), count(*) FILTER (WHERE account_id = 1) FROM orders WHERE id > %s",
                               (last,)).fetchone()
    assert n > 200
    assert abs(ones / n - top_freq) < 4 * (top_freq * (1 - top_freq) / n) ** 0.5, (ones, n, top_freq)


def test_capture_refuses_a_database_without_pg_stat_statements(server: EmbeddedCluster, tmp_path: Path) -> None:
    r = pgknee("workload", "capture", "--dsn", dsn_of(server), "--output", str(tmp_path / "cap"), env=APP_ENV)
    assert r.code == 2 and "pg_stat_statements is not installed" in r.err and "Traceback" not in r.err
    assert not (tmp_path / "cap").exists()  # refused before anything was written


def test_replay_refuses_a_server_that_lacks_the_captured_tables(server: EmbeddedCluster, tmp_path: Path) -> None:
    cap = tmp_path / "cap"
    cap.mkdir()
    st = Statement("s01", "SELECT balance FROM accounts WHERE id = $1", "read", 10, 1.0, 0.1, 10, 1.0, 1.0,
                   ["public.accounts", "userdata.orders"], "")
    m = Manifest("x", "pgknee", "1", 150000, "now", "time", 1, ["public.accounts", "userdata.orders"], [st],
                 [ScriptEntry("s01", "s01.sql", 1, ["s01"])])
    (cap / "workload.toml").write_bytes(m.to_toml())
    (cap / "s01.sql").write_text("\\set p random(1, 10)\nSELECT balance FROM accounts WHERE id = :p;\n")
    store = tmp_path / "s.db"
    r = pgknee("run", "--dsn", dsn_of(server), "--workload", str(cap), "--clients", "1", "--duration", "1s",
               "--store", str(store), *QUICK, env=APP_ENV)
    assert r.code == 2 and "lacks the captured tables public.accounts" in r.err and "userdata" not in r.err
    assert not store.exists()  # refused before the run began: nothing made


@pytest.fixture(scope="module")
def ranges(suite_share: Callable[[], AbstractContextManager[None]]) -> Iterator[EmbeddedCluster]:
    """A server with pg_stat_statements and a table of 200,000 ids of 200 bytes (35 a page), ANALYZEd:
    the range tests' source, shared (each resets pg_stat_statements before its application runs);
    loaded under the suite's shared lock (never beside a test timed alone)."""
    with ExitStack() as stack:
        with suite_share():
            c = stack.enter_context(own_cluster("ranges", {"shared_preload_libraries": "pg_stat_statements"},
                                                extensions=("pg_stat_statements",)))
            with superuser(c) as conn:
                conn.execute("CREATE TABLE r (id int PRIMARY KEY, pad text)")
                conn.execute("INSERT INTO r SELECT g, repeat('x', 200) FROM generate_series(1, 200000) g")
                conn.execute("ANALYZE r")
        yield c


@pytest.mark.xdist_group("ranges")
def test_a_range_s_width_is_found_by_the_blocks_the_application_reads(ranges: EmbeddedCluster) -> None:
    """Issue 39: the width of `id >= $1 AND id < $2` is in no statistics. An application asks 300
    ids at a time (about 12 shared blocks a call: 35 rows of 200 bytes a page, and the index);
    the probe, run at widths around one histogram bucket (2,000 ids) in a read-only transaction,
    finds a width near 300 from pg_stat_statements' own count of the blocks the application read
    (half to one and a half times: a block holds 35 ids). It leaves nothing behind: no prepared
    statement, the statement_timeout as it was, the capture's transaction usable."""
    c = ranges
    with superuser(c) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")
        for lower in range(1000, 190_000, 3700):  # the application: 300 ids a call
            conn.execute("SELECT count(*), max(length(pad)) FROM r WHERE id >= %s AND id < %s", (lower, lower + 300))
        query, per_call = conn.execute(
            "SELECT query, (shared_blks_hit + shared_blks_read)::float8 / calls FROM pg_stat_statements "
            "WHERE query LIKE 'SELECT count(*), max(length(pad))%'").fetchone() or ("", 0.0)
        assert 6 <= per_call <= 20, per_call  # 300 / 35 heap pages and the index's few
        with psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="pgknee") as ro:
            ro.read_only = True
            with ro.transaction():
                src = Source(ro, {}, {})
                st = stats(src, "public.r", "id")
                assert st is not None
                found = probe.range_width(src, str(query), {}, (1, 2, False), st, float(per_call))
                assert found is not None, query
                assert 150 <= int(found[0]) <= 450, found
                probed = [int(w) for w in re.findall(r"(\d+): \d+", found[1])]
                assert "shared blocks a call" in found[1] and any(1800 <= w <= 2200 for w in probed), found
                assert min(probed) <= 150 and max(probed) >= 7000  # a sixteenth of the bucket to four buckets
                assert ro.execute("SELECT count(*) FROM pg_prepared_statements").fetchone() == (0,)
                assert ro.execute("SHOW statement_timeout").fetchone() == ("0",)


@pytest.mark.parametrize(("app", "shape"), [
    # an application's literal width: pg_stat_statements numbers it too
    ("SELECT count(*), max(length(pad)) FROM r WHERE id >= %(lo)s AND id < %(hi)s + 300",
     "id >= $1 AND id < $2 + $3"),
    # the same parameter twice (a driver's named parameter): the width is the sum's other term
    ("SELECT count(*), max(length(pad)) FROM r WHERE id >= %(lo)s AND id < %(lo)s + %(w)s",
     "id >= $1 AND id < $1 + $2"),
], ids=["literal-width", "width-parameter"])
@pytest.mark.xdist_group("ranges")
def test_a_range_written_as_a_sum_replays_the_application_s_width(app: str, shape: str, ranges: EmbeddedCluster,
                                                                  tmp_path: Path) -> None:
    """Found by the order entry's trial: `id < :id + 50` reached the capture as `id < $2 + $3`,
    each drawn from id's statistics (their sum about twice an id: ranges over half the table).
    Now the bound is drawn from the lower at the probed width, or the width parameter is the
    probed width; the script, run by pgbench on the same server, reads about the application's
    shared blocks a call (pg_stat_statements' own count of both, half to twice)."""
    c = ranges
    with superuser(c) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")
        for lower in range(1000, 190_000, 3700):  # the application: 300 ids a call
            conn.execute(app, {"lo": lower, "hi": lower, "w": 300})
        row = conn.execute("SELECT queryid, query, calls, total_exec_time, rows, shared_blks_hit + shared_blks_read "
                           "FROM pg_stat_statements WHERE query LIKE 'SELECT count(*), max(length(pad))%'").fetchone()
        assert row is not None and shape in row[1], row
        counts = StatementCounts(int(row[0]), str(row[1]), int(row[2]), float(row[3]), int(row[4]), int(row[5]))
        with psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname="pgknee") as ro:
            ro.read_only = True
            with ro.transaction():
                _, script = capture._statement(Source(ro, {}, {}), "s01", counts, (counts.calls, counts.total_ms))
        assert "shared blocks a call" in script, script  # the width probed, not one histogram bucket
        width = int(re.search(r"the range's (?:upper bound: \$1 \+|width:) (\d+)", script).group(1))  # type: ignore[union-attr]
        assert 150 <= width <= 450, script
        (tmp_path / "s01.sql").write_text(script)
        conn.execute("SELECT pg_stat_statements_reset()")
        pgbench = find_pgbench(None)
        r = subprocess.run([pgbench, "-n", "-t", "50", "-f", str(tmp_path / "s01.sql"), "-h", str(c.sock),
                            "-p", str(c.port), "-U", "pgknee", "pgknee"], capture_output=True, text=True, timeout=60,
                           check=False)
        assert r.returncode == 0, r.stderr
        calls, blocks = (int(str(x)) for x in conn.execute(
            "SELECT calls, shared_blks_hit + shared_blks_read FROM pg_stat_statements "
            "WHERE query LIKE 'SELECT count(*), max(length(pad))%'").fetchone() or (0, 0))
        app_per_call = counts.blocks / counts.calls
        assert calls == 50 and app_per_call / 2 <= blocks / calls <= app_per_call * 2, (blocks / calls, app_per_call)
