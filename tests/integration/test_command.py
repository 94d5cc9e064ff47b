"""The installed console script, in a process of its own: what a shell or a CI job sees of it,
its exit codes. (Everywhere else the command runs in-process.)"""

from __future__ import annotations

from pathlib import Path

from pgknee import __version__

from .conftest import pgknee_process


def test_the_console_script_exits_with_the_codes_it_documents(tmp_path: Path) -> None:
    ok = pgknee_process("--version", script=True)
    assert (ok.code, ok.out.strip()) == (0, f"pgknee {__version__}")
    bad = pgknee_process("size", "--tps", "1000", "--latency", "soon", script=True)
    assert bad.code == 2 and bad.out == ""
    assert bad.err.startswith("pgknee: error: ") and bad.err.count("\n") == 1 and "not a duration" in bad.err
    missing = tmp_path / "missing.db"
    store = pgknee_process("runs", "--store", str(missing), script=True)
    assert store.code == 5 and "no collector database at" in store.err and not missing.exists()
