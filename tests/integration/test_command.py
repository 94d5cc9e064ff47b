"""The installed console script, in a process of its own: what a shell or a CI job sees of it,
its exit codes. (Everywhere else the command runs in-process.)"""

from __future__ import annotations

import re
from pathlib import Path

from pgknee import __version__

from .conftest import pgknee_process


def test_the_console_script_exits_with_the_codes_it_documents(tmp_path: Path) -> None:
    ok = pgknee_process("--version", script=True)
    # from a checkout it names the commit too (tests/unit/test_version.py)
    assert ok.code == 0 and re.fullmatch(rf"pgknee {re.escape(__version__)}( \(checkout [0-9a-f]{{7}}( on \S+)?\))?",
                                         ok.out.strip()), ok.out
    missing = tmp_path / "missing.db"
    bad = pgknee_process("runs", "--store", str(missing), script=True)
    assert bad.code == 5 and bad.out == "" and not missing.exists()
    assert bad.err.startswith("pgknee: error: no collector database at") and bad.err.count("\n") == 1
