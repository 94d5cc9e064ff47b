"""Bad input to the pgknee command, in-process: one line on stderr, a non-zero exit code, no
traceback, and nothing started. Whatever pgknee starts (its preflight pgbench, a cluster, a
pgbouncer, a run) first makes a private directory under TMPDIR: here TMPDIR is a file, so a bad
input that slipped through fails there, at once and with another message than the one expected,
instead of starting a server."""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import pytest

from pgknee import cli
from pgknee.base.errors import TargetError, from_exception
from pgknee.plan import Plan
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
                                     "report", "store"])
def test_every_subcommand_has_working_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """argparse formats help with %: a bare % in a help text breaks --help (it did: '10% unless')."""
    with pytest.raises(SystemExit) as exit_info:
        cli.main([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: pgknee {command}"), out
    # every command that reads or writes a store says so; 'scenarios' has none, and 'store' has
    # it on each of its own subcommands
    assert ("--store" in out) is (command not in ("scenarios", "store")), out


# ---- exceptions from below the error tree, each really caused: one line, the tree's exit code --------


def _store_with_a_run(path: Path) -> None:
    s = Store(path)
    w = RunWriter(s, "20250101-000000-abcd")
    w.create_run(workload="ewallet", target_kind="embedded", target_label="x",
                 plan=Plan(clients=(2,), duration_s=10).to_dict(), steps_planned=1)
    w.finish_run("completed", None)
    s.close()


@pytest.mark.parametrize("argv", [["runs"], ["show", "last"]])
def test_a_broken_pipe_exits_141_quietly(tmp_path: Path, argv: list[str]) -> None:
    """pgknee runs | head -1: whoever reads standard output has gone before pgknee writes."""
    store = tmp_path / "s.db"
    _store_with_a_run(store)
    p = subprocess.Popen([sys.executable, "-m", "pgknee", *argv, "--store", str(store)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env={**os.environ, "PGKNEE_STATE_DIR": str(tmp_path / "state")})
    assert p.stdout is not None
    p.stdout.close()  # the reader is gone
    _, err = p.communicate(timeout=60)
    assert (p.returncode, err) == (141, b"")  # no message, no 'Exception ignored ... BrokenPipeError'


def test_an_exception_in_a_thread_is_reported_once_by_the_main_thread(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 10)

    def runs_with_a_worker(args: object) -> int:
        t = threading.Thread(target=lambda: Store(junk, create=False), name="pgknee-worker")
        t.start()
        t.join()
        return 0

    monkeypatch.setattr("pgknee.cli.show.cmd_runs", runs_with_a_worker)
    rc, raised = _main(["runs", "--store", str(tmp_path / "s.db")])
    line = _assert_one_error_line(capsys, rc, raised)
    assert line == (f"pgknee: error: the pgknee-worker thread failed: the collector database {junk} is not a pgknee "
                    "store: it is not an SQLite file; pgknee leaves it as it is (give --store a pgknee store, or the "
                    "name of a new file)")
    assert rc == 5
    assert _main(["show", "last", "--store", str(tmp_path / "missing.db")])[0] == 5  # reported once: not again
    assert "pgknee-worker" not in capsys.readouterr().err


def test_a_plan_file_that_is_not_utf8(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "plan.toml").write_bytes(b'[sweep]\nclients = "2,4"\n# caf\xe9 au lait\n')
    rc, raised = _main(["run", "plan.toml"])
    line = _assert_one_error_line(capsys, rc, raised)
    assert line == ("pgknee: error: the plan plan.toml is not UTF-8 text (invalid continuation byte at byte 29) "
                    "(save it as UTF-8)")
    assert rc == 2


def test_an_unusable_state_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "state").write_text("a file where pgknee's state directory should be")
    monkeypatch.setenv("PGKNEE_STATE_DIR", str(tmp_path / "state"))
    rc, raised = _main(["runs", "--store", str(tmp_path / "s.db")])
    line = _assert_one_error_line(capsys, rc, raised)
    assert line == f"pgknee: error: {tmp_path / 'state'}: File exists (check the path and the device)"
    assert rc == 2


def test_a_store_locked_by_another_process(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "s.db"
    _store_with_a_run(store)
    holder = sqlite3.connect(store, isolation_level=None)
    holder.execute("PRAGMA locking_mode = EXCLUSIVE")  # readers too must wait
    holder.execute("BEGIN EXCLUSIVE")
    monkeypatch.setenv("PGKNEE_STORE_TIMEOUT", "500ms")
    try:
        for argv in (["runs"], ["run", "--clients", "2", "--duration", "1s"]):
            rc, raised = _main([*argv, "--store", str(store)])
            line = _assert_one_error_line(capsys, rc, raised)
            assert line == (f"pgknee: error: the collector database {store} is locked by another process after "
                            "waiting 0.5 s (opening it) (let the other pgknee finish ('pgknee runs' lists what runs), "
                            "or raise PGKNEE_STORE_TIMEOUT (e.g. 60s))")
            assert rc == 7
    finally:
        holder.close()


def test_a_server_error_outside_the_run_is_a_target_error() -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(psycopg.OperationalError) as ei:
        psycopg.connect(host="127.0.0.1", port=port, user="x", dbname="x", connect_timeout=3)
    err = from_exception(ei.value)
    assert isinstance(err, TargetError) and err.exit_code == 3
    assert err.message.startswith("lost the connection to the server: connection failed: ")
    assert "\n" not in err.one_line()


def test_the_store_subcommands_on_what_is_not_a_store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("{}")
    rc, raised = _main(["store", "import", "x.json"])
    assert _assert_one_error_line(capsys, rc, raised) == ("pgknee: error: x.json is not a pgknee side file (give the "
                                                          "file an error line named)")
    rc, raised = _main(["store", "upgrade", "--store", "missing.db"])
    assert _assert_one_error_line(capsys, rc, raised) == ("pgknee: error: no collector database at missing.db (point "
                                                          "--store at the right file)")
    assert rc == 5


def test_a_damaged_store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    store = tmp_path / "s.db"
    _store_with_a_run(store)
    db = sqlite3.connect(store)
    page = db.execute("PRAGMA page_size").fetchone()[0]
    root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
    db.close()
    data = bytearray(store.read_bytes())
    data[(root - 1) * page:root * page] = b"\xa5" * page  # the runs table's page, overwritten
    store.write_bytes(bytes(data))
    rc, raised = _main(["runs", "--store", str(store)])
    line = _assert_one_error_line(capsys, rc, raised)
    assert line == (f"pgknee: error: the collector database {store} is damaged or not an SQLite file: database disk "
                    "image is malformed (restore it from a copy, or give --store another file)")
    assert rc == 5


@pytest.mark.parametrize("argv", [["runs"], ["run", "--clients", "2", "--duration", "1s"]])
def test_a_store_that_is_a_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str]) -> None:
    (tmp_path / "d.db").mkdir()
    rc, raised = _main([*argv, "--store", str(tmp_path / "d.db")])
    line = _assert_one_error_line(capsys, rc, raised)
    assert line == (f"pgknee: error: cannot open the collector database {tmp_path / 'd.db'}: Is a directory (check "
                    "the path and its permissions)")
    assert rc == 5


def test_a_ctrl_c_whose_exception_was_swallowed_still_ends_the_command() -> None:
    """An import can swallow the KeyboardInterrupt of a Ctrl-C (CPython gh-82272: 'Exception ignored
    in ...', the command running on to its end and writing its output). The Ctrl-C is remembered:
    the output is not written and the command ends as interrupted."""
    import os
    import signal

    from pgknee.report.output import write_file
    from pgknee.system import proc

    before = signal.getsignal(signal.SIGINT)  # Python's own; an xdist worker ignores SIGINT
    with proc.ctrl_c_remembered():
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)  # the handler runs at the next bytecode
        except KeyboardInterrupt:
            pass  # swallowed, as importlib's bookkeeping does
        with pytest.raises(KeyboardInterrupt):
            write_file(os.devnull, b"x")
        with pytest.raises(KeyboardInterrupt):
            proc.check_ctrl_c()
    assert signal.getsignal(signal.SIGINT) is before  # the previous handler is back
    with proc.ctrl_c_remembered():
        proc.check_ctrl_c()  # a new command starts with none


@pytest.mark.parametrize(("error", "last", "line"), [
    (ValueError("first\nsecond"), False, "first"),
    (ValueError("  \n  first  \n\nsecond\n"), False, "first"),
    (ValueError("connection failed: at x failed:\n  FATAL: no such role"), True, "FATAL: no such role"),
    (ValueError(""), False, "ValueError"),  # says nothing: its type (it used to raise IndexError)
    (OSError(), True, "OSError"),
    ("", False, ""),
])
def test_an_errors_line(error: BaseException | str, last: bool, line: str) -> None:
    from pgknee.base.errors import first_line

    assert first_line(error, last=last) == line
