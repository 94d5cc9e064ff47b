"""workload capture --observe end to end: an application with known behaviour (tests/data/capture_app:
payments of three statements in one transaction with 10-30 ms of its own work between them, and
lookups in autocommit; 20 ms between a session's transactions; three sessions parked idle) runs
by pgbench on a "production" cluster; pgknee watches it with a read-only role, captures it,
and replays it on a restored copy. The application's own figures come from pgbench, which pgknee
does not control: its transactions per script and their latency (the hold is the payment's
latency less the 20 ms between transactions)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import tomllib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from pgknee.driver.pgbench import find_pgbench
from pgknee.targets.local import EmbeddedCluster, find_bindir
from pgknee.workloads.captured import pauses

from .conftest import APP_ENV, QUICK, CliResult, dsn_of, pgknee, sql
from .test_captured import APP, ENV, PW, _conn, _dsn, _dump_tools

THINK_MS = 20.0  # pay_tx.sql's sleep after COMMIT: between transactions, not inside one
APP_SECONDS = 30
OBSERVE = "20s"


@dataclass
class App:
    """What pgbench said of the application's run."""

    pay: int  # transactions of pay_tx.sql
    pay_ms: float  # their latency, mean (the 20 ms between transactions included)
    lookups: int
    lookup_ms: float

    @property
    def hold_ms(self) -> float:
        return (self.pay * (self.pay_ms - THINK_MS) + self.lookups * self.lookup_ms) / (self.pay + self.lookups)

    @property
    def statements_per_transaction(self) -> float:
        return (3 * self.pay + self.lookups) / (self.pay + self.lookups)


def _app_figures(out: str) -> App:
    parts = re.split(r"SQL script \d+: ", out)[1:]
    got = {}
    for p in parts:
        n = int(re.search(r"- (\d+) transactions", p).group(1))  # type: ignore[union-attr]
        ms = float(re.search(r"- latency average = ([\d.]+) ms", p).group(1))  # type: ignore[union-attr]
        got["pay" if p.startswith(str(APP / "pay_tx.sql")) else "lookup"] = (n, ms)
    return App(got["pay"][0], got["pay"][1], got["lookup"][0], got["lookup"][1])


def _cluster(base: str, max_connections: int) -> EmbeddedCluster:
    c = EmbeddedCluster(find_bindir(), {"shared_preload_libraries": "pg_stat_statements",
                                        "max_connections": str(max_connections)}, base_dir=base)
    c.start()
    c.create_database()
    with _conn(c) as conn:
        conn.execute(f"ALTER ROLE pgknee PASSWORD '{PW}'")
    return c


@dataclass
class Observed:
    source: EmbeddedCluster
    copy: EmbeddedCluster
    capture: Path
    app: App


def _run_and_observe(source: EmbeddedCluster, out: Path) -> str:
    """The application for APP_SECONDS beside three parked sessions, captured with --observe while it
    runs; pgbench's own report of it."""
    parked = [psycopg.connect(host=str(source.sock), port=source.port, user="pgknee", dbname="pgknee")
              for _ in range(3)]
    app = subprocess.Popen([find_pgbench(), "-n", "-T", str(APP_SECONDS), "-c", "4", "-h", str(source.sock),
                            "-p", str(source.port), "-U", "pgknee", "-f", f"{APP / 'pay_tx.sql'}@80",
                            "-f", f"{APP / 'lookup.sql'}@20", "pgknee"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    result: dict[str, CliResult] = {}

    def capture() -> None:
        threading.Event().wait(3.0)  # the application under way
        result["r"] = pgknee("workload", "capture", "--dsn", _dsn(source, "ro"), "--observe", OBSERVE,
                             "--output", str(out), env=ENV)

    watcher = threading.Thread(target=capture)
    watcher.start()
    try:
        stdout, stderr = app.communicate(timeout=APP_SECONDS + 60)
    finally:
        watcher.join()
        for c in parked:
            c.close()
    assert app.returncode == 0, stderr
    assert result["r"].code == 0, result["r"].err
    return stdout


def _setup(base: str, made: list[EmbeddedCluster], out: Path) -> Observed:
    """The source with the application run and observed on it, then a restored copy; the source
    closed once dumped (its autovacuum and checkpoints after the load go with it)."""
    source = _cluster(base, 40)
    made.append(source)
    with _conn(source) as conn:
        conn.execute("CREATE EXTENSION pg_stat_statements")
        conn.execute((APP / "schema.sql").read_text())
        conn.execute(f"CREATE ROLE ro LOGIN PASSWORD '{PW}' IN ROLE pg_read_all_stats, pg_monitor")
        conn.execute("GRANT SELECT ON ALL TABLES IN SCHEMA public TO ro")
    stdout = _run_and_observe(source, out)
    copy = _cluster(base, 250)
    made.append(copy)
    bindir = _dump_tools()
    dump = subprocess.run([str(bindir / "pg_dump"), "-Fc", "-h", str(source.sock), "-p", str(source.port),
                           "-U", "pgknee", "pgknee"], check=True, capture_output=True, timeout=60).stdout
    made.remove(source)
    source.close()
    subprocess.run([str(bindir / "pg_restore"), "-h", str(copy.sock), "-p", str(copy.port), "-U", "pgknee",
                    "--no-owner", "--no-privileges", "-d", "pgknee"], input=dump, capture_output=True,
                   timeout=60, check=False)
    with _conn(copy) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        conn.execute("ANALYZE")
    return Observed(source, copy, out, _app_figures(stdout))


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory,
             suite_share: Callable[[], AbstractContextManager[None]]) -> Iterator[Observed]:
    base = tempfile.mkdtemp(prefix="pgkt-observe-")
    os.chmod(base, 0o755)
    made: list[EmbeddedCluster] = []
    try:
        with suite_share():  # two clusters made, an application under pgbench: not beside a timing test
            ready = _setup(base, made, tmp_path_factory.mktemp("observe") / "cap")
        yield ready
    finally:
        for c in made:
            c.close()
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.once  # in make matrix's three workers on 2 CPUs the application under observation slept up to
# a third longer than asked and the drawn idle time's mean ran 28% over its own latency's (issue 27's
# open question of tests under load); make slow (two workers) runs it, as it does the replay's test
@pytest.mark.timeout(300)
def test_the_observation_matches_the_application(observed: Observed) -> None:
    m = tomllib.loads((observed.capture / "workload.toml").read_text())
    o, app = m["observed"], observed.app
    # the hold of a transaction, against pgbench's own latency less the time between transactions
    assert abs(o["hold_ms"] - app.hold_ms) <= 0.15 * app.hold_ms, (o, app)
    # its idle share: a payment's time inside its transaction less its three statements (each about
    # a lookup's time), over the hold. Not the nominal 2 x 10-30 ms of the application's work: on a
    # loaded machine pgbench sleeps longer than asked (make matrix, 3 workers: payments of 68.7 ms
    # where 60 were asked, the share 0.98 where 40 ms over the hold would have said 0.82)
    idle = app.pay * (app.pay_ms - THINK_MS - 3 * app.lookup_ms) / (app.pay + app.lookups)
    assert abs(o["idle_share"] - idle / app.hold_ms) <= 0.15 * idle / app.hold_ms, (o, app)
    assert abs(o["statements_per_transaction"] - app.statements_per_transaction) <= 0.05 * 3, (o, app)
    assert abs(o["think_ms"] - THINK_MS) <= 0.5 * THINK_MS, o
    # its sessions: 4 working, 3 parked; busy at most the 4
    assert o["sessions_open"]["p50"] == 7 and o["sessions_busy"]["max"] == 4, o
    assert o["own_statements"] > 100 and not o.get("notes"), o
    # the payment's statements grouped into one transaction in their order, the lookup's extra calls alone
    scripts = {s["name"]: s for s in m["scripts"]}
    queries = {s["id"]: s["query"] for s in m["statements"]}
    (tx,) = [s for s in scripts.values() if s["idle_ms"]]
    assert [queries[x].split()[0] for x in tx["statements"]] == ["SELECT", "UPDATE", "INSERT"], m["grouping"]
    # the idle time drawn per transaction: a mean of the payments' 2 x 10-30 ms of work (and the round
    # trips), as the application spent it: on a loaded machine pgbench sleeps longer than asked (make
    # matrix on 18: 52 ms drawn where 40 were asked), so against its own latency less its statements
    spent = app.pay_ms - THINK_MS - 3 * app.lookup_ms
    assert "seen together" in tx["evidence"] and abs(pauses.mean_of(tx["idle_ms"]) - spent) < 8, (tx, app)
    text = (observed.capture / tx["file"]).read_text()
    assert text.count("\\sleep :pgknee_gap_us us") == 2 and "BEGIN;" in text and "COMMIT;" in text
    alone = [s for s in scripts.values() if not s["idle_ms"]]
    assert [queries[s["statements"][0]].split()[0] for s in alone] == ["SELECT"]
    share = alone[0]["weight"] / (alone[0]["weight"] + tx["weight"])
    assert abs(share - app.lookups / (app.pay + app.lookups)) < 0.05, (share, app)
    shown = pgknee("workload", "show", str(observed.capture))
    assert shown.code == 0 and "The application as observed" in shown.out and "t01" in shown.out
    size = pgknee("size", "--workload", str(observed.capture), "--server-cpus", "2")
    assert size.code == 0 and "Little's law takes the hold, not the SQL time" in size.out, size.out


@pytest.mark.slow
@pytest.mark.once  # two sweeps to 192 clients: the replay's pace and curve do not depend on the major
@pytest.mark.timeout(400)
def test_the_replay_holds_its_transactions_as_the_application(observed: Observed, tmp_path: Path) -> None:
    try:
        _replay_against_the_application(observed, tmp_path)
    finally:  # the copy's work after two sweeps to 192 clients ends with it, under this test's share of the lock
        observed.copy.close()


def _replay_against_the_application(observed: Observed, tmp_path: Path) -> None:
    store = tmp_path / "replay.db"
    clients = "8,32,96,192"
    # refused for its writes: that one line, not the pace it would have replayed before it
    refused = pgknee("run", "--dsn", _dsn(observed.copy), "--workload", str(observed.capture), "--clients", "8",
                     "--store", str(store), env=ENV)
    assert refused.code == 2 and refused.err.strip().splitlines() == [refused.err.strip()], refused.err
    assert "--allow-writes" in refused.err and not store.exists(), refused.err
    r = _sweep_the_replay(observed, store, clients)
    assert "replaying the application's pace as observed" in r.err, r.err  # its time between transactions
    think = sql(store, "SELECT plan_json FROM runs")[0][0]
    assert 10 < json.loads(think)["variants"][0]["think_ms"] < 30, think
    mix = pgknee("workload", "mix", "last", "--store", str(store))
    assert mix.code == 0 and "Transactions: replay against the application" in mix.out, mix.out
    rows = [ln for ln in mix.out.splitlines() if ln.strip().startswith("c8 rep 1")]
    assert rows and rows[-1].rstrip().endswith("yes"), mix.out  # at 8 clients it holds as the application did
    # the application itself, swept the same way: its own scripts, its own pauses between transactions
    own = tmp_path / "own.db"
    _sweep_the_application(observed, own, clients)
    steps = [int(c) for c in clients.split(",")]
    tps = [[row[0] for row in sql(db, "SELECT tps FROM steps ORDER BY clients")] for db in (store, own)]
    # the same curve, step by step below the largest count (there both saturate, and a 2-CPU machine's noise
    # is widest: 19% apart once on PostgreSQL 17); the answers at the top are compared below
    if not _alike(tps):  # another test's load on the two CPUs during one sweep: A B, then B A, each at its best
        store, own = tmp_path / "replay2.db", tmp_path / "own2.db"
        _sweep_the_application(observed, own, clients)
        _sweep_the_replay(observed, store, clients)
        again = [[row[0] for row in sql(db, "SELECT tps FROM steps ORDER BY clients")] for db in (store, own)]
        tps = [[max(a, b) for a, b in zip(first, second, strict=True)] for first, second in zip(tps, again,
                                                                                                 strict=True)]
    assert _alike(tps), tps
    counts = []
    for db in (store, own):
        rec = pgknee("recommend", "last", "--store", str(db), "--json", "-", "--server-cpus", "2")
        assert rec.code == 0, rec.err
        (one,) = json.loads(rec.out[rec.out.index("{"):])["recommendations"]
        # a peak not reached, whose next counts lie beyond the sweep, says "the largest count or more"
        beyond = one["verdict"] == "not-identified" and min(one.get("next_counts") or [0]) > steps[-1]
        counts.append(one["connections"] or one["measured_best"] or (steps[-1] if beyond else None))
    assert None not in counts and abs(steps.index(counts[0]) - steps.index(counts[1])) <= 1, (counts, tps)
    told = pgknee("recommend", "last", "--store", str(store), "--server-cpus", "2")
    assert "hold time: the application's as captured" in told.out, told.out
    hold = sql(store, "SELECT value FROM run_environment WHERE key = 'workload.observed.hold_ms'")
    assert hold and float(hold[0][0]) > 20


def _sweep_the_replay(observed: Observed, store: Path, clients: str) -> CliResult:
    r = pgknee("run", "--dsn", _dsn(observed.copy), "--workload", str(observed.capture), "--allow-writes",
               "--clients", clients, "--duration", "8s", "--store", str(store), "--no-waits", *QUICK, env=ENV)
    assert r.code == 0, r.err
    return r


def _sweep_the_application(observed: Observed, store: Path, clients: str) -> None:
    a = pgknee("run", "--dsn", _dsn(observed.copy), "--workload", "custom", "--script", f"{APP / 'pay_tx.sql'}@80",
               "--script", f"{APP / 'lookup.sql'}@20", "--clients", clients, "--duration", "8s",
               "--store", str(store), "--no-waits", *QUICK, env=ENV)
    assert a.code == 0, a.err


def _alike(tps: list[list[float]]) -> bool:
    """Replay and application within 15% at every count below the largest where the application has
    not levelled off (under 80% of its best): there both saturate the two CPUs, and what each
    transaction costs pgbench, not the hold, sets the throughput (a clean clone's make slow: 1,286
    against 1,091 at 96 clients, the application's best 1,091; 3% apart at 8 and 32)."""
    top = max(tps[1])
    return all(abs(a - b) <= 0.15 * b for a, b in list(zip(*tps, strict=True))[:-1] if b < 0.8 * top)


def test_bad_observation_windows_and_sources_get_one_line_and_no_directory(server: EmbeddedCluster,
                                                                           tmp_path: Path) -> None:
    out = tmp_path / "cap"
    for window, said in (("500ms", "--observe 500ms is shorter than 1 s"), ("30", "--observe '30' has no unit")):
        r = pgknee("workload", "capture", "--dsn", "postgresql://nobody@127.0.0.1:1/x", "--observe", window,
                   "--output", str(out))
        assert r.code == 2 and said in r.err and len(r.err.strip().splitlines()) == 1, r.err
        assert "Traceback" not in r.err and not out.exists()
    # a source without pg_stat_statements: refused before it is watched
    r = pgknee("workload", "capture", "--dsn", dsn_of(server), "--observe", "5s", "--output", str(out), env=APP_ENV)
    assert r.code == 2 and "pg_stat_statements is not installed" in r.err and not out.exists(), r.err
