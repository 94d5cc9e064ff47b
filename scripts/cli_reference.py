"""docs/cli.md: every pgknee command and flag, written from the parser itself so that the
reference cannot drift from the CLI (tests/unit/test_docs.py checks the file is what this prints).

    .venv/bin/python scripts/cli_reference.py > docs/cli.md
"""

from __future__ import annotations

import os
import sys


def main() -> int:
    os.environ["COLUMNS"] = "100"  # the help text wrapped the same wherever this runs
    from pgknee.cli import build_parser, commands

    out = ["# Command reference", "",
           "Every command and flag, as `pgknee COMMAND --help` prints them (this page is written from the parser:",
           "`scripts/cli_reference.py`). Durations carry a unit (`500ms`, `30s`, `3m`); exit codes are in",
           "[exit codes](exit-codes.md).", ""]
    parser = build_parser()
    for name, sub in commands(parser):
        sub.prog = f"pgknee {name}"
        out += [f"## pgknee {name}", "", "```text", sub.format_help().rstrip(), "```", ""]
    sys.stdout.write("\n".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
