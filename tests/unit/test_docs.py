"""The docs cannot drift from the CLI: the command reference is what the parser prints, the README
stays a front page, every `pgknee run` line in the README and docs/ runs with --dry-run, and the site
builds (make docs, with warnings as errors, runs in make test)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# a replay of the user's own capture: its run line is tests/integration/test_captured.py's, run for real there
NEEDS_A_CAPTURE = "--workload myapp/"


def test_the_command_reference_is_the_parsers_own() -> None:
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "cli_reference.py")], capture_output=True,
                         text=True, check=True, env={**os.environ, "COLUMNS": "100"}).stdout
    assert (ROOT / "docs" / "cli.md").read_text() == out, "run: .venv/bin/python scripts/cli_reference.py > docs/cli.md"


def test_the_readme_is_a_front_page() -> None:
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 250 and lines[3:5] == [
        "make demo    # installs what it needs, sweeps 2..32 clients on a throwaway local PostgreSQL, answers, reports",
        "make test    # installs what it needs, then runs the whole test suite (unit + real servers + browsers)"]


def _run_lines() -> list[tuple[str, str]]:
    found = []
    for page in PAGES:
        text = page.read_text()
        lines = [ln for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S) for ln in block.splitlines()]
        lines += re.findall(r"`(pgknee run [^`]*)`", text)
        for ln in lines:
            m = re.match(r"^(?:[A-Z_]+=\S+ )*(pgknee run\b.*)$", ln.strip())
            if m:
                found.append((page.name, re.split(r"\s{2,}#| # ", m.group(1))[0].strip()))
    return found


def _placeholder(cmd: str) -> bool:
    """A line with a placeholder (RUN_ID, N, NAME, '...', a plan file) is a shape, not a command."""
    return any(x in cmd for x in ("...", "RUN", "plan.toml", "[")) or bool(re.search(r"(?<![\w.-])(N|NAME)(?![\w.-])",
                                                                                          cmd))


RUN_LINES = [x for x in _run_lines() if not _placeholder(x[1]) and NEEDS_A_CAPTURE not in x[1]]


def test_the_docs_hold_run_lines_to_check() -> None:
    assert len(RUN_LINES) >= 25 and {p for p, _ in RUN_LINES} >= {"README.md", "run.md", "deployments.md"}


@pytest.mark.parametrize(("page", "cmd"), RUN_LINES, ids=[f"{p}:{i}" for i, (p, _) in enumerate(RUN_LINES)])
def test_every_run_line_in_the_docs_runs_dry(page: str, cmd: str, tmp_path: Path) -> None:
    (tmp_path / "read_heavy.sql").write_text("SELECT 1;\n")  # the custom workload's example script
    argv = shlex.split(cmd)[2:]
    r = subprocess.run([sys.executable, "-m", "pgknee", "run", *argv, "--dry-run"], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path, env={**os.environ, "PGPASSWORD": "example"},
                       stdin=subprocess.DEVNULL, check=False)
    assert r.returncode == 0, f"{page}: {cmd}\n{r.stderr.strip().splitlines()[-1:]}"
    assert "estimated wall time" in r.stdout or "until-answer" in r.stdout, r.stdout[-300:]


def test_every_variable_pgknee_reads_is_documented() -> None:
    read = {m for f in (ROOT / "src" / "pgknee").rglob("*.py")
            for m in re.findall(r"\"(PGKNEE_[A-Z_]+|NO_COLOR|XDG_STATE_HOME|JOB_COMPLETION_INDEX)\"", f.read_text())}
    page = (ROOT / "docs" / "environment.md").read_text()
    assert len(read) >= 10 and sorted(v for v in read if f"`{v}`" not in page) == []
