from __future__ import annotations

import json
import re
from dataclasses import replace

from builders import os_sample, renew

from pgknee.analyze.run import build
from pgknee.analyze.waits import profile_of, wait_profile
from pgknee.model.results import RunData
from pgknee.model.server import DatabaseStep
from pgknee.report.jsonout import dumps, run_json
from pgknee.report.tables import MAX_WAIT_ROWS, wait_table
from pgknee.report.terminal import render, run_report


def _text(data: RunData, **kw: bool) -> str:
    return render(run_report(build(data), **kw), width=200)


def _line(text: str, label: str) -> str:
    """The table row that starts with `label` (first column)."""
    for ln in text.splitlines():
        if ln.strip().startswith(label):
            return ln
    raise AssertionError(f"no row {label!r} in:\n{text}")


def test_data_summary_best_and_percentages(run_data: RunData) -> None:
    text = _text(run_data)
    assert "Data Summary" in text
    assert "% vs baseline c2" in text
    tps = _line(text, "TPS ")
    assert re.search(r"100\.00\s+200\.00 \+100\.0%\s+▲ c8", tps), tps
    lat = _line(text, "Avg Latency (ms)")
    assert re.search(r"20\.000\s+40\.404 \+102\.0%\s+▲ c2", lat), lat  # lower latency is better
    p99 = _line(text, "p99 (ms)")
    assert re.search(r"40\.000\s+90\.000 \+125\.0%\s+▲ c2", p99), p99
    tx = _line(text, "Transactions")
    assert re.search(r"1,000\s+2,000 \+100\.0%\s+▲ c8", tx), tx
    assert re.search(r"TPS min\.\.max\s+100\.\.100\s+180\.\.220", text)
    assert re.search(r"Failed / Retried\s+0 / 0\s+0 / 0", text)


def test_baseline_column_has_no_percentage(run_data: RunData) -> None:
    tps = _line(_text(run_data), "TPS ")
    assert tps.count("%") == 1


def test_noisy_column_is_marked(run_data: RunData) -> None:
    text = _text(run_data)
    assert re.search(r"Metric\s+c2\s+c8\*\s+Best", text)


def test_wait_tables_in_the_report(run_data: RunData) -> None:
    text = _text(run_data)
    assert "total AAS 1.50" in text  # c2: (22 + 5 + 3) / 20 snapshots
    assert "total AAS 3.00" in text  # c8: 120 / 40
    # CPU running in c2: 22 occurrences / 20 snapshots = 1.10 AAS, ± 1.10 / sqrt(22) = 0.23
    assert re.search(r"CPU\s+running\s+22\s+1\.10\s+0\.23", text)
    assert re.search(r"LWLock\s+WALWrite\s+5\s+0\.25\s+0\.11", text)
    assert re.search(r"Lock\s+transactionid\s+60\s+1\.50", text)


def test_report_without_waits(run_data: RunData) -> None:
    text = _text(run_data, waits=False)
    assert "total AAS" not in text
    assert "Data Summary" in text


def test_header_checks_and_warnings(run_data: RunData) -> None:
    text = _text(run_data)
    assert "Run 20250101-000000-abcd  completed  (4/4 steps)" in text
    assert "10 s per step, 2 rep(s)" in text and "sampling every 100 ms" in text
    assert re.search(r"c8 r2\s+WARN \+10\.0%", text)
    assert re.search(r"c2 r1\s+ok \+0\.0%", text)
    assert "! c8: noisy, TPS varies 20% across 2 repetitions (180..220; threshold 10%)" in text


def test_scripts_table(run_data: RunData) -> None:
    text = _text(run_data)
    assert re.search(r"transfer \(60\)\s+26\.00 / 41\.00 / 61\.50\s+45\.00 / 65\.00 / 97\.50 \(1 failed\)", text)
    assert re.search(r"balance \(40\)\s+13\.00 / 21\.00 / 31\.50", text)


def test_system_table(run_data: RunData) -> None:
    text = _text(run_data)
    assert re.search(r"Peak CPU total %\s+80\.0\s+-", text)
    assert re.search(r"Mean CPU total %\s+63\.3", text)
    assert re.search(r"pgbench threads\s+2\s+4", text)


def test_money_check_line(run_data: RunData) -> None:
    data = replace(run_data, env={**run_data.env, "check.money": "balances add up: 1,000,000.00",
                                  "check.money.ok": "true"})
    assert "✓ balances add up: 1,000,000.00" in _text(data)
    # a run that recorded no verdict is not shown as passed, nor warned about
    unsure = replace(run_data, env={**run_data.env, "check.money": "balances not read"})
    assert "✗ balances not read" in _text(unsure)
    assert "balances not read" not in build(unsure).warnings


def test_client_cpu_check_cell_shows_its_percentage(run_data: RunData) -> None:
    # 4 threads: 95 % of their capacity
    os_ = {**{s.step_id: list(run_data.client_os(s.step_id)) for s in run_data.steps},
           3: [os_sample(client_cpu_pct=380.0)]}
    text = _text(renew(run_data, os=os_))
    row = _line(text, "c8 r1")
    assert "WARN 95%" in row


def test_wait_table_alone() -> None:
    rows = wait_profile([("CPU", "running", 100), ("IO", "DataFileRead", 25)], 50)
    text = render([wait_table("Wait profile c4", profile_of(rows, 50))], width=150)
    assert "50 snapshots" in text and "total AAS 2.50" in text
    assert re.search(r"CPU\s+running\s+100\s+2\.00\s+0\.20", text)
    assert re.search(r"IO\s+DataFileRead\s+25\s+0\.50\s+0\.10", text)


def test_wait_table_empty_and_capped() -> None:
    empty = render([wait_table("w", profile_of([], 10))], width=150)
    assert "no active sessions sampled" in empty and "total AAS 0.00" in empty
    many = wait_profile([("LWLock", f"ev{i:02d}", 100 - i) for i in range(MAX_WAIT_ROWS + 5)], 100)
    text = render([wait_table("w", profile_of(many, 100))], width=150)
    assert "5 more" in text
    assert "ev19" in text and "ev20" not in text


def test_run_json(run_data: RunData) -> None:
    doc = json.loads(dumps(run_json(build(run_data))))
    assert doc["format_version"] == 2 and doc["run_id"] == "20250101-000000-abcd"
    assert [g["clients"] for g in doc["summary"]] == [2, 8]
    assert doc["summary"][1]["tps"] == {"median": 200.0, "min": 180.0, "max": 220.0, "n": 2}
    assert doc["summary"][1]["noisy"] is True
    step1 = doc["steps"][0]
    assert step1["snapshots"] == 10
    assert [(w["wait_event"], w["aas"]) for w in step1["wait_profile"]] == [("running", 1.0), ("WALWrite", 0.5)]
    assert "c8: noisy, TPS varies 20% across 2 repetitions (180..220; threshold 10%)" in doc["warnings"]
    warned = [c for c in doc["summary"][1]["checks"] if c["status"] == "warn"]
    assert [(c["rep"], c["name"], c["value"], c["unit"]) for c in warned] == [
        (2, "tps-vs-pgbench", 10.0, "% deviation")]  # the table's figure, as a number


def test_many_client_counts_are_shown_one_row_each(run_data: RunData) -> None:
    """A linear sweep (e.g. 50:500:50) would make the article's layout too wide: transpose it."""
    from builders import step

    counts = list(range(50, 550, 50))
    steps = [step(step_id=i + 1, seq=i + 1, clients=c, tps=10.0 * c, tps_pgbench=10.0 * c, tps_db=10.0 * c,
                  lat_avg_ms=100.0) for i, c in enumerate(counts)]
    ids = [s.step_id for s in steps]
    data = renew(run_data, steps=steps, scripts={i: [] for i in ids}, failures={i: {} for i in ids},
                   pgdb={i: DatabaseStep() for i in ids}, os={i: [] for i in ids}, waits={i: [] for i in ids},
                   waits_bg={i: [] for i in ids}, snaps={i: (0, 0.0, 0.0) for i in ids})
    text = _text(data, waits=False)
    summary = text[text.index("Data Summary"):text.index("% vs baseline")]
    header = _line(summary, "Step")
    assert "TPS" in header and "p99 (ms)" in header
    assert re.search(r"c500\s+5,000\.00 \+900\.0%", _line(summary, "c500")), summary
    assert "▲ c500" in _line(summary, "Best")
    assert len([ln for ln in summary.splitlines() if re.match(r"\s+c\d+\s", ln)]) == len(counts)


def test_best_of_n_takes_the_repetition_with_the_highest_tps(run_data: RunData) -> None:
    """Article 002 reports the best of three runs: the figures of that run, labelled as such."""
    view = build(run_data, "best")
    c8 = next(g for g in view.groups if g.clients == 8)
    assert c8.tps is not None and c8.tps.value == 220.0 and (c8.tps.lo, c8.tps.hi) == (180.0, 220.0)
    assert c8.p99 is not None and c8.p99.value == 100.0  # rep 2's p99, not the median of 80 and 100
    assert c8.lat_avg is not None and abs(c8.lat_avg.value - 8000 / 220) < 1e-9
    text = render(run_report(view, waits=False), width=200)
    assert "figures are the best of the repetitions" in text
    median = build(run_data).groups[1].tps
    assert median is not None and median.value == 200.0  # the default stays the median
