"""One pgbench process, run to its end: bounded in time, stopped with SIGINT (pgbench then
prints its summary) and its group killed if pgknee leaves early; progress lines handed on as
they come."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pgknee import proc
from pgknee.driver.pgbench import PgbenchRun, parse_progress_line
from pgknee.types import ProgressPoint


@dataclass(frozen=True)
class Execution:
    exit_code: int  # -1: it did not exit
    stdout: str  # pgbench's summary
    stderr: str  # what it said besides its progress lines
    progress: tuple[ProgressPoint, ...]


def execute(run: PgbenchRun, *, env: Mapping[str, str], run_as: proc.RunAs | None, cwd: Path,
            cpus: frozenset[int] | None = None, on_progress: Callable[[ProgressPoint], None] | None = None,
            on_start: Callable[[int], None] | None = None) -> Execution:
    p = proc.spawn(run.argv(), env=env, cpus=cpus, run_as=run_as, cwd=str(cwd))
    if on_start is not None:
        on_start(p.pid)
    points: list[ProgressPoint] = []
    err_lines: list[str] = []
    out_chunks: list[bytes] = []

    def pump_err() -> None:
        assert p.stderr is not None
        for raw in p.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            pt = parse_progress_line(line)
            if pt is None:
                err_lines.append(line)
                continue
            points.append(pt)
            if on_progress is not None:
                on_progress(pt)

    def pump_out() -> None:
        assert p.stdout is not None
        out_chunks.append(p.stdout.read())

    threads = [threading.Thread(target=pump_err, daemon=True), threading.Thread(target=pump_out, daemon=True)]
    for t in threads:
        t.start()
    limit = run.duration_s + 60 + run.clients * 0.05
    try:
        with proc.guarded(p, first=signal.SIGINT):
            try:
                p.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                err_lines.append(f"pgbench did not finish within {limit:.0f} s and was stopped")
    finally:
        for t in threads:
            t.join(timeout=5)
    return Execution(p.returncode if p.returncode is not None else -1, b"".join(out_chunks).decode(errors="replace"),
                     "\n".join(err_lines), tuple(points))
