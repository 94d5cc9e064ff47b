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
        "make test    # installs what it needs, then runs the test suite (unit + real servers + browsers), about 4 min "
        "on 2 cores, nearly all of it pytest"]


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
def test_every_run_line_in_the_docs_runs_dry(page: str, cmd: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    """In this process, as the console command calls it (cli.main): a new interpreter a line cost 2 s of
    imports each, the docs' commands that need no server below run as a reader's would."""
    from pgknee import cli

    (tmp_path / "read_heavy.sql").write_text("SELECT 1;\n")  # the custom workload's example script
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PGPASSWORD", "example")
    code = cli.main(["run", *shlex.split(cmd)[2:], "--dry-run"])
    out, err = capsys.readouterr()
    assert code == 0, f"{page}: {cmd}\n{err.strip().splitlines()[-1:]}"
    assert "estimated wall time" in out or "until-answer" in out, out[-300:]


def test_every_variable_pgknee_reads_is_documented() -> None:
    read = {m for f in (ROOT / "src" / "pgknee").rglob("*.py")
            for m in re.findall(r"\"(PGKNEE_[A-Z_]+|NO_COLOR|XDG_STATE_HOME|JOB_COMPLETION_INDEX)\"", f.read_text())}
    page = (ROOT / "docs" / "environment.md").read_text()
    assert len(read) >= 10 and sorted(v for v in read if f"`{v}`" not in page) == []


# the placeholders of the docs' command shapes, as values the parser takes
PLACEHOLDERS = {"RUN": "20261125-000000-abcd", "RUN_ID": "20261125-000000-abcd", "RUN_A": "20261125-000000-abcd",
                "RUN_B": "20261125-000100-bcde", "RUN_BASE": "20261125-000000-abcd", "RUN_NEW": "20261125-000100-bcde",
                "BASE": "20261125-000000-abcd", "NEW": "20261125-000100-bcde", "N": "4", "NAME": "pgknee_x",
                "DSN": "postgresql://u@h/db", "FILE": "f.json", "F": "f.json", "PATH": "out.json", "SRC": "a.db",
                "DST": "b.db"}


def _other_lines() -> list[tuple[str, str, bool]]:
    """Every pgknee command line but run's in the README and docs/ (cli.md is the parser's own):
    (page, line, whether it is a code block's line rather than a mention in the text)."""
    found = []
    for page in PAGES:
        if page.name == "cli.md":
            continue
        text = page.read_text()
        blocks = [ln for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S) for ln in block.splitlines()]
        for ln, whole in [*((x, True) for x in blocks), *((x, False) for x in re.findall(r"`(pgknee [^`]*)`", text))]:
            m = re.match(r"^(?:\$ )?(?:[A-Z_]+=\S+ )*(pgknee (?!run\b)[a-z].*)$", ln.strip())
            if m:
                found.append((page.name, re.split(r"\s{2,}#| # |, then ", m.group(1))[0].strip(), whole))
    return found


def _complete(line: str, whole: bool) -> bool:
    """A line to parse whole: a code block's, or a mention in the text with values (not
    'pgknee cleanup --dsn', which names a flag)."""
    argv = _argv(line)
    return "..." not in line and (whole or (bool(argv) and not argv[-1].startswith("-") and any(
        t.startswith("-") or t in PLACEHOLDERS.values() for t in argv)))


def _argv(line: str) -> list[str]:
    """A command shape as one command: placeholders filled in, [optional] parts kept, the first of
    each a|b alternative, no shell redirection."""
    line = re.sub(r"\s>\s[\w./~-]+$", "", line.replace("\\|", "|")).split(" | head")[0]
    line = re.sub(r"\[([^\]]*)\]", r"\1", line)
    out = []
    for tok in shlex.split(line)[1:]:
        tok = tok.split("|")[0] if "|" in tok and not tok.startswith(("postgresql:", "tps", "p99")) else tok
        out.append(PLACEHOLDERS.get(tok, tok))
    return out


OTHER_LINES = _other_lines()


def test_the_docs_hold_other_command_lines_to_check() -> None:
    assert len(OTHER_LINES) >= 80 and sum(_complete(line, whole) for _, line, whole in OTHER_LINES) >= 50


@pytest.mark.parametrize(("page", "line", "whole"), OTHER_LINES,
                         ids=[f"{p}:{i}" for i, (p, *_) in enumerate(OTHER_LINES)])
def test_every_other_command_line_in_the_docs_parses(page: str, line: str, whole: bool,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """The cheap equivalent of running it: pgknee's own parser takes the line (its command, every
    flag, every value the parser checks). A mention in the text ('pgknee cleanup --dsn') names a
    command and flags that exist."""
    from pgknee.base.errors import UserError
    from pgknee.cli import build_parser, commands

    parser = build_parser()
    argv = _argv(line)
    if _complete(line, whole):
        try:
            parser.parse_args(argv)
        except (UserError, SystemExit) as e:
            pytest.fail(f"{page}: {line}: {getattr(e, 'message', e)}")
        err = capsys.readouterr().err
        assert "deprecated" not in err.lower() and "is now" not in err, f"{page}: {line}: an old name: {err}"
        return
    by_name = dict(commands(parser))
    path = " ".join(t for t in argv[:2] if not t.startswith("-"))
    name = path if path in by_name else (argv[0] if argv else "")
    assert name in by_name or name in ("store", "workload", "k8s"), f"{page}: {line}: no command {name!r}"
    if name in by_name:
        flags = {s for a in by_name[name]._actions for s in a.option_strings}
        own = argv[:argv.index("--")] if "--" in argv else argv  # after '--': the run's flags (k8s render)
        assert {t for t in own if t.startswith("--")} <= flags, f"{page}: {line}: not a flag of pgknee {name}"


@pytest.mark.parametrize("line", ["pgknee size --tps 1000 --latency 50ms --server-cpus 2", "pgknee doctor",
                                  "pgknee scenarios", "pgknee completion bash",
                                  "pgknee k8s render --agents 4 --dsn-secret app-db --store-secret results-db -- "
                                  "--clients 100:2000:100 --duration 60s"])
def test_the_docs_commands_that_need_no_server_run(line: str, tmp_path: Path) -> None:
    """The docs' commands that need no server and no run: run for real, as a reader would."""
    r = subprocess.run([sys.executable, "-m", "pgknee", *shlex.split(line)[1:]], capture_output=True, text=True,
                       timeout=120, cwd=tmp_path, stdin=subprocess.DEVNULL, check=False)
    assert r.returncode == 0, f"{line}\n{r.stderr.strip().splitlines()[-1:]}"
    assert r.stdout.strip(), line
    assert any(line in p.read_text() for p in PAGES), f"not in the docs any more: {line}"
