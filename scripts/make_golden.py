"""The golden stored run that the analysis and report tests read: made by real pgknee runs, each on
a fresh embedded cluster (initdb'd and started by pgknee, stopped and removed after), so that those
tests need no server and no minutes of sweeping.

    .venv/bin/python scripts/make_golden.py [--output tests/data/golden.sql]

Two runs in one store, with fixed, small parameters:
  A: ewallet (scale 0.1), extended protocol, clients 1,2,4, two repetitions, 2 s steps, three
     variants interleaved: direct, a managed pgbouncer (transaction pool of 2) and 5 idle sessions;
  B: the same workload at scale 0.2, clients 1,2,4 once, one variant (a second run to compare A
     with, on a different data size).
Query texts are not stored (--no-query-text: no analysis reads them, and they are most of the
size). The store is kept as SQL text (its format and application id first, then SQLite's own
dump): the tree holds no binary file, a change to it reads in a diff, and the tests build the
store from it in a few milliseconds (tests/integration/conftest.py, make_golden).

Run it again when the store's format or what a run records changes; the tests read whatever the
store says (run ids, variants, client counts), not numbers of this particular run."""

from __future__ import annotations

import argparse
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMON = ["--duration", "2s", "--sample-interval", "250ms", "--no-query-text", "--quiet", "--no-waits"]
RUNS = [
    ["--scale", "0.1", "--protocol", "extended", "--clients", "1,2,4", "--reps", "2",
     "--variant", "direct", "--variant", "pooled:transaction:pool=2", "--variant", "idle=5"],
    ["--scale", "0.2", "--protocol", "extended", "--clients", "1,2,4"],
]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--output", type=Path, default=ROOT / "tests" / "data" / "golden.sql")
    a = p.parse_args()
    # pgknee's directories go here; the server's user (postgres, when this runs as root) must reach it
    work = tempfile.mkdtemp(prefix="pgknee-golden-")
    os.chmod(work, 0o755)
    store = Path(work) / "golden.db"
    env = {**os.environ, "TMPDIR": work, "NO_COLOR": "1"}
    try:
        for extra in RUNS:
            argv = [sys.executable, "-m", "pgknee", "run", *extra, *COMMON, "--store", str(store)]
            print("+", " ".join(argv[1:]), flush=True)
            subprocess.run(argv, env=env, cwd=work, check=True)
        db = sqlite3.connect(store, isolation_level=None)
        steps = db.execute("SELECT count(*) FROM steps WHERE status = 'completed'").fetchone()[0]
        runs = db.execute("SELECT count(*) FROM runs WHERE status = 'completed'").fetchone()[0]
        if (runs, steps) != (2, 21):
            print(f"expected 2 completed runs of 21 steps, got {runs} runs and {steps} steps", file=sys.stderr)
            return 1
        header = [f"PRAGMA {p} = {db.execute(f'PRAGMA {p}').fetchone()[0]};"
                  for p in ("user_version", "application_id")]
        text = "\n".join(["-- the golden store (scripts/make_golden.py): two real runs, as SQL text; the tests build "
                          "it with executescript", *header, *db.iterdump()]) + "\n"
        db.close()
        a.output.parent.mkdir(parents=True, exist_ok=True)
        a.output.write_text(text)
        print(f"wrote {a.output} ({len(text) // 1024} KB)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
