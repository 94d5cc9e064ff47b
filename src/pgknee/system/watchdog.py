"""The watchdog of one pgknee process (python -m pgknee.system.watchdog ENTRY): it learns through its
standard input what pgknee starts and removes, and when that input ends without 'done' (pgknee
died, even by SIGKILL), it stops the children cleanly (a server's fast shutdown, then immediate,
then a kill), removes the directories, marks the runs abandoned and removes the registry entry.
It runs in a session of its own, so a terminal's Ctrl-C does not reach it."""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Any

from pgknee.system.registry import clean_up


def main(entry_path: str) -> int:
    entry: dict[str, Any] = {"pid": 0, "children": [], "dirs": [], "runs": []}
    for line in sys.stdin:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        op = msg.pop("op", "")
        if op == "done":
            return 0
        _apply(entry, op, msg)
    with contextlib.suppress(OSError, ValueError):  # the pipe closed without 'done': pgknee is gone
        written = json.loads(Path(entry_path).read_text())
        entry.update({k: written.get(k) for k in ("pid", "host", "start")})  # who it was: its runs' owner
    clean_up(entry, f"pgknee (pid {entry['pid']}) died; its watchdog stopped what it had started")
    Path(entry_path).unlink(missing_ok=True)
    return 0


def _apply(entry: dict[str, Any], op: str, msg: dict[str, Any]) -> None:
    if op == "child":
        entry["children"].append(msg)
    elif op == "forget-child":
        entry["children"] = [c for c in entry["children"] if c["pid"] != msg["pid"]]
    elif op == "dir":
        entry["dirs"].append(msg["path"])
    elif op == "forget-dir":
        entry["dirs"] = [d for d in entry["dirs"] if d != msg["path"]]
    elif op == "run":
        entry["runs"].append((msg["store"], msg["run_id"]))
    elif op == "forget-run":
        entry["runs"] = [r for r in entry["runs"] if r[1] != msg["run_id"]]


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
