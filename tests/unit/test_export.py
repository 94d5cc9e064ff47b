"""pgknee export RUN --format csv|openmetrics: the stored figures, read back by a CSV reader and by
prometheus_client's OpenMetrics parser (a real parser: the format's rules, '# EOF', timestamps)."""

from __future__ import annotations

import contextlib
import csv
import io
import sqlite3
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from stored_runs import store_run

from pgknee import cli

RUN = "20270101-000000-exp0"
TPS = {2: [1000.0, 1010.0], 4: [1800.0, 1830.0]}
GOLDEN_SQL = Path(__file__).resolve().parent.parent / "data" / "golden.sql"


@pytest.fixture
def db(tmp_path: Path) -> Path:
    store_run(tmp_path / "s.db", RUN, TPS, os_rows=True)
    return tmp_path / "s.db"


def _export(capsys: pytest.CaptureFixture[str], db: Path, run: str, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(["export", run, "--store", str(db), *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_csv_one_row_per_step(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _export(capsys, db, RUN, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert rc == 0 and len(rows) == 4
    got = {(r["clients"], r["rep"]): float(r["tps"]) for r in rows}
    assert got == {("2", "1"): 1000.0, ("4", "1"): 1800.0, ("2", "2"): 1010.0, ("4", "2"): 1830.0}
    first = rows[0]
    assert first["run"] == RUN and first["variant"] == "base" and first["status"] == "completed"
    assert float(first["lat_avg_ms"]) == pytest.approx(2.0)  # Little's law: 2 clients / 1000 TPS
    assert float(first["lat_p99_ms"]) == pytest.approx(6.0) and float(first["cpu_busy_pct"]) == 50.0


def test_csv_samples_one_row_per_point_with_timestamps(db: Path, capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    out_file = tmp_path / "samples.csv"
    rc, _, err = _export(capsys, db, RUN, "--format", "csv", "--series", "samples", "-o", str(out_file))
    rows = list(csv.DictReader(io.StringIO(out_file.read_text())))
    assert rc == 0 and f"wrote {out_file}" in err
    load = [r for r in rows if r["metric"] == "os_load1"]
    assert len(load) == 4 * 3 and {r["series"] for r in load} == {"os"} and all(r["timestamp"] for r in load)
    idle = [r for r in rows if r["metric"] == "os_cpu_percent" and r["detail"] == "mode=idle"]
    assert len(idle) == 12 and {float(r["value"]) for r in idle} == {50.0}
    tps = [r for r in rows if r["metric"] == "step_tps"]
    assert sorted(float(r["value"]) for r in tps) == [1000.0, 1010.0, 1800.0, 1830.0]


def test_openmetrics_parses_with_labels_and_timestamps(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _export(capsys, db, RUN, "--format", "openmetrics")
    assert rc == 0 and out.endswith("# EOF\n")
    families = {f.name: f for f in text_string_to_metric_families(out)}
    tps = {(s.labels["clients"], s.labels["rep"]): s.value for s in families["pgknee_step_tps"].samples}
    assert tps == {("2", "1"): 1000.0, ("4", "1"): 1800.0, ("2", "2"): 1010.0, ("4", "2"): 1830.0}
    p99 = [s for s in families["pgknee_step_latency_seconds"].samples if s.labels["stat"] == "p99"]
    assert families["pgknee_step_latency_seconds"].unit == "seconds"
    assert {s.labels["run"] for s in p99} == {RUN} and min(s.value for s in p99) == pytest.approx(3 * 2 / 1010)
    load = families["pgknee_os_load1"].samples
    assert len(load) == 12 and all(s.timestamp is not None for s in load)
    assert families["pgknee_os_memory_available_bytes"].samples[0].value == 4_000_000 * 1024


def test_openmetrics_of_a_real_run_through_a_pooler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The golden store's run A (direct, pooled through pgbouncer, idle sessions): every sampled
    series the store holds is there, point for point."""
    path = tmp_path / "golden.db"
    with contextlib.closing(sqlite3.connect(path)) as g:
        g.executescript(GOLDEN_SQL.read_text())
        run = g.execute("SELECT run_id FROM runs ORDER BY created_at").fetchone()[0]
        counts = {t: g.execute(f"SELECT count(*) FROM {t} WHERE step_id IN (SELECT step_id FROM steps WHERE "
                               "run_id = ?)", (run,)).fetchone()[0]
                  for t in ("os_samples", "pooler_samples", "step_progress")}
        for t in ("os_samples", "pooler_samples"):  # the bench phase: what a run's reads give
            counts[t] = g.execute(f"SELECT count(*) FROM {t} WHERE _phase = 'bench' AND step_id IN (SELECT step_id "
                                  "FROM steps WHERE run_id = ?)", (run,)).fetchone()[0]
    rc, out, _ = _export(capsys, path, run, "--format", "openmetrics")
    families = {f.name: f for f in text_string_to_metric_families(out)}
    assert rc == 0 and counts["pooler_samples"] > 0
    assert len(families["pgknee_os_load1"].samples) == counts["os_samples"]
    assert len(families["pgknee_pooler_maxwait_seconds"].samples) == counts["pooler_samples"]
    assert len(families["pgknee_progress_tps"].samples) == counts["step_progress"]
    assert {s.labels["variant"] for s in families["pgknee_pooler_servers"].samples} == {"pooled:transaction:pool=2"}


@pytest.mark.parametrize(("argv", "line"), [
    (["--format", "csv", "--series", "all"], "a CSV file holds one table (export --series steps and --series "
                                             "samples to two files)"),
    (["--format", "openmetrics", "--series", "steps"], "OpenMetrics text holds every series of the run"),
    (["--format", "xml"], "argument --format: invalid choice: 'xml'"),
])
def test_bad_input_is_one_line_and_exit_2(db: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                          line: str) -> None:
    rc, out, err = _export(capsys, db, RUN, *argv)
    assert rc == 2 and out == "" and len(err.splitlines()) == 1 and line in err, err


def test_an_output_over_the_store_is_refused(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = db.read_bytes()
    rc, _, err = _export(capsys, db, RUN, "--format", "csv", "-o", str(db))
    assert rc == 2 and "is a SQLite database" in err and db.read_bytes() == before
