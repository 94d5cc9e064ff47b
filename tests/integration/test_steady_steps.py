"""--duration auto and a sampled transaction log on the real embedded server: the step stops
itself once its TPS is steady (pgbench ended with its own timer signal, so its summary is whole),
its real length replaces the maximum in the store, and a log holding a quarter of the
transactions still gives exact counts (pgbench's summary) and latency from the logged share."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from pgknee.collect.pgstats import StatsReader
from pgknee.targets.local import EmbeddedCluster

from .conftest import SCALE, pgknee, sql

pytestmark = [pytest.mark.slow]


def test_an_auto_step_stops_once_steady_with_a_sampled_log(tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    r = pgknee("run", "--clients", "2", "--duration", "auto:90s", "--steady-target", "50%",
               "--log-sampling-rate", "0.25", "--scale", SCALE, "--store", str(store), "--no-waits", cwd=tmp_path)
    assert r.code == 0, r.err
    [(status, duration, tx, tps, tps_pgbench, exit_code)] = sql(
        store, "SELECT status, duration_s, transactions, tps, tps_pgbench, pgbench_exit FROM steps")
    assert (status, exit_code) == ("completed", 0)
    # four 5 s batches after the warm-up MSER-5 cuts (at most half the batches): 20 to 40 s, not 90
    assert 19 <= duration <= 45
    assert tps == pytest.approx(tps_pgbench, rel=1e-9)  # counts from pgbench's summary, exact
    facts = dict(sql(store, "SELECT name, value FROM step_facts"))
    assert facts["steady.stopped"] == 1.0 and facts["steady.at_s"] >= 20
    assert facts["steady.halfwidth_pct"] <= 50 and facts["steady.tps"] > 0
    assert facts["log.sampling_rate"] == 0.25
    assert 0.3 <= facts["quiet.wait_s"] < 5  # the 'pre' phase, measured: the first step waits for nothing
    assert 0.2 * tx <= facts["log.transactions"] <= 0.3 * tx
    assert "stopped once known" in r.err  # the line at the end of the step
    shown = pgknee("show", "last", "--store", str(store), cwd=tmp_path)
    assert "until steady TPS ±50%" in shown.out and "■ stopped once steady" in shown.out
    assert "Latency from (logged)" in shown.out


def test_the_pre_phase_waits_for_the_last_steps_backends_and_no_longer(server: EmbeddedCluster) -> None:
    """StatsReader.quiet: a pgbench backend still there keeps the step waiting up to --pre; once
    it is gone the wait is the 0.3 s minimum (the fixed 1 s sleep it replaces), measured."""
    connect = lambda: psycopg.connect(host=str(server.sock), port=server.port, user="pgknee",  # noqa: E731
                                      dbname="pgknee", autocommit=True)
    reader = StatsReader(connect)
    with psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="pgknee",
                         application_name="pgbench"):
        held = reader.quiet(1.0)
    assert held.backends_left == 1 and 1.0 <= held.waited_s < 1.5
    gone = reader.quiet(1.0)
    assert (gone.backends_left, gone.checkpointing) == (0, False) and 0.3 <= gone.waited_s < 0.6
    reader.conn.close()
