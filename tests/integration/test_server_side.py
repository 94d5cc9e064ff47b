"""The server's side of each step on a real server: pg_stat_wal and the checkpoint counters per
step (pg_stat_io where the server has it), shown beside the TPS, and a CHECKPOINT forced in the
middle of one step flagged on that step and not on its neighbours."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest

from pgknee.base.clock import polling
from pgknee.collect.protocol import StepProcesses
from pgknee.targets.local import EmbeddedCluster

from .conftest import QUICK, SCALE, own_cluster, pgknee, pgknee_popen, sql, superuser, wait_for


@dataclass
class Session:
    """The statistics session the server's collectors read on (collect.protocol.Session)."""

    conn: Any


@pytest.fixture
def quiet_server() -> Iterator[EmbeddedCluster]:
    """A server of the test's own with no timed checkpoint in sight (checkpoint_timeout 1 h, WAL
    room to match): every checkpoint in the run is the one the test asks for."""
    with own_cluster("ckpt", {"checkpoint_timeout": "1h", "max_wal_size": "4GB"}) as c:
        yield c


def _bench_started(store: Path, seq: int) -> bool:
    """The step `seq` has begun its measured pgbench (its 'bench' command is recorded)."""
    if not store.exists():
        return False
    with contextlib.suppress(sqlite3.Error):
        return bool(sql(store, "SELECT 1 FROM run_commands c JOIN steps s ON s.step_id = c.step_id "
                               "WHERE s.seq = ? AND c.purpose = 'bench'", seq))
    return False


@pytest.mark.slow  # three 8 s repetitions and a forced checkpoint: 30 s (make slow)
def test_a_checkpoint_in_the_middle_of_one_step_is_flagged_there_only(quiet_server: EmbeddedCluster,
                                                                       tmp_path: Path) -> None:
    store = tmp_path / "ckpt.db"
    run = pgknee_popen("run", "--dsn", f"postgresql://pgknee@127.0.0.1:{quiet_server.port}/pgknee",
                       "--clients", "4", "--reps", "3", "--duration", "8s", "--scale", SCALE, "--quiet",
                       "--store", str(store), *QUICK, env={"PGPASSWORD": quiet_server.password}, cwd=tmp_path)
    try:
        assert wait_for(lambda: _bench_started(store, 2), timeout=120), "step 2 never began"
        time.sleep(3.5)  # the middle of its 8 s
        with superuser(quiet_server) as conn:
            conn.execute("CHECKPOINT")
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 0, err
    ckpt = {int(seq): (int(req), int(timed), int(buffers)) for seq, req, timed, buffers in sql(
        store, "SELECT s.seq, c.requested, c.timed, c.buffers_written FROM step_checkpoints c "
               "JOIN steps s USING (step_id) ORDER BY s.seq")}
    assert ckpt[2][0] == 1 and ckpt[2][2] > 0, ckpt  # the requested one, with the pages it wrote
    assert ckpt[1] == (0, 0, 0) and ckpt[3] == (0, 0, 0), ckpt  # nothing in the neighbours
    wal = sql(store, "SELECT s.seq, w.records, w.fpi, w.bytes, s.transactions FROM step_wal w "
                     "JOIN steps s USING (step_id) ORDER BY s.seq")
    assert len(wal) == 3 and all(int(r) > int(t) > 0 and float(b) > 0 for _, r, _, b, t in wal), wal
    fpi = {int(seq): int(f) for seq, _, f, _, _ in wal}
    # the burst of first changes to each page after the checkpoint lands on step 2, not on step 3
    # (step 1 has some too: the first changes after the CHECKPOINT that follows seeding). Measured:
    # (160, 918, 5) and, in a fresh clone's make test beside its load, (164, 491, 2)
    assert fpi[2] > fpi[1] and fpi[2] > 10 * max(fpi[3], 1), fpi

    shown = pgknee("show", "last", "--store", str(store), "--json", "-")
    assert shown.code == 0, shown.err
    doc = json.loads(shown.out[shown.out.index("{"):])
    status = {s["seq"]: {c["name"]: c["status"] for c in _checks(doc, s)} for s in doc["steps"]}
    assert [status[i]["checkpoint"] for i in (1, 2, 3)] == ["ok", "warn", "ok"], status
    detail = next(c["detail"] for g in doc["summary"] for rep, c in _rep_checks(g) if c["name"] == "checkpoint"
                  and c["status"] == "warn")
    assert "1 requested checkpoint ended during the step" in detail, detail
    steps = {s["seq"]: s for s in doc["steps"]}
    assert steps[2]["server_side"]["checkpoints"]["requested"] == 1
    assert steps[1]["server_side"]["wal"]["bytes"] > 0
    side = doc["summary"][0]["server_side"]
    per_txn = side["wal_bytes_per_txn"]["median"]
    assert 100 < per_txn < 5000, side  # the e-wallet's few rows per transaction
    text = pgknee("show", "last", "--store", str(store), "--no-waits").out
    assert "WAL bytes per transaction" in text and "Checkpoints ended (all reps)" in text


def _checks(doc: dict[str, object], step: dict[str, object]) -> list[dict[str, str]]:
    """A step's checks, from its client count's summary (the JSON keeps checks per repetition)."""
    for g in doc["summary"]:  # type: ignore[attr-defined]
        if g["variant"] == step["variant"] and g["clients"] == step["clients"]:
            return [c for rep, c in _rep_checks(g) if rep == step["rep"]]
    return []


def _rep_checks(g: dict[str, object]) -> list[tuple[int, dict[str, str]]]:
    return [(int(c["rep"]), c) for c in g["checks"]]  # type: ignore[attr-defined]


def test_the_collectors_say_what_the_server_cannot_serve(server: EmbeddedCluster, tmp_path: Path) -> None:
    """On this server's version: the environment says which collectors ran and why not the others."""
    store = tmp_path / "s.db"
    r = pgknee("run", "--dsn", f"postgresql://pgknee@127.0.0.1:{server.port}/pgknee", "--clients", "2",
               "--duration", "2s", "--scale", SCALE, "--quiet", "--schema", "pgknee_side", "--store", str(store),
               *QUICK, env={"PGPASSWORD": server.password}, cwd=tmp_path)
    assert r.code == 0, r.err
    env = dict(sql(store, "SELECT key, value FROM run_environment WHERE key LIKE 'collect.server.%'"))
    version = int(dict(sql(store, "SELECT key, value FROM run_environment WHERE key = 'server.version_num'"))
                  ["server.version_num"])
    assert env["collect.server.pg_stat_wal"] == "on" and env["collect.server.checkpoints"] == "on"
    if version >= 160000:
        assert env["collect.server.pg_stat_io"] == "on"
        assert sql(store, "SELECT count(*) FROM step_io WHERE backend_type = 'client backend'")[0][0] > 0
    else:
        assert env["collect.server.pg_stat_io"] == f"off: PostgreSQL {version // 10000} has no pg_stat_io (16+)"


def test_a_reset_between_the_two_reads_gives_no_record_not_a_negative_one(quiet_server: EmbeddedCluster) -> None:
    """pg_stat_reset_shared() by a DBA during a step: the counters go back, and the step gets no
    record of that view rather than a negative one; the next step is measured again."""
    from pgknee.collect.serverstats import CheckpointCollector, IoCollector, WalCollector

    with superuser(quiet_server) as conn:
        version = int(conn.execute("SHOW server_version_num").fetchone()[0])  # type: ignore[index]
        session = Session(conn)
        wal, ckpt = WalCollector(session, version), CheckpointCollector(session, version)
        collectors = [wal, ckpt] + ([IoCollector(session, version)] if version >= 160000 else [])
        conn.execute("CREATE TABLE churn (id int)")
        conn.execute("INSERT INTO churn SELECT generate_series(1, 20000)")
        # reported before the first read (CHECKPOINT returns before the checkpointer reports it: a
        # first read of requested=0 that the reset leaves at 0 made a record of zeros, on 15 once)
        _checkpoint(conn)
        for c in collectors:
            c.begin_step(StepProcesses(1))
            c.set_phase("bench")
        _write(conn)
        conn.execute("SELECT pg_stat_reset_shared('wal')")
        conn.execute("SELECT pg_stat_reset_shared(%s)", ("checkpointer" if version >= 170000 else "bgwriter",))
        for c in collectors:
            c.settled()
        assert wal.end_step() == ()
        assert ckpt.end_step() == ()
        for c in collectors:  # the next step: measured as usual
            c.begin_step(StepProcesses(2))
            c.set_phase("bench")
        _write(conn)
        _checkpoint(conn)
        for c in collectors:
            c.settled()
        (w,) = wal.end_step()
        (k,) = ckpt.end_step()
        assert w.records > 1000 and w.bytes > 0 and k.requested == 1 and k.buffers_written > 0, (w, k)


def _checkpoint(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """CHECKPOINT, then wait for the checkpointer to be back at its main wait: the command returns
    when the checkpoint is durable, a moment before the checkpointer reports its statistics (a
    PostgreSQL 17 matrix run read requested=0 with the checkpointer still busy)."""
    conn.execute("CHECKPOINT")
    for _ in polling(10.0, 0.05):
        if not conn.execute("SELECT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'checkpointer'"
                            " AND wait_event IS DISTINCT FROM 'CheckpointerMain')").fetchone()[0]:  # type: ignore[index]
            return
    raise AssertionError("the checkpointer was still busy 10 s after CHECKPOINT returned")


def _write(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    """1,000 rows, this session's statistics flushed before the next statement (a backend reports
    them at most once a second by itself)."""
    conn.execute("INSERT INTO churn SELECT generate_series(1, 1000)")
    conn.execute("SELECT pg_stat_force_next_flush()")
