"""--json - on every command that writes JSON: the JSON alone on standard output (a pipe can
read it), the tables on standard error."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path

import pytest

from pgknee import cli

GOLDEN_SQL = Path(__file__).resolve().parent.parent / "data" / "golden.sql"


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    path = tmp_path_factory.mktemp("json") / "golden.db"
    with contextlib.closing(sqlite3.connect(path)) as g:
        g.executescript(GOLDEN_SQL.read_text())
        a, b = (r[0] for r in g.execute("SELECT run_id FROM runs ORDER BY created_at"))
    return path, a, b


@pytest.mark.parametrize(("argv", "key"), [
    (["runs"], "runs"),
    (["show", "A"], "steps"),
    (["waits", "A"], "profiles"),
    (["compare", "A"], "rows"),
    (["compare", "A", "B"], "rows"),
    (["recommend", "A"], "recommendations"),
])
def test_json_to_standard_output_and_tables_to_standard_error(
        golden: tuple[Path, str, str], capsys: pytest.CaptureFixture[str], argv: list[str], key: str) -> None:
    path, a, b = golden
    argv = [{"A": a, "B": b}.get(x, x) for x in argv]
    rc = cli.main([*argv, "--store", str(path), "--json", "-"])
    out, err = capsys.readouterr()
    doc = json.loads(out)  # nothing else on standard output
    assert rc == 0 and doc["format_version"] == 2 and doc[key] and err.strip()


def test_runs_and_waits_json_hold_the_stored_figures(golden: tuple[Path, str, str],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path, a, b = golden
    cli.main(["runs", "--store", str(path), "--json", "-"])
    runs = json.loads(capsys.readouterr()[0])["runs"]
    with contextlib.closing(sqlite3.connect(path)) as g:
        done = dict(g.execute("SELECT run_id, count(*) FROM steps WHERE status = 'completed' GROUP BY run_id"))
        snaps = g.execute("SELECT count(*) FROM snapshots s JOIN steps t USING (step_id) WHERE t.run_id = ? AND "
                          "t.clients = 4 AND t.variant = 'direct' AND s._phase = 'bench'", (a,)).fetchone()[0]
    assert [(r["run_id"], r["steps_completed"]) for r in runs] == [(a, done[a]), (b, done[b])]
    cli.main(["waits", a, "--clients", "4", "--variant", "direct", "--store", str(path), "--json", "-"])
    (profile,) = json.loads(capsys.readouterr()[0])["profiles"]
    assert (profile["variant"], profile["clients"], profile["steps"], profile["snapshots"]) == ("direct", 4, 2, snaps)
    assert profile["total_aas"] == pytest.approx(sum(e["aas"] for e in profile["events"]))
