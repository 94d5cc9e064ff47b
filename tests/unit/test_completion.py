"""pgknee completion bash|zsh|fish: the script each shell sources, asked for real by bash and
fish (and zsh's registration): the words come from the argparse parser, through pgknee itself."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

BIN = Path(sys.executable).parent  # the venv's pgknee


def _env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": f"{BIN}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}


def _script(shell: str, tmp_path: Path) -> Path:
    done = subprocess.run([BIN / "pgknee", "completion", shell], capture_output=True, text=True, timeout=60,
                          env=_env(tmp_path), check=True)
    path = tmp_path / f"pgknee.{shell}"
    path.write_text(done.stdout)
    return path


BASH = """
source {script}
ask() {{
    COMP_LINE="$1"; COMP_POINT=${{#COMP_LINE}}; read -ra COMP_WORDS <<< "$1"; [[ "$1" == *" " ]] && COMP_WORDS+=("")
    COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 )); COMPREPLY=(); _python_argcomplete pgknee; echo "${{COMPREPLY[*]}}"
}}
complete -p pgknee
ask "pgknee exp"
ask "pgknee export last --format "
ask "pgknee compare a b --fail"
ask "pgknee completion "
ask "pgknee size --ser"
ask "pgknee size --co"
ask "pgknee workload capture --ou"
"""


def test_bash_completes_commands_options_and_choices(tmp_path: Path) -> None:
    done = subprocess.run(["bash", "-c", BASH.format(script=_script("bash", tmp_path))], capture_output=True,
                          text=True, timeout=60, env=_env(tmp_path), check=True)
    lines = [line.strip() for line in done.stdout.splitlines()]
    assert lines[0].endswith("-F _python_argcomplete pgknee")
    # the new names complete, the old ones (kept a release, hidden from --help) do not
    assert lines[1:] == ["export", "csv openmetrics", "--fail-if", "-h --help bash zsh fish", "--server-cpus", "",
                         "--output"], done.stdout


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed (scripts/setup-system.sh --browsers)")
def test_fish_completes_with_the_help_texts(tmp_path: Path) -> None:
    script = _script("fish", tmp_path)
    done = subprocess.run(["fish", "-c", f"source {script}; complete -C 'pgknee exp'; "
                                         "complete -C 'pgknee recommend last --app-'"],
                          capture_output=True, text=True, timeout=60, env=_env(tmp_path), check=True)
    lines = done.stdout.splitlines()
    assert lines[0] == "export\ta run as CSV or OpenMetrics text"
    assert [line.split("\t")[0] for line in lines[1:]] == ["--app-instances", "--app-pool"]


@pytest.mark.skipif(shutil.which("zsh") is None, reason="zsh is not installed (scripts/setup-system.sh --browsers)")
def test_zsh_registers_and_pgknee_answers_as_zsh_asks(tmp_path: Path) -> None:
    script = _script("zsh", tmp_path)
    done = subprocess.run(["zsh", "-c", f"autoload -U compinit; compinit -u; source {script}; "
                                        "print -r -- ${_comps[pgknee]}"],
                          capture_output=True, text=True, timeout=60, env=_env(tmp_path), check=True)
    assert done.stdout.strip() == "_python_argcomplete"
    # what the zsh function does on TAB: pgknee with the line, answering on descriptor 8
    env = {**_env(tmp_path), "_ARGCOMPLETE": "1", "_ARGCOMPLETE_SHELL": "zsh", "_ARGCOMPLETE_SUPPRESS_SPACE": "1",
           "IFS": "\013", "COMP_LINE": "pgknee exp", "COMP_POINT": "10"}
    answer = subprocess.run(["bash", "-c", f'"{BIN / "pgknee"}" 8>&1 9>/dev/null 1>/dev/null'], env=env, timeout=60,
                            capture_output=True, text=True, check=True).stdout
    assert answer == "export:a run as CSV or OpenMetrics text"


def test_an_unknown_shell_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = subprocess.run([BIN / "pgknee", "completion", "tcsh"], capture_output=True, text=True, timeout=60,
                          env=_env(tmp_path))
    assert done.returncode == 2 and done.stdout == "" and len(done.stderr.splitlines()) == 1
    assert "argument shell: invalid choice: 'tcsh'" in done.stderr
