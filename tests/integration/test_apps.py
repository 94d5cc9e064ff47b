"""The applications of tests/data/apps (an order entry, a social network, a voting service, written
from BenchBase's SQL) run by pgbench as the application at 8 clients, captured with --observe as a
new user would, and replayed untouched on a restored, analysed copy (issue 39).

What each must do: the capture's every script passes pgbench's parser (the run's preflight
refuses otherwise), every statement of the application is scripted (none skipped), the replay
covers 90% or more of the application's database time, it runs
with no failed transaction (its inserts collide with no row, its foreign keys hold, its locks do
not deadlock), and every transaction type of several statements is grouped as the application runs it (the
order with its lines, the payment, the delivery, the stock level, the order status; a follower
list and a timeline; a vote), two types never in one script, the arms of a choice under one draw
(a vote inserted one way or the other; a payment's customer by name or by id), with the statements per
transaction within 15% of the application's, counted independently from pgbench's own
per-script transactions and the statements each runs. The figures a run gives (its hold and
statements per transaction against the application's) are printed for docs/workload.md."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import threading
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest

from pgknee.driver.pgbench import find_pgbench
from pgknee.targets.local import EmbeddedCluster

from .conftest import CliResult, pgknee, sql
from .test_captured import ENV, PW, _cluster, _conn, _dump_tools  # compute_query_id's auto: on with the extension

APPS = Path(__file__).resolve().parent.parent / "data" / "apps"
CLIENTS = 8
APP_SECONDS = 32  # the observation (20 s) starts 4 s in and ends before it


def _scripts(app: Path) -> list[str]:
    weights = [line.split() for line in (app / "weights.txt").read_text().splitlines() if line.strip()]
    return [a for name, weight in weights for a in ("-f", f"{app / name}@{weight}")]


def _pgbench(c: EmbeddedCluster, app: Path, seconds: int) -> str:
    r = subprocess.run([find_pgbench(), "-n", "-M", "prepared", "-T", str(seconds), "-c", str(CLIENTS), "-j", "2",
                        "-h", str(c.sock), "-p", str(c.port), "-U", "pgknee", *_scripts(app), "pgknee"],
                       capture_output=True, text=True, timeout=seconds + 60, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout


def _statements_per_transaction(app: Path, stdout: str) -> float:
    """The application's statements per transaction, from pgbench's own count of each script's
    transactions and the SQL statements each runs, read from the scripts (BEGIN and COMMIT not
    counted): a new order 6 and 4 a line, 5..15 lines (10), 1% one more; a payment 7, a bad
    credit's (10%) one more; an order status 3; a delivery 7 for each of ten districts; a stock
    level 2; a vote 4 (1% only its first, an unknown contestant); a follower list or a timeline 2."""
    per = {"neworder.sql": 6 + 4 * 10 + 0.01, "payment.sql": 7.1, "orderstatus.sql": 3, "delivery.sql": 10 * 7,
           "stocklevel.sql": 2, "vote.sql": 0.99 * 4 + 0.01, "getfollowers.sql": 2, "gettweetsfromfollowing.sql": 2}
    calls = txs = 0.0
    parts = stdout.split("SQL script ")[1:]
    if not parts:  # one script: pgbench prints no section per script
        n = int(re.search(r"actually processed: (\d+)", stdout).group(1))  # type: ignore[union-attr]
        return float(per[Path(_scripts(app)[1].split("@")[0]).name]) if n else 0.0
    for part in parts:
        name = Path(part.split(":", 1)[1].split("\n", 1)[0].strip().split("@")[0]).name
        n = int(re.search(r"- (\d+) transactions", part).group(1))  # type: ignore[union-attr]
        calls += n * per.get(name, 1)
        txs += n
    return calls / txs


@pytest.mark.slow
# the capture and the replay's rate against the application's alone (another test's load beside one of them skews
# it); the three clusters, the load, the dump and the restores beside the other worker's tests
@pytest.mark.alone_in_part
@pytest.mark.once  # a source, a copy, the application, its replay: a capture's shape does not depend on the major
@pytest.mark.timeout(420)
@pytest.mark.parametrize("name", ["orderentry", "social", "voter"])
def test_an_application_captured_replays_untouched(name: str, tmp_path: Path, suite_share: Lock,
                                                   suite_alone: Lock) -> None:
    app = APPS / name
    base = tempfile.mkdtemp(prefix="pgkt-apps-")
    os.chmod(base, 0o755)
    made: list[EmbeddedCluster] = []
    try:
        with suite_share():
            _source_and_copies(app, name, base, made)
        with suite_alone():
            _capture_and_replay(app, name, made, tmp_path)
    finally:
        for c in made:
            c.close()
        shutil.rmtree(base, ignore_errors=True)


Lock = Callable[[], contextlib.AbstractContextManager[None]]


def _source_and_copies(app: Path, name: str, base: str, made: list[EmbeddedCluster]) -> None:
    """The application's source cluster with its data, then two restored and analysed copies of it,
    each put in `made` as soon as it is started (the caller stops them)."""
    source = _cluster(base)
    made.append(source)
    with _conn(source) as conn:
        conn.execute("CREATE EXTENSION pg_stat_statements")
        conn.execute((app / "schema.sql").read_text())
        conn.execute((app / "load.sql").read_text())
        conn.execute(f"CREATE ROLE ro LOGIN PASSWORD '{PW}' IN ROLE pg_read_all_stats, pg_monitor")
        conn.execute(f"GRANT USAGE ON SCHEMA {name} TO ro; GRANT SELECT ON ALL TABLES IN SCHEMA {name} TO ro")
        conn.execute(f"ALTER ROLE ro SET search_path = {name}, public")
    bindir = _dump_tools()
    dump = subprocess.run([str(bindir / "pg_dump"), "-Fc", "-h", str(source.sock), "-p", str(source.port), "-U",
                           "pgknee", "pgknee"], check=True, capture_output=True, timeout=120).stdout
    # two copies: the replay's, and the application's own (its counters, a district's next order id, are its
    # own: the replay's inserts, keys of each client's own above the highest, would meet them)
    for _ in range(2):
        made.append(_cluster(base))
        subprocess.run([str(bindir / "pg_restore"), "-h", str(made[-1].sock), "-p", str(made[-1].port), "-U",
                        "pgknee", "--no-owner", "--no-privileges", "-d", "pgknee"], input=dump,
                       capture_output=True, timeout=120, check=False)
        with _conn(made[-1]) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
            conn.execute("ANALYZE")


def _capture_and_replay(app: Path, name: str, made: list[EmbeddedCluster], tmp_path: Path) -> None:
    """The application captured on its source as it runs, then its scripts and the replay in turns on the
    copies; every figure and grouping checked."""
    source, copy, own_copy = made
    cap = tmp_path / "cap"
    got: dict[str, CliResult] = {}
    watcher = threading.Thread(target=lambda: got.update(r=pgknee(
        "workload", "capture", "--dsn", f"postgresql://ro@127.0.0.1:{source.port}/pgknee", "--top", "40",
        # 20 s: in one of eight captures of 12 s the order entry's payments were taken for transactions
        # repeating their statements (grouping.counted: the samples' weighted share of a short transaction
        # type ran at half its count)
        "--observe", "20s", "--output", str(cap), env=ENV)))
    threading.Timer(4.0, watcher.start).start()
    stdout = _pgbench(source, app, APP_SECONDS)
    while not got:
        watcher.join(timeout=1.0)
    assert got["r"].code == 0, got["r"].err
    spt_app = _statements_per_transaction(app, stdout)
    dsn = f"postgresql://pgknee@127.0.0.1:{copy.port}/pgknee"
    # the application's own scripts on the copy under pgknee, as the replay runs (its samplers and log on the
    # same two CPUs), and the replay, in turns (A B A B: a drift of the shared machine weighs on both): their
    # rate and hold side by side
    scripts = ["--script" if a == "-f" else a for a in _scripts(app)]
    ratios: list[tuple[float, float]] = []  # per turn: the replay's TPS and hold over the application's
    for turn in range(1, 5):
        own = pgknee("run", "--dsn", f"postgresql://pgknee@127.0.0.1:{own_copy.port}/pgknee", "--workload",
                     "custom", *scripts, "--clients", str(CLIENTS),
                     "--duration", "6s", "--store", str(tmp_path / f"a{turn}.db"), "--no-waits", env=ENV)
        assert own.code == 0, own.err
        store = tmp_path / f"r{turn}.db"
        r = pgknee("run", "--dsn", dsn, "--workload", str(cap), "--allow-writes", "--clients", str(CLIENTS),
                   "--duration", "6s", "--store", str(store), "--no-waits", env=ENV)
        assert r.code == 0, r.err
        assert ", 0 failed" in r.err, r.err  # no insert collided, no foreign key broke, no deadlock
        (tps_app, hold_app), (tps_replay, hold_replay) = _rate_and_hold(tmp_path / f"a{turn}.db"), \
            _rate_and_hold(store)
        ratios.append((tps_replay / tps_app, hold_replay / hold_app))
        # two turns, and two more when their median is outside the bounds below: one 6 s run of the
        # application differs from the next by up to 15% here (549 against 444 TPS in one CI run)
        if turn >= 2 and _within(ratios) or turn == 4:
            break
    covered = re.search(r"the replay covers (\d+)% of the application's database time", r.err)
    assert covered and int(covered.group(1)) >= 90, r.err
    mix = pgknee("workload", "mix", "last", "--store", str(store))
    row = next(ln for ln in mix.out.splitlines() if ln.strip().startswith("c8 rep 1"))
    spt_replay = float(row.split()[7])
    manifest = tomllib.loads((cap / "workload.toml").read_text())
    groups = [s for s in manifest["scripts"] if s["name"].startswith("t")]
    print(f"{name}: {row.strip()} | the application's statements per transaction {spt_app:.2f} | "
          f"{len(groups)} transaction scripts | the replay's TPS against the application's, turn by turn: "
          f"{', '.join(f'{t - 1:+.0%}' for t, _ in ratios)}; "
          f"its hold: {', '.join(f'{h - 1:+.0%}' for _, h in ratios)}")
    text = {st["id"]: " ".join(st["query"].split()) for st in manifest["statements"]}

    def holding(*needles: str) -> list[tuple[str, ...]]:
        """The transaction scripts holding a statement with each text, one per needle."""
        return [tuple(g["statements"]) for n in needles for g in groups
                if any(n in text[sid] for sid in g["statements"])]

    # every transaction type grouped as the application runs it: its statements in one script,
    # two types never in one (issue 39; the short ones by how their calls moved)
    types: list[tuple[str, ...]] = {
        "orderentry": [("INSERT INTO orderentry.order_line", "d_next_o_id = d_next_o_id +"),
                       ("w_ytd = w_ytd +", "INSERT INTO orderentry.history"),
                       ("DELETE FROM orderentry.new_order", "ol_delivery_d = now()"),
                       ("COUNT(DISTINCT (s_i_id))", "SELECT d_next_o_id FROM"),
                       ("o_carrier_id, o_entry_d FROM", "ol_amount, ol_delivery_d FROM")],
        "social": [("social.followers WHERE f1", "social.user_profiles"),
                   ("social.follows WHERE f1", "social.tweets WHERE uid IN")],
        "voter": [("voter.contestants", "COUNT(*) AS num_votes", "voter.area_code_state")]}[name]
    found = [holding(*needles) for needles in types]
    assert all(len(f) == len(n) and len(set(f)) == 1 for f, n in zip(found, types, strict=True)), found
    assert len({f[0] for f in found}) == len(types), found  # each its own
    # every statement of the application scripted (the tweet INSERT into a table empty when analysed draws
    # its user from the column its foreign key references)
    assert not [sk["query"] for sk in manifest.get("skipped", []) if f"{name}." in sk["query"]], manifest["skipped"]
    # the arms of a choice under one draw: a vote inserted one way or the other; a payment's customer by name or
    # by id, and updated plainly or for a bad credit
    arms = {"orderentry": ("w_ytd = w_ytd +", 1), "voter": ("voter.contestants", 1)}.get(name)
    if arms:
        (script,) = [g["file"] for g in groups if any(arms[0] in text[sid] for sid in g["statements"])]
        assert (cap / script).read_text().count("\\elif") >= arms[1], (cap / script).read_text()[:3000]
    # each statement's share of the replay's time within its tolerance of the capture's (workload mix's own
    # column; the statements of one parse tree as one row, the vote's two INSERT arms `s01+s03`), but where a
    # known cause says otherwise: the order entry's payment meets on the warehouse row more often
    # (docs/workload.md). The social network's timeline, drawn by its tweets' authors and not by its users,
    # took 30% of the replay's time against 7.5% (workloads/captured/picks.py)
    outside = [text[ln.split()[0].split("+")[0]] for ln in mix.out.splitlines()
               if re.match(r"\s+s\d+(\+s\d+)*\s", ln) and ln.split()[-1] == "NO"]
    known = {"orderentry": ("UPDATE orderentry.warehouse",)}.get(name, ())
    assert not [q for q in outside if not q.startswith(known)], mix.out
    # statements per transaction within 15% of the application's (pgbench's own count, above)
    assert abs(spt_replay - spt_app) <= 0.15 * spt_app, (row, spt_app)
    # the rate within 20% of the application's and the hold within 15% (issue 39's targets), each widened by
    # what two runs of the same scripts differ by on this machine (up to 10%, and 21% once for a hold; beside
    # another test, one after the other, the order entry's replay ran at 163 TPS against 254, -36%)
    assert _within(ratios), ratios


def _within(ratios: list[tuple[float, float]]) -> bool:
    """The median of the turns' ratios (replay over application) of both rate and hold within 30%."""
    return all(abs(statistics.median(r[i] for r in ratios) - 1) <= 0.30 for i in (0, 1))


def _rate_and_hold(store: Path) -> tuple[float, float]:
    """A run's one step: its TPS and its hold ((active_time + idle_in_transaction_time) per
    transaction, from pg_stat_database's change over the step)."""
    ((step_id, tps, n),) = sql(store, "SELECT step_id, tps, transactions FROM steps WHERE status = 'completed'")
    d = {str(k): float(str(v)) for k, v in sql(store, "SELECT name, delta FROM step_pg_stat_database WHERE step_id = ?",
                                               step_id)}
    return float(str(tps)), (d["active_time"] + d["idle_in_transaction_time"]) / float(str(n))
