"""Bad input to the pgknee command, in-process: one line on stderr, a non-zero exit code, no
traceback, and nothing started. Whatever pgknee starts (its preflight pgbench, a cluster, a
pgbouncer, a run) first makes a private directory under TMPDIR: here TMPDIR is a file, so a bad
input that slipped through fails there, at once and with another message than the one expected,
instead of starting a server."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from pgknee import cli
from pgknee.store.db import Store
from pgknee.store.writer import RunWriter


@pytest.fixture(autouse=True)
def _hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for var in ("PGKNEE_STORE", "PGKNEE_DSN", "PGKNEE_DEBUG"):
        monkeypatch.delenv(var, raising=False)
    nowhere = tmp_path / "TMPDIR"
    nowhere.write_text(UNTOUCHED)
    monkeypatch.setenv("TMPDIR", str(nowhere))
    monkeypatch.setattr(tempfile, "tempdir", str(nowhere))  # (what tempfile answers, unchecked, once it is set)


UNTOUCHED = "not a directory: pgknee cannot start anything here\n"


def _nothing_started() -> bool:
    return Path(os.environ["TMPDIR"]).read_text() == UNTOUCHED


def _main(argv: list[str]) -> tuple[int, bool]:
    """(exit code, whether main raised SystemExit instead of returning)"""
    try:
        return cli.main(argv), False
    except SystemExit as e:
        return (e.code if isinstance(e.code, int) else 1), True


def _assert_one_error_line(capsys: pytest.CaptureFixture[str], rc: int, raised: bool, *fragments: str) -> str:
    out, err = capsys.readouterr()
    assert rc != 0
    assert not raised, "main() raised SystemExit instead of returning an exit code"
    assert "Traceback" not in err and "Traceback" not in out
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("pgknee: error: "), err
    for f in fragments:
        assert f in lines[0]
    assert out == ""
    assert _nothing_started()
    return lines[0]


@pytest.mark.parametrize(("argv", "fragment"), [
    (["run", "--clients", "a,b"], "client count 'a'"),
    (["run", "--clients", ""], "client list is empty"),
    (["run", "--clients", "2,,4"], "empty entry"),
    (["run", "--clients", "-3"], "at least 1"),
    (["run", "--clients", "8:2:1"], "backwards"),
    (["run", "--duration", "0"], "--duration must be greater than zero"),
    (["run", "--duration=-5s"], "--duration '-5s' is not a duration"),
    (["run", "--duration", "1.5s"], "whole number of seconds"),
    (["run", "--reps", "0"], "--reps must be at least 1"),
    (["run", "--set", "badsetting"], "'badsetting' must be NAME=VALUE"),
    (["run", "--set", "Bad-Name=1"], "not a PostgreSQL setting name"),
    (["run", "--sample-interval", "5ms"], "--sample-interval"),
    (["run", "--schema", "Robert'); DROP TABLE students;--"], "schema name"),
])
def test_bad_run_input(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], fragment: str) -> None:
    rc, raised = _main(argv)
    _assert_one_error_line(capsys, rc, raised, fragment)
    assert rc == 2  # UserError
    assert not (tmp_path / "pgknee.db").exists()  # failed before the store was touched


@pytest.mark.parametrize("argv", [["run", "--duration", "-5s"], ["run", "--reps", "many"]])
def test_argparse_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    rc, raised = _main(argv)
    _assert_one_error_line(capsys, rc, raised, f"pgknee run: argument {argv[1]}")
    assert rc == 2


def test_store_in_a_missing_directory(capsys: pytest.CaptureFixture[str]) -> None:
    rc, raised = _main(["run", "--clients", "2", "--duration", "1s", "--store", "/nonexistent/dir/x.db"])
    line = _assert_one_error_line(capsys, rc, raised, "/nonexistent/dir/x.db", "does not exist")
    assert rc == 5  # StoreError
    assert line.count("\n") == 0


def test_json_in_a_missing_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, raised = _main(["run", "--json", "/nonexistent/dir/out.json", "--store", str(tmp_path / "s.db")])
    _assert_one_error_line(capsys, rc, raised, "cannot write /nonexistent/dir/out.json")
    assert rc == 2
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("argv", [["show", "nope"], ["runs"], ["waits", "last"]])
def test_read_commands_on_a_missing_store(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          argv: list[str]) -> None:
    missing = tmp_path / "missing.db"
    rc, raised = _main([*argv, "--store", str(missing)])
    _assert_one_error_line(capsys, rc, raised, "no collector database at", str(missing))
    assert rc == 5
    assert not missing.exists()  # reading never creates a store


def test_show_unknown_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    s = Store(path)
    RunWriter(s, "20250101-000000-abcd").create_run(workload="ewallet", target_kind="embedded", target_label="x",
                                                    plan={}, steps_planned=1)
    s.close()
    rc, raised = _main(["show", "nope", "--store", str(path)])
    _assert_one_error_line(capsys, rc, raised, "no run 'nope'")
    assert rc == 5


def test_show_on_an_empty_store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    Store(path).close()
    rc, raised = _main(["show", "last", "--store", str(path)])
    _assert_one_error_line(capsys, rc, raised, "no runs in")


def test_waits_bad_phase(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rc, raised = _main(["waits", "last", "--phase", "bench,lunch", "--store", str(tmp_path / "missing.db")])
    _assert_one_error_line(capsys, rc, raised, "unknown phase 'lunch'")
    assert rc == 2


@pytest.mark.parametrize("command", ["run", "runs", "show", "waits", "scenarios", "compare", "recommend", "size",
                                     "report"])
def test_every_subcommand_has_working_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse formats help with %: a bare % in a help text breaks --help (it did: '10% unless')."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: pgknee {command}"), out
    # every command that reads or writes a store says so; 'scenarios' has none
    assert ("--store" in out) is (command != "scenarios"), out
