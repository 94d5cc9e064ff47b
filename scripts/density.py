"""Conditional expressions (`a if c else b`) per 1,000 non-blank lines of src/pgknee, the measure of
issue 40's fourth item, per package and for the densest files. Each is sorted roughly by its
shape: a guard around a value that may be missing (its test is `x is None`, `x is not None`, or
the truth of a name or attribute with a branch that is None, '', '-', 0 or an empty collection),
or another choice (a word that depends on a flag, an optional column, a computed alternative).
The sort reads shapes, not meaning: read the files to judge. Usage: python scripts/density.py [root]"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

EMPTY = (None, "", "-", 0, 0.0)


def _empty(e: ast.expr) -> bool:
    if isinstance(e, ast.Constant):
        return e.value in EMPTY and not isinstance(e.value, bool)
    return isinstance(e, ast.Tuple | ast.List | ast.Dict | ast.Set) and not ast.unparse(e).strip("()[]{}")


def is_guard(n: ast.IfExp) -> bool:
    t = n.test
    if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Is | ast.IsNot):
        return isinstance(t.comparators[0], ast.Constant) and t.comparators[0].value is None
    return isinstance(t, ast.Name | ast.Attribute) and (_empty(n.body) or _empty(n.orelse))


def main(argv: list[str]) -> int:
    root = Path(argv[0] if argv else "src/pgknee")
    count: Counter[str] = Counter()
    guards: Counter[str] = Counter()
    lines: Counter[str] = Counter()
    files: list[tuple[int, int, str]] = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        rel = path.relative_to(root)
        package = rel.parts[0] if len(rel.parts) > 1 else "."
        found = [n for n in ast.walk(ast.parse(text)) if isinstance(n, ast.IfExp)]
        n_lines = sum(1 for line in text.splitlines() if line.strip())
        count[package] += len(found)
        guards[package] += sum(is_guard(n) for n in found)
        lines[package] += n_lines
        files.append((len(found), n_lines, str(rel)))
    total, total_lines, total_guards = sum(count.values()), sum(lines.values()), sum(guards.values())
    print(f"{total} conditional expressions in {total_lines:,} non-blank lines: {1000 * total / total_lines:.1f} "
          f"per 1,000 ({total_guards} shaped as guards of a missing value: {1000 * total_guards / total_lines:.1f})")
    for package in sorted(count, key=lambda p: -count[p]):
        print(f"  {package + '/':12} {count[package]:4} in {lines[package]:6,} lines: "
              f"{1000 * count[package] / lines[package]:5.1f} per 1,000, {guards[package]:3} guards")
    print("densest files:")
    for n, n_lines, rel in sorted(files, key=lambda f: (-f[0], f[2]))[:12]:
        print(f"  {rel:40} {n:3} in {n_lines:4} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
