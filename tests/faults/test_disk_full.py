"""The store's disk fills during a real sweep against the session's "user's server": the steps
completed before are kept, the step being written goes to a side file (not on the full disk),
the error is one line with exit code 8, and `pgknee store import` loads the side file back once
there is room, with how the run ended."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pgknee.targets.local import EmbeddedCluster

from .conftest import (
    SCALE,
    assert_nothing_left,
    dsn_of,
    fill,
    one_error_line,
    run,
    sql,
    start,
    tmp_pgknee_dirs,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.faults]


def _running_step_with_its_command(store: Path) -> bool:
    """A step completed, and the next one runs: its row and its pgbench command are written."""
    try:
        done = sql(store, "SELECT count(*) FROM steps WHERE status = 'completed'")[0][0]
        running = sql(store, "SELECT count(*) FROM steps s JOIN run_commands c ON c.step_id = s.step_id "
                             "WHERE s.status = 'running' AND c.purpose = 'bench'")[0][0]
    except Exception:
        return False
    return bool(done >= 1 and running == 1)


def test_a_full_disk_keeps_what_was_measured(server: EmbeddedCluster, tmpfs: Callable[[int], Path], tmp_path: Path,
                                             state: Path) -> None:
    fs = tmpfs(4096)
    store = fs / "s.db"
    side_dir = tmp_path / "side"  # the user's choice of where side files go when beside the store cannot be
    side_dir.mkdir()
    dirs = tmp_pgknee_dirs()
    p = start("run", "--dsn", dsn_of(server), "--clients", "2,2,2,2,2,2", "--duration", "3s", "--scale", SCALE,
              "--schema", "faults_full", "--store", str(store), state=state, cwd=tmp_path,
              PGKNEE_SIDE_DIR=str(side_dir))
    assert wait_for(lambda: _running_step_with_its_command(store) or p.poll() is not None, 180), "no step completed"
    assert p.poll() is None, p.communicate()
    filler = fill(fs)  # the disk is full while the next step measures
    out, err = p.communicate(timeout=300)
    assert p.returncode == 8, err
    line = one_error_line(err)
    m = re.fullmatch(r"pgknee: error: the collector database (\S+): its disk is full \(writing step (\d)\); "
                     r"step \2's results are kept in (\S+) \(free space on that disk, or give --store a file on "
                     r"another disk; then load them with 'pgknee store import \3'\)", line)
    assert m is not None, line
    assert m.group(1) == str(store)
    seq, side = int(m.group(2)), Path(m.group(3))
    assert side.parent == side_dir  # not on the full disk
    run_id = str(sql(store, "SELECT run_id FROM runs")[0][0])
    assert side.name == f"s.db.{run_id}.step-{seq}.json"
    kept = sql(store, "SELECT seq, status, tps FROM steps ORDER BY seq")
    assert [s for s, st, _ in kept if st == "completed"] == list(range(1, seq))  # every step before it
    assert all(tps > 0 for _, st, tps in kept if st == "completed")
    doc = json.loads(side.read_text())
    assert (doc["run_id"], doc["step"]["seq"], doc["result"]["status"]) == (run_id, seq, "completed")
    assert doc["result"]["measurement"]["transactions"] > 0
    # the run is marked with why, in the store: the room kept beside it for the run's end took it
    assert sql(store, "SELECT status, status_reason FROM runs") == [("failed", line.split("error: ", 1)[1].split(
        " (free space")[0])]
    assert "run_end" not in doc
    assert {p.name for p in fs.iterdir()} <= {"filler", "s.db", "s.db-shm", "s.db-wal"}  # no reserve left
    assert_nothing_left(state, [p.pid], dirs)

    streamed = sql(store, "SELECT count(*) FROM snapshots s JOIN steps t USING (step_id) WHERE t.seq = ?", seq)[0][0]
    filler.unlink()  # room again: the step comes back
    loaded = run("store", "import", str(side), state=state, cwd=tmp_path)
    assert loaded.code == 0, loaded.err
    assert loaded.out.splitlines()[0] == f"step {seq} (c2 rep 1) of run {run_id} stored in {store}"
    step = sql(store, "SELECT status, transactions, tps FROM steps WHERE seq = ?", seq)[0]
    assert step == ("completed", doc["result"]["measurement"]["transactions"], doc["result"]["measurement"]["tps"])
    assert sql(store, "SELECT count(*) FROM snapshots s JOIN steps t USING (step_id) WHERE t.seq = ?", seq)[0][0] \
        == streamed + len(_activity(doc)["snapshots"])  # the batches written before the disk filled stay
    assert sql(store, "SELECT status FROM runs") == [("failed",)]
    again = run("store", "import", str(side), state=state, cwd=tmp_path)
    assert again.code == 2 and f"step {seq} of run {run_id} is already in {store}" in one_error_line(again.err)
    shown = run("show", run_id, "--store", str(store), state=state, cwd=tmp_path)
    assert shown.code == 0 and f"failed  ({seq}/6 steps)" in shown.out


def _activity(doc: dict[str, Any]) -> dict[str, Any]:
    """The side file's pg_stat_activity samples (its records carry their kind)."""
    return next(r["fields"] for r in doc["result"]["records"] if r["kind"] == "ActivitySamples")
