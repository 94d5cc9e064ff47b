from __future__ import annotations

import math
import os
import stat
from pathlib import Path

import numpy as np
import pytest
from builders import DATA

from pgknee.base.errors import DriverError, UserError
from pgknee.driver.histogram import RELATIVE_ERROR
from pgknee.driver.measure import measure, read_transaction_logs
from pgknee.driver.pgbench import (
    PgbenchRun,
    error_cause,
    find_pgbench,
    log_files,
    parse_progress_line,
    parse_summary,
    pgbench_version,
)
from pgknee.model.results import PgbenchSummary, ProgressPoint
from pgknee.workloads.base import Script

LOG_DIR = DATA / "pgbench_log"
LOGS = [LOG_DIR / "log.4242", LOG_DIR / "log.4242.1"]
SCRIPTS = (Script("transfer", Path("/w/transfer.sql"), 60), Script("balance", Path("/w/balance.sql"), 25),
           Script("history", Path("/w/history.sql"), 15))

# ---- progress lines -------------------------------------------------------------------------------


def test_progress_line_pg15() -> None:
    p = parse_progress_line("progress: 1.0 s, 3485.0 tps, lat 2.111 ms stddev 1.743, 0 failed, 0 retried, 0 retries")
    assert p == ProgressPoint(t_s=1.0, tps=3485.0, lat_ms=2.111, stddev_ms=1.743, failed=0)


def test_progress_line_pg15_with_failures_and_trailing_newline() -> None:
    p = parse_progress_line("progress: 12.0 s, 10.5 tps, lat 95.000 ms stddev 3.000, 7 failed, 2 retried, 3 retries\n")
    assert p is not None
    assert (p.t_s, p.tps, p.lat_ms, p.stddev_ms, p.failed) == (12.0, 10.5, 95.0, 3.0, 7)


def test_progress_line_pg14_has_no_failed_count() -> None:
    p = parse_progress_line("progress: 5.0 s, 1200.3 tps, lat 6.656 ms stddev 2.001")
    assert p == ProgressPoint(t_s=5.0, tps=1200.3, lat_ms=6.656, stddev_ms=2.001, failed=None)


def test_progress_line_nan() -> None:
    p = parse_progress_line("progress: 3.0 s, 0.0 tps, lat NaN ms stddev NaN, 0 failed")
    assert p is not None
    assert p.tps == 0.0 and p.t_s == 3.0
    assert p.lat_ms is None and p.stddev_ms is None
    assert p.failed == 0


def test_progress_line_with_rate_lag() -> None:
    p = parse_progress_line("progress: 2.0 s, 99.0 tps, lat 1.500 ms stddev 0.500, 0 failed, lag 0.100 ms, 0 skipped")
    assert p is not None and p.lat_ms == 1.5 and p.failed == 0


@pytest.mark.parametrize("line", [
    "",
    "pgbench (15.18 (Debian 15.18-1.pgdg120+1))",
    "starting vacuum...end.",
    "pgbench: error: client 3 script 0 aborted in command 4 query 0: ERROR:  deadlock detected",
    "tps = 3580.309809 (without initial connection time)",
    "progress: soon",
    "the progress: 1.0 s, 3485.0 tps, lat 2.111 ms stddev 1.743",
])
def test_non_progress_lines(line: str) -> None:
    assert parse_progress_line(line) is None


# ---- the summary pgbench prints -------------------------------------------------------------------


def test_parse_summary_pg15() -> None:
    s = parse_summary((DATA / "pgbench_stdout_pg15.txt").read_text())
    assert s == PgbenchSummary(transactions=17745, failed=0, tps=3580.309809, lat_avg_ms=2.177,
                               conn_time_ms=52.911, duration_s=5.0)


def test_parse_summary_ignores_per_script_sections() -> None:
    text = (DATA / "pgbench_stdout_pg15.txt").read_text()
    # the per-script lines start with ' - ' and have different numbers; only the totals count
    assert " - latency average = 2.874 ms" in text and " - number of failed transactions: 0" in text
    assert parse_summary(text).lat_avg_ms == 2.177


def test_parse_summary_with_failures() -> None:
    out = ("duration: 10 s\nnumber of transactions actually processed: 500\n"
           "number of failed transactions: 12 (2.344%)\nlatency average = 20.000 ms (including failures)\n"
           "initial connection time = 3.000 ms\ntps = 50.1 (without initial connection time)\n")
    assert parse_summary(out) == PgbenchSummary(500, 12, 50.1, 20.0, 3.0, 10.0)


def test_parse_summary_of_nothing() -> None:
    assert parse_summary("") == PgbenchSummary()
    assert parse_summary("pgbench: error: connection to server failed\n") == PgbenchSummary()


# ---- the per-transaction log ----------------------------------------------------------------------


def test_read_transaction_logs_counts() -> None:
    log = read_transaction_logs(LOGS)
    # 10 usable lines: 6 successes, 3 failures, 1 skipped (not kept); blank, short and cut lines ignored
    lat = {i: t.latency for i, t in log.scripts.items()}
    assert sorted(lat) == [0, 1, 2]
    assert [(lat[i].count, lat[i].total, lat[i].min, lat[i].max) for i in range(3)] == [
        (3, 9000, 1000, 5000), (2, 8000, 2000, 6000), (1, 4000, 4000, 4000)]
    assert all(lat[0].count_at(v) == 1 for v in (1000, 3000, 5000)) and lat[0].count_at(2000) == 0
    # failures: script 0 twice (serialization, failed), script 1 once (deadlock)
    assert [(t.failed, t.retried, t.retries) for t in log.scripts.values()] == [(2, 1, 2), (1, 1, 1), (0, 0, 0)]
    assert log.failures == {"serialization": 1, "deadlock": 1, "other": 1}
    assert log.skipped == 1
    assert log.lag.count == 0 and log.think_us == 0


def test_read_transaction_logs_file_order_does_not_change_the_totals() -> None:
    a, b = read_transaction_logs(LOGS), read_transaction_logs(list(reversed(LOGS)))
    assert sorted(a.scripts) == sorted(b.scripts)
    for i, t in a.scripts.items():
        assert (t.latency.counts == b.scripts[i].latency.counts).all()
        assert (t.latency.total, t.failed, t.retried, t.retries) == (b.scripts[i].latency.total, b.scripts[i].failed,
                                                                     b.scripts[i].retried, b.scripts[i].retries)
    assert a.failures == b.failures
    assert measure(a, SCRIPTS, 2.0) == measure(b, SCRIPTS, 2.0)


def test_read_no_logs() -> None:
    log = read_transaction_logs([])
    assert log.scripts == {} and log.failures == {} and log.skipped == 0 and log.lag.count == 0


def _within_bound(got: float, values: list[float], q: float) -> bool:
    """A histogram's percentile against numpy's over the same values: within the bound."""
    exact = float(np.percentile(values, q))
    return abs(got - exact) <= RELATIVE_ERROR * exact


def test_measure_totals() -> None:
    m = measure(read_transaction_logs(LOGS), SCRIPTS, duration_s=2.0)
    assert m.transactions == 6
    assert m.failed == 3
    assert m.retried == 2  # transactions with retries > 0 (one of them failed in the end)
    assert m.retries == 3
    assert m.tps == 3.0  # successes / duration
    assert m.failures == {"serialization": 1, "deadlock": 1, "other": 1}
    lat = m.latency
    assert lat is not None
    # successes: 1 2 3 4 5 6 ms
    ok = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    assert lat.count == 6
    assert lat.mean_ms == pytest.approx(3.5)
    assert lat.stddev_ms == pytest.approx(math.sqrt(3.5))  # sample stddev: 17.5 / 5
    assert (lat.min_ms, lat.max_ms) == (1.0, 6.0)
    # from the histogram: within its bound of numpy's 3.5, 5.75 (rank 0.95 x 5 = 4.75 -> 5 + 0.75 x (6 - 5)), 5.95
    assert lat.p50_ms == pytest.approx(3.5, rel=RELATIVE_ERROR) and _within_bound(lat.p50_ms, ok, 50)
    assert lat.p95_ms == pytest.approx(5.75, rel=RELATIVE_ERROR) and _within_bound(lat.p95_ms, ok, 95)
    assert lat.p99_ms == pytest.approx(5.95, rel=RELATIVE_ERROR) and _within_bound(lat.p99_ms, ok, 99)


def test_measure_per_script() -> None:
    m = measure(read_transaction_logs(LOGS), SCRIPTS, duration_s=2.0)
    s0, s1, s2 = m.scripts
    assert [(s.script_no, s.name, s.weight) for s in m.scripts] == [(0, "transfer", 60), (1, "balance", 25),
                                                                     (2, "history", 15)]
    # transfer: 1, 3, 5 ms ok; serialization + failed
    assert (s0.transactions, s0.failed, s0.retried, s0.tps) == (3, 2, 1, 1.5)
    assert s0.latency is not None and s0.latency.mean_ms == pytest.approx(3.0)
    assert _within_bound(s0.latency.p50_ms, [1.0, 3.0, 5.0], 50)  # 3.0 exactly, within the bound
    # balance: 2, 6 ms ok; deadlock (two values: every percentile lies between min and max, exact)
    assert (s1.transactions, s1.failed, s1.retried, s1.tps) == (2, 1, 1, 1.0)
    assert s1.latency is not None and s1.latency.mean_ms == pytest.approx(4.0)
    assert s1.latency.p95_ms == pytest.approx(5.8)
    # history: 4 ms
    assert (s2.transactions, s2.failed, s2.retried, s2.tps) == (1, 0, 0, 0.5)
    assert s2.latency is not None and s2.latency.stddev_ms == 0.0 and s2.latency.p99_ms == 4.0
    assert sum(s.transactions for s in m.scripts) == m.transactions
    assert sum(s.failed for s in m.scripts) == m.failed


def test_measure_all_failed_has_no_latency(tmp_path: Path) -> None:
    (tmp_path / "log.1").write_text("0 0 serialization 0 1 0 2\n0 1 serialization 0 2 0 2\n")
    m = measure(read_transaction_logs([tmp_path / "log.1"]), SCRIPTS[:1], duration_s=10.0)
    assert (m.transactions, m.failed, m.retried, m.retries, m.tps) == (0, 2, 2, 4, 0.0)
    assert m.latency is None
    assert m.scripts[0].latency is None and m.scripts[0].failed == 2


# ---- the command line -----------------------------------------------------------------------------


def _run(version_num: int, **kw: object) -> PgbenchRun:
    args: dict[str, object] = dict(pgbench="/usr/bin/pgbench", clients=8, threads=2, duration_s=30,
                                   protocol="prepared", scripts=SCRIPTS, defines=(("scale", "1"), ("schema", "s")),
                                   log_prefix=Path("/tmp/step-1/log"), max_tries=3, version_num=version_num)
    args.update(kw)
    return PgbenchRun(**args)  # type: ignore[arg-type]


def test_argv_pg15() -> None:
    a = _run(150018).argv()
    assert a[0] == "/usr/bin/pgbench"
    for flag in ("--no-vacuum", "--client=8", "--jobs=2", "--time=30", "--protocol=prepared", "--progress=1",
                 "--log", "--log-prefix=/tmp/step-1/log", "--max-tries=3", "--failures-detailed"):
        assert flag in a
    files = [a[i + 1] for i, x in enumerate(a) if x == "--file"]
    assert files == ["/w/transfer.sql@60", "/w/balance.sql@25", "/w/history.sql@15"]
    defines = [a[i + 1] for i, x in enumerate(a) if x == "--define"]
    assert defines == ["scale=1", "schema=s"]
    assert not any(x.startswith("--sampling-rate") for x in a)


def test_argv_has_no_connection_details() -> None:
    a = _run(150018).argv()
    for bad in ("-h", "-p", "-U", "--host", "--port", "--username", "-d", "--dbname", "password", "PGPASSWORD"):
        assert not any(x == bad or x.startswith(bad + "=") for x in a), bad
    assert not any("password" in x.lower() for x in a)


@pytest.mark.parametrize(("version_num", "detailed"), [(140011, False), (149999, False), (150000, True),
                                                        (170002, True)])
def test_argv_max_tries_only_from_pg15(version_num: int, detailed: bool) -> None:
    a = _run(version_num).argv()
    assert ("--max-tries=3" in a) is detailed
    assert ("--failures-detailed" in a) is detailed


def test_argv_warmup_run_without_log_or_progress_and_with_sampling() -> None:
    a = _run(150000, log_prefix=None, progress_s=0).argv()
    assert not any(x.startswith("--log") or x.startswith("--progress") for x in a)
    b = _run(150000, log_sampling_rate=0.25).argv()
    assert "--sampling-rate=0.25" in b


def test_log_files(tmp_path: Path) -> None:
    for name in ("log.4242", "log.4242.1", "log.4242.2", "log", "logx.1", "other.4242"):
        (tmp_path / name).write_text("")
    (tmp_path / "log.d").mkdir()
    assert log_files(tmp_path / "log") == [tmp_path / "log.4242", tmp_path / "log.4242.1", tmp_path / "log.4242.2"]
    assert log_files(tmp_path / "missing") == []


# ---- finding pgbench and its version (a fake executable, no real pgbench) ------------------------


def _fake(tmp_path: Path, text: str) -> str:
    p = tmp_path / "pgbench"
    p.write_text(f"#!/bin/sh\necho '{text}'\n")
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def test_pgbench_version_from_a_fake(tmp_path: Path) -> None:
    path = _fake(tmp_path, "pgbench (PostgreSQL) 15.18 (Debian 15.18-1.pgdg120+1)")
    assert pgbench_version(path) == ("15.18 (Debian 15.18-1.pgdg120+1)", 150018)


def test_find_pgbench_explicit(tmp_path: Path) -> None:
    path = _fake(tmp_path, "x")
    assert find_pgbench(path) == path
    plain = tmp_path / "notexec"
    plain.write_text("")
    os.chmod(plain, 0o644)
    with pytest.raises(UserError, match="not an executable file"):
        find_pgbench(str(plain))
    with pytest.raises(UserError, match="not an executable file"):
        find_pgbench(str(tmp_path / "missing"))


@pytest.mark.parametrize(("text", "fragment"), [
    ("psql (PostgreSQL) 15.18", "cannot read the version"),  # not pgbench
    ("pgbench (PostgreSQL)", "cannot read the version"),
    ("pgbench (PostgreSQL) 9.6.24", "needs pgbench 11 or newer"),
])
def test_pgbench_version_refuses(tmp_path: Path, text: str, fragment: str) -> None:
    with pytest.raises(DriverError, match=fragment):
        pgbench_version(_fake(tmp_path, text))


def test_pgbench_version_of_a_missing_program(tmp_path: Path) -> None:
    with pytest.raises(DriverError, match="cannot run"):
        pgbench_version(str(tmp_path / "nope"))


def test_measure_takes_the_think_time_out_of_the_latency(tmp_path: Path) -> None:
    """pgbench counts a script's \\sleep in the transaction's time; the pause pgknee added
    (think=3ms here) comes out again while reading: successes were 4..9 ms, failures stay failures."""
    shifted = []
    for path in LOGS:
        lines = []
        for line in path.read_text().splitlines(keepends=True):
            parts = line.split(" ")
            if len(parts) >= 6 and parts[2].isdigit():
                parts[2] = str(int(parts[2]) + 3000)
            lines.append(" ".join(parts))
        shifted.append(tmp_path / path.name)
        shifted[-1].write_text("".join(lines))
    plain = measure(read_transaction_logs(LOGS), SCRIPTS, duration_s=2.0)
    net = measure(read_transaction_logs(shifted, think_us=3000), SCRIPTS, duration_s=2.0)
    assert net == plain
    assert measure(read_transaction_logs(shifted), SCRIPTS, duration_s=2.0).latency.mean_ms == pytest.approx(6.5)  # type: ignore[union-attr]


def test_with_think_time_appends_a_sleep_after_the_transaction() -> None:
    from pgknee.driver.pgbench import pipeline_form, with_think_time

    text = "\\set a random(1, 10)\nBEGIN;\nSELECT :a;\nCOMMIT;\n"
    out = with_think_time(text, 20000)
    assert out.endswith("COMMIT;\n-- pgknee: think time\n\\sleep 20000 us\n")
    # after the pipeline, not inside it: the pause is the application's, between transactions
    piped = with_think_time(pipeline_form(text, "t.sql"), 500).splitlines()
    assert piped.index("\\endpipeline") < piped.index("\\sleep 500 us")


@pytest.mark.parametrize(("script", "commits"), [
    ("BEGIN;\nUPDATE a SET x = 1\n  WHERE id = 2;\nSELECT 1; END;\n", 1.0),  # one block
    ("\\set id random(1, 10)\nSELECT 1 FROM t WHERE id = :id;\nSELECT 2; -- two autocommits\n", 2.0),
    ("\\startpipeline\nSELECT 1;\nSELECT 2;\n\\endpipeline\n", 1.0),  # one implicit transaction
    ("\\startpipeline\nBEGIN;\nSELECT 1;\nCOMMIT;\n\\endpipeline\nSELECT 3;\n", 2.0),
    ("BEGIN;\nSELECT 1;\nROLLBACK;\n", 0.0),  # counted in xact_rollback
    ("-- nothing but a comment\n\\sleep 1 ms\n", 0.0),
    ("\\set v case when :r <= 5 then 1 \\\n    when :r <= 7 then 2 \\\n    else 3 end\nSELECT :v;\n", 1.0),  # continued
])
def test_commits_per_transaction(script: str, commits: float) -> None:
    from pgknee.driver.pgbench import commits_per_transaction

    assert commits_per_transaction(script) == commits


def test_measured_window_is_pgbenchs_own() -> None:
    """5000 clients through pgbouncer: 25.3 s of connecting; pgbench's TPS counts 6030
    transactions over the 14.6 s left of its elapsed time."""
    from pgknee.driver.pgbench import window_of
    from pgknee.model.results import PgbenchSummary

    s = PgbenchSummary(transactions=6030, tps=413.087489, conn_time_ms=25328.445, duration_s=30.0)
    assert window_of(s, 30.0) == pytest.approx(14.597, abs=0.001)
    assert window_of(PgbenchSummary(duration_s=30.0, conn_time_ms=2500.0), 10.0) == 27.5
    assert window_of(PgbenchSummary(), 10.0) == 10.0


def test_the_cause_of_a_failed_pgbench_is_the_line_naming_it() -> None:
    # an agent's pgbench whose sessions a DBA terminated (PostgreSQL 15's pgbench, as uploaded)
    err = ('pgbench: error: client 1 script 0 aborted in command 10 query 0: FATAL:  terminating connection due '
           'to administrator command\nCONTEXT:  SQL statement "SELECT 1 FROM ONLY "pgknee_ewallet"."transactions" '
           'x WHERE "id" OPERATOR(pg_catalog.=) $1 FOR KEY SHARE OF x"\npgbench: error: client 0 script 0 aborted '
           'in command 8 query 0: FATAL:  terminating connection due to administrator command\n'
           'pgbench: error: Run was aborted; the above results are incomplete.\n')
    assert error_cause(err) == ("pgbench: error: client 1 script 0 aborted in command 10 query 0: FATAL:  "
                                "terminating connection due to administrator command")
    # two clients terminated at once (PostgreSQL 15's pgbench, seen in one run out of three): libpq's
    # FATAL for one of them comes first, by itself; the cause is still the client's abort naming it
    raced = ("FATAL:  terminating connection due to administrator command\n"
             "pgbench: error: client 1 script 0 aborted in command 7 query 0: FATAL:  terminating connection due to "
             "administrator command\npgbench: error: client 0 aborted in command 4 (SQL) of script 0; perhaps the "
             "backend died while processing\npgbench: error: Run was aborted; the above results are incomplete.\n")
    assert error_cause(raced) == ("pgbench: error: client 1 script 0 aborted in command 7 query 0: FATAL:  "
                                  "terminating connection due to administrator command")
    assert error_cause(raced.split("\n", 1)[1].replace("client 1 script 0 aborted in command 7 query 0: ", "")) == \
        ("pgbench: error: client 0 aborted in command 4 (SQL) of script 0; perhaps the backend died while processing "
         "(FATAL:  terminating connection due to administrator command)")
    # the other order of the race (bare pgbench 15, two clients terminated at once, 1 run in 10): no
    # client's abort names the server's message, which came alone first; the cause says both
    alone = ("FATAL:  terminating connection due to administrator command\n"
             "pgbench: error: client 0 aborted in command 7 (SQL) of script 0; perhaps the backend died while "
             "processing\npgbench: error: Run was aborted; the above results are incomplete.\n")
    assert error_cause(alone) == ("pgbench: error: client 0 aborted in command 7 (SQL) of script 0; perhaps the "
                                  "backend died while processing (FATAL:  terminating connection due to administrator "
                                  "command)")
    assert error_cause(alone.split("\n", 1)[1]) == \
        "pgbench: error: client 0 aborted in command 7 (SQL) of script 0; perhaps the backend died while processing"
    assert error_cause("FATAL:  the server's own\npgbench: error: Run was aborted; the above results are incomplete.") \
        == "FATAL:  the server's own"
    assert error_cause("pgbench: error: Run was aborted; the above results are incomplete.\n") == \
        "pgbench: error: Run was aborted; the above results are incomplete."
    assert error_cause("something else\n\n") == "something else" and error_cause("") is None
