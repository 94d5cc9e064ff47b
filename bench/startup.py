"""How long a command takes before it answers, as a user meets it: each command of COMMANDS run as
a child process (`python -m pgknee ...` with PYTHONPATH at the code tree given), timed from the
outside, over the code trees given in turns (A B A B ...: the shared machine's drift weighs on
both), medians and spread (min..max). The commands need no server: what they cost is pgknee's
own start (imports) and their work.

    git archive 0c26f6b src | tar -x -C /tmp/base       # a tree before scipy was imported lazily
    .venv/bin/python bench/startup.py --src src --src /tmp/base/src [--repeat 7] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

COMMANDS = (("--version",), ("scenarios",), ("doctor",), ("size", "--tps", "1000", "--latency", "50ms",
                                                           "--server-cpus", "2"),
            ("run", "--clients", "0"))  # the last: bad input, refused in one line


def timed(src: str, argv: Sequence[str]) -> tuple[float, int]:
    env = {**os.environ, "PYTHONPATH": str(Path(src).resolve()), "PYTHONDONTWRITEBYTECODE": ""}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "pgknee", *argv], env=env, capture_output=True, check=False,
                       timeout=120)
    return time.perf_counter() - t0, p.returncode


def main(argv: Sequence[str] | None = None) -> int:
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    a.add_argument("--src", action="append", required=True, help="a code tree's src directory (give two to compare)")
    a.add_argument("--repeat", type=int, default=7)
    a.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = a.parse_args(argv)
    for src in args.src:  # each tree's modules compiled once, so that no turn pays for it
        timed(src, ("--version",))
    seen: dict[str, dict[str, list[float]]] = {" ".join(c): {s: [] for s in args.src} for c in COMMANDS}
    codes: dict[str, dict[str, int]] = {" ".join(c): {} for c in COMMANDS}
    for _ in range(args.repeat):
        for command in COMMANDS:
            for src in args.src:
                seconds, code = timed(src, command)
                seen[" ".join(command)][src].append(seconds)
                codes[" ".join(command)][src] = code
    out = {}
    print(f"{'command':58} " + "  ".join(f"{s[-28:]:>28}" for s in args.src))
    for command, by_src in seen.items():
        row = {s: {"median_s": statistics.median(v), "min_s": min(v), "max_s": max(v), "exit_code": codes[command][s]}
               for s, v in by_src.items()}
        out[command] = row
        print(f"{command[:58]:58} " + "  ".join(
            f"{r['median_s']:6.2f} s ({r['min_s']:.2f}..{r['max_s']:.2f}) rc {r['exit_code']}".rjust(28)
            for r in row.values()))
    if args.json:
        Path(args.json).write_text(json.dumps({"repeat": args.repeat, "commands": out}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
