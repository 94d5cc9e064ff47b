"""pgknee completion bash|zsh|fish: the shell's completion script, from the argparse parser
(argcomplete: the script asks pgknee itself, with _ARGCOMPLETE set, for the words that fit;
main() hands such a call to `complete` before parsing). argcomplete loads only then and in
this command: --help stays light."""

from __future__ import annotations

import argparse
import sys
from typing import Any

SHELLS = ("bash", "zsh", "fish")
INSTALL = {"bash": "eval \"$(pgknee completion bash)\" in ~/.bashrc",
           "zsh": "eval \"$(pgknee completion zsh)\" in ~/.zshrc (after compinit)",
           "fish": "pgknee completion fish > ~/.config/fish/completions/pgknee.fish"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("completion", help="print the shell completion script for bash, zsh or fish",
                       description="Print the completion script. Install: "
                                   + "; ".join(f"{k}: {v}" for k, v in INSTALL.items()))
    p.add_argument("shell", choices=SHELLS, help="the shell")
    p.set_defaults(func=cmd_completion)


def cmd_completion(args: argparse.Namespace) -> int:
    from argcomplete.shell_integration import shellcode

    sys.stdout.write(shellcode(["pgknee"], shell=args.shell))
    sys.stdout.flush()
    return 0


def complete(parser: argparse.ArgumentParser) -> None:
    """Answer a shell's completion request (argcomplete writes the words and exits)."""
    import argcomplete

    argcomplete.autocomplete(parser)
