"""How long does a fresh venv take to get pgknee and its dev dependencies: pip against uv?

`make venv` (inside `make test` and `make demo`, on every fresh clone and every CI run) made the
venv with pip until uv took over its installs. Here both install the same thing, `-e '.[dev]'` of
this checkout, into a new venv each time, interleaved (pip uv, uv pip, ...), so that a drift of the
shared machine weighs on both:

- pip: `pip install --no-compile -e '.[dev]'`, with pip's cache and configured indexes as they are
  (a machine that installed pgknee before has every wheel cached: pip's best case);
- uv: `uv pip install -e '.[dev]'` with uv's cache as it is (warm after the first round);
- uv, empty cache: once, uv with a new empty cache directory (a first install: every wheel
  downloaded from PyPI).

Each round creates its venv with `python -m venv` (not timed) and times the install alone. Prints
the median and the range of each side and the ratio of the medians.

    .venv/bin/python bench/setup_speed.py [--rounds 3] [--uv .venv/bin/uv] [--json PATH]

With --json it writes its result file (every round's time, the medians, the commit, the machine,
the date): docs/results/setup_speed.json is the one docs/performance.md quotes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    return where / "bin" / "python"


def _timed(argv: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _pip(python: Path, _uv: str, _cache: Path | None) -> float:
    return _timed([str(python), "-m", "pip", "install", "-q", "--no-compile", "-e", ".[dev]"])


def _uv(python: Path, uv: str, cache: Path | None) -> float:
    argv = [uv, "pip", "install", "-q", "--python", str(python), "-e", ".[dev]"]
    return _timed(argv if cache is None else [*argv, "--cache-dir", str(cache)])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--uv", default=shutil.which("uv") or str(Path(sys.executable).parent / "uv"))
    ap.add_argument("--json", metavar="PATH", help="also write the result file (figures, commit, machine, date)")
    args = ap.parse_args()
    if not Path(args.uv).is_file():
        print(f"uv not found at {args.uv}: run make venv first, or pass --uv PATH", file=sys.stderr)
        return 2
    times: dict[str, list[float]] = {"pip": [], "uv": []}
    sides = {"pip": _pip, "uv": _uv}
    with tempfile.TemporaryDirectory(prefix="pgknee-setup-") as tmp:
        for r in range(args.rounds):
            order = ["pip", "uv"] if r % 2 == 0 else ["uv", "pip"]
            for side in order:
                where = Path(tmp) / f"{side}{r}"
                times[side].append(sides[side](_venv(where), args.uv, None))
                shutil.rmtree(where)
                print(f"round {r + 1}: {side} {times[side][-1]:.1f} s", flush=True)
        cold = _uv(_venv(Path(tmp) / "cold"), args.uv, Path(tmp) / "empty-cache")
    med = {k: statistics.median(v) for k, v in times.items()}
    for side, got in times.items():
        print(f"{side}: median {med[side]:.1f} s over {len(got)} rounds (range {min(got):.1f}-{max(got):.1f})")
    print(f"uv with an empty cache (every wheel downloaded): {cold:.1f} s")
    print(f"pip's median over uv's: {med['pip'] / med['uv']:.1f} times")
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        Path(args.json).write_text(json.dumps({
            "bench": "bench/setup_speed.py", "date": time.strftime("%Y-%m-%d %H:%M:%S%z"), "commit": commit,
            "machine": {"cpus": os.cpu_count(), "system": platform.platform(), "python": platform.python_version()},
            "rounds": args.rounds, "seconds": times, "median_s": med, "uv_empty_cache_s": cold,
            "pip_over_uv": med["pip"] / med["uv"]}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
