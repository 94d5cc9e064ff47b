"""TOML plan files: every key checked, errors with file and line, flags on top."""

from __future__ import annotations

from pathlib import Path

import pytest

from pgknee.base.errors import UserError
from pgknee.plan import load_plan_file, plan_from_values

GOOD = """description = "article 000: baseline and pipeline"

[target]
keep = false

[target.settings]
shared_buffers = "256MB"

[workload]
name = "ewallet"
scale = 0.5

[sweep]
clients = [2, 4, 8]
duration = "30s"
reps = 3
summary = "best"
variants = ["normal", "pipeline"]

[collect]
sample_interval = "50ms"
"""


def _file(tmp_path: Path, text: str) -> str:
    p = tmp_path / "plan.toml"
    p.write_text(text)
    return str(p)


def test_a_plan_file_becomes_a_plan(tmp_path: Path) -> None:
    src = load_plan_file(_file(tmp_path, GOOD))
    plan = plan_from_values({}, src)
    assert plan.clients == (2, 4, 8) and plan.duration_s == 30 and plan.reps == 3 and plan.summary == "best"
    assert [v.name for v in plan.variants] == ["normal", "pipeline"] and plan.variants[1].pipeline
    assert plan.target.settings == (("shared_buffers", "256MB"),)
    assert plan.workload.scale == 0.5 and plan.sample_interval_s == 0.05
    assert src.lines["duration"] == 15 and src.lines["settings"] == 6


def test_flags_win_over_the_file(tmp_path: Path) -> None:
    plan = plan_from_values({"clients": "16", "reps": 1}, load_plan_file(_file(tmp_path, GOOD)))
    assert plan.clients == (16,) and plan.reps == 1 and plan.duration_s == 30


@pytest.mark.parametrize(("text", "words"), [
    ("[sweep]\nclients = [2]\ndurations = '3s'\n", "plan.toml:3: unknown key 'durations' in [sweep]"),
    ("[sweeps]\nreps = 1\n", "plan.toml:1: unknown section [sweeps]"),
    ("[sweep]\nreps = 'three'\n", "plan.toml:2: [sweep] reps must be a whole number"),
    ("[target]\nkeep = 'yes'\n", "plan.toml:2: [target] keep must be a bool"),
    ("[sweep]\n\nclients = '2,x'\n", "plan.toml:3: client count 'x'"),
    ("[sweep]\nduration = '0s'\n", "plan.toml:2: duration must be greater than zero"),
    ("[sweep]\nvariants = ['pipeline:simple']\n", "plan.toml:2: variant 'pipeline:simple'"),
    ("[workload]\nname = 'tpcc'\n", "unknown workload 'tpcc'"),
    ("[sweep\n", "not valid TOML"),
])
def test_bad_plan_files_name_the_key_and_line(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(UserError) as e:
        plan_from_values({}, load_plan_file(_file(tmp_path, text)))
    assert words in e.value.one_line()


def test_missing_plan_file(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot read the plan"):
        load_plan_file(str(tmp_path / "none.toml"))


@pytest.mark.parametrize(("dsn_toml", "kept"), [
    ('"postgresql://app:hunter2@db/x"', True),  # a URI: redacted in place
    ('"host=db user=app password=hunter2"', True),  # a keyword: redacted in place
    ('"host=db user=app password=hunt\\u0065r2"', True),  # an escape, behind password=: redacted in place
    ('"""postgresql://app:\\\n    hunter2@db/x"""', False),  # a line continuation, likewise
])
def test_a_password_in_a_plan_file_never_travels_with_the_run(tmp_path: Path, dsn_toml: str, kept: bool) -> None:
    from pgknee.cli.run_plan import plan_file_env as _plan_file_env

    f = tmp_path / "p.toml"
    f.write_text(f"[target]\ndsn = {dsn_toml}\n\n[sweep]\nclients = [2, 4]\n")
    env = _plan_file_env(load_plan_file(str(f)))
    import tomllib

    text = env["plan.source"]
    assert "hunter2" not in text and "hunter2" not in str(tomllib.loads(text) if kept else text)
    assert ("clients = [2, 4]" in env["plan.source"]) is kept


def test_abbreviated_options_are_refused_so_a_dsn_cannot_slip_past_redaction() -> None:
    from pgknee.cli.run_plan import redacted_argv as _redacted_argv

    assert _redacted_argv(["run", "--ds=postgresql://u:pw@h/db", "x password=pw"]) == [
        "run", "--ds=postgresql://u:***@h/db", "x password=***"]
    from pgknee import cli

    assert cli.main(["run", "--ds", "postgresql://u:pw@h/db", "--dry-run"]) == 2
