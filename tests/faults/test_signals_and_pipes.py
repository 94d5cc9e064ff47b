"""How a read command ends when its user goes: Ctrl-C while it starts (after it opened the store,
while it loads the report's libraries), and a reader that leaves the pipe (pgknee show last |
true). One line or none, the shell's exit codes, nothing written."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pgknee.targets.local import EmbeddedCluster

from .conftest import SCALE, dsn_of, env_of, run, start, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.faults]


@pytest.fixture(scope="module")
def measured(server: EmbeddedCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("signals")
    (d / "state").mkdir(mode=0o700)
    r = run("run", "--dsn", dsn_of(server), "--clients", "2,4", "--duration", "1s", "--scale", SCALE, "--schema",
            "faults_signals", "--store", str(d / "m.db"), state=d / "state", cwd=d)
    assert r.code == 0, r.err
    return d / "m.db"


def _has_open(pid: int, path: Path) -> bool:
    try:
        return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd"))
    except OSError:
        return False


def _at_work(pid: int, store: Path) -> bool:
    """Reading the store, or past it: numpy loaded (the analysis and the charts need it). The store
    is read in a thread beside the imports and is open only briefly on a small run."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            if "_multiarray_umath" in f.read():
                return True
    except OSError:
        return False
    return _has_open(pid, store)


def _frozen_at_work(pid: int, store: Path) -> bool:
    """Stop the process and look: at work, it stays stopped (True); else it runs on. The Ctrl-C then
    comes while it is at work however late this test is scheduled on a loaded machine (a report
    of a small run takes a second or two: under load it finished before the signal came)."""
    os.kill(pid, signal.SIGSTOP)
    if not wait_for(lambda: _state(pid) in ("T", None), 5, every=0.005) or _state(pid) is None:
        return False
    if _at_work(pid, store):
        return True
    os.kill(pid, signal.SIGCONT)
    return False


def _state(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def test_ctrl_c_while_a_read_command_starts(measured: Path, tmp_path: Path, state: Path) -> None:
    out_file = tmp_path / "r.html"
    p = start("report", "last", "-o", str(out_file), "--store", str(measured), state=state, cwd=tmp_path)
    assert wait_for(lambda: p.poll() is not None or _frozen_at_work(p.pid, measured), 60, every=0.02)
    assert p.poll() is None
    p.send_signal(signal.SIGINT)  # as a terminal's Ctrl-C, while it reads, analyses or draws
    os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=60)
    assert (p.returncode, out, err.splitlines()[-1]) == (130, "", "pgknee: interrupted")
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert all(ln.endswith(" ...") for ln in err.splitlines()[:-1]), err  # its progress, then the one line
    assert not out_file.exists()
    assert list(tmp_path.glob(".r.html.*")) == []  # no half-written report either


@pytest.mark.parametrize("argv", [["runs"], ["show", "last"]])
def test_a_reader_that_leaves_the_pipe(measured: Path, tmp_path: Path, state: Path, argv: list[str]) -> None:
    """pgknee show last | true: the reader is gone before pgknee writes."""
    shell = f'"$PYTHON" -m pgknee {" ".join(argv)} --store "$STORE" | true; echo "${{PIPESTATUS[0]}}"'
    p = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
                       env={**env_of(state), "PYTHON": sys.executable, "STORE": str(measured)})
    assert (p.stdout, p.stderr) == ("141\n", "")  # pgknee's exit code; no message, no 'Exception ignored'
