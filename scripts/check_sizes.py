"""Sizes a reader can hold, checked in make lint: no function over 50 lines, no module over 500
(ruff checks the complexity, mccabe <= 10). Prints each offender with its size; exits 1 if any."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MAX_FUNCTION = 50
MAX_MODULE = 500


def offenders(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > MAX_MODULE:
            out.append(f"{path}: module of {lines} lines (at most {MAX_MODULE})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION:
                    out.append(f"{path}:{node.lineno}: {node.name} has {n} lines (at most {MAX_FUNCTION})")
    return out


def main(argv: list[str]) -> int:
    found = [line for root in (argv or ["src/pgknee"]) for line in offenders(Path(root))]
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
