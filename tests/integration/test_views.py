"""The read commands (runs, show, waits) on a stored run: a copy of the golden store, made by real
runs (scripts/make_golden.py), so that no server is needed here."""

from __future__ import annotations

import json
import os
from pathlib import Path

from .conftest import golden_runs, pgknee, sql


def test_runs_lists_every_run_with_its_steps(golden: Path) -> None:
    a, b = golden_runs(golden)
    runs = pgknee("runs", "--store", str(golden))
    assert runs.code == 0, runs.err
    for run_id in (a, b):
        planned, done = sql(golden, "SELECT steps_planned, (SELECT count(*) FROM steps s WHERE s.run_id = r.run_id "
                                    "AND status = 'completed') FROM runs r WHERE run_id = ?", run_id)[0]
        line = next(ln for ln in runs.out.splitlines() if run_id in ln)
        assert f"{done}/{planned}" in line and "completed" in line, line


def test_waits_by_client_count_and_its_refusals(golden: Path) -> None:
    a, b = golden_runs(golden)
    variants = [v for (v,) in sql(golden, "SELECT DISTINCT variant FROM steps WHERE run_id = ? ORDER BY seq", a)]
    reps = sql(golden, "SELECT max(rep) FROM steps WHERE run_id = ?", a)[0][0]
    shared = len(os.path.commonprefix([a, b]))
    both = pgknee("waits", a[:shared], "--store", str(golden))
    assert both.code == 5 and "matches 2 runs" in both.err, both.err
    w = pgknee("waits", a[:shared + 1], "--phase", "bench", "--clients", "4", "--store", str(golden))  # a prefix
    assert w.code == 0, w.err
    for v in variants:  # one profile per variant at that count, over its repetitions
        assert f"c4 {v} ({reps} step(s))" in w.out, (v, w.out)
    assert "c2 " not in w.out and "running" in w.out
    counts = ", ".join(str(c) for (c,) in sql(golden, "SELECT DISTINCT clients FROM steps WHERE run_id = ? "
                                                     "ORDER BY clients", a))
    bad = pgknee("waits", a, "--clients", "7", "--store", str(golden))
    assert bad.code == 2 and f"client counts in this run: {counts}" in bad.err, bad.err
    bad = pgknee("waits", a, "--phase", "nope", "--store", str(golden))
    assert bad.code == 2 and bad.err.count("\n") == 1


def test_show_json_is_the_stored_run(golden: Path, tmp_path: Path) -> None:
    a, b = golden_runs(golden)
    r = pgknee("show", a, "--store", str(golden), "--json", str(tmp_path / "a.json"))
    assert r.code == 0, r.err
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["run_id"] == a and doc["status"] == "completed"
    stored = sql(golden, "SELECT clients, rep, variant, transactions FROM steps WHERE run_id = ? ORDER BY seq", a)
    assert [(s["clients"], s["rep"], s["variant"], s["transactions"]) for s in doc["steps"]] == stored
    assert "Data Summary" in r.out and "Variants side by side" in r.out
    last = pgknee("show", "last", "--store", str(golden), "--json", "-")
    assert last.code == 0 and json.loads(last.out)["run_id"] == b
