"""pgknee run --until-answer and --budget as flags and plan keys: the range they choose in, and
bad input refused in one line with exit code 2 before anything starts."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import pytest

from pgknee import cli
from pgknee.base.errors import UserError
from pgknee.cli.run import _answer_range
from pgknee.plan import NO_FILE, Plan, Variant, load_plan_file, plan_from_values

UNTOUCHED = "not a directory: pgknee cannot start anything here\n"


@pytest.fixture(autouse=True)
def _hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for var in ("PGKNEE_STORE", "PGKNEE_DSN", "PGKNEE_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    nowhere = tmp_path / "TMPDIR"
    nowhere.write_text(UNTOUCHED)  # whatever pgknee starts first makes a directory there: it cannot
    monkeypatch.setenv("TMPDIR", str(nowhere))
    monkeypatch.setattr(tempfile, "tempdir", str(nowhere))


@pytest.mark.parametrize(("argv", "line"), [
    (["--until-answer", "--budget", "soon"],
     "--budget 'soon' is not a duration (write it with its unit, like 30s, 3m or 500ms)"),
    (["--budget", "5m"], "--budget bounds an adaptive sweep (add --until-answer, or drop --budget)"),
    (["--until-answer", "--budget", "0"], "--budget must be greater than zero"),
    (["--until-answer", "--clients", "2,4,8"],
     "--until-answer chooses the client counts itself, and --clients 2,4,8 fixes them (give the range it may "
     "use: --clients 1:16:1, or the largest count: --clients 16)"),
    (["--until-answer", "--clients", "2"], "--until-answer needs at least three client counts to choose from, "
                                           "got 1..2"),
    (["--until-answer", "--variant", "normal", "--variant", "pipeline"],
     "--until-answer looks for one variant's answer, and this plan has 2 (run each variant with --until-answer "
     "on its own, then pgknee compare RUN_A RUN_B)"),
    (["--until-answer", "--variant", "rate=100"], "an open-loop variant (rate=) has none"),
    (["--extend", "last", "--until-answer"], "drop --until-answer"),
])
def test_bad_input_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str],
                                          line: str) -> None:
    rc = cli.main(["run", *argv, "--store", str(tmp_path / "s.db")])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and "Traceback" not in err
    assert len(err.splitlines()) == 1 and err.startswith("pgknee: error: ") and line in err, err
    assert (tmp_path / "TMPDIR").read_text() == UNTOUCHED  # nothing started
    assert not (tmp_path / "s.db").exists()


def _args(clients: str | None) -> argparse.Namespace:
    return argparse.Namespace(clients=clients)


def test_the_range_is_1_to_4x_the_cpus_or_the_clients_bound_and_the_plan_starts_coarse() -> None:
    plan = Plan(until_answer=True, budget_s=600.0)
    cpus = os.cpu_count() or 1
    assert _answer_range(_args(None), plan, NO_FILE).clients[-1] == 4 * cpus
    assert _answer_range(_args(None), plan, NO_FILE).clients[:2] == (1, 2)
    assert _answer_range(_args("12"), plan, NO_FILE).clients == (1, 2, 4, 8, 12)
    assert _answer_range(_args("3:40:1"), plan, NO_FILE).clients == (3, 6, 12, 24, 40)
    assert _answer_range(_args("2:64:x2"), plan, NO_FILE).clients == (2, 4, 8, 16, 32, 64)


def test_a_plan_file_says_until_answer_and_budget(tmp_path: Path) -> None:
    f = tmp_path / "plan.toml"
    f.write_text('[sweep]\nuntil_answer = true\nbudget = "20m"\nclients = "1:8:1"\n')
    source = load_plan_file(str(f))
    plan = plan_from_values({}, source)
    assert plan.until_answer and plan.budget_s == 1200.0
    assert _answer_range(_args(None), plan, source).clients == (1, 2, 4, 8)
    assert plan.to_dict()["until_answer"] is True and plan.to_dict()["budget_s"] == 1200.0
    f.write_text('[sweep]\nbudget = "soon"\nuntil_answer = true\n')
    with pytest.raises(UserError, match="budget 'soon' is not a duration"):
        plan_from_values({}, load_plan_file(str(f)))
    with pytest.raises(UserError, match="one variant's answer"):
        Plan(until_answer=True, variants=(Variant(name="a"), Variant(name="b")))
