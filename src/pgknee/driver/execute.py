"""One pgbench process, run to its end: bounded in time, stopped with SIGINT (pgbench then
prints its summary) and its group killed if pgknee leaves early; progress lines handed on as
they come. `stop_when` may end it early and cleanly: pgbench's -T timer is SIGALRM (its handler
sets the flag the timer would), so the clients finish their transactions, the logs are flushed
and the summary printed as at the planned end."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pgknee.driver.pgbench import PgbenchRun, parse_progress_line
from pgknee.model.results import ProgressPoint
from pgknee.system import proc


@dataclass(frozen=True)
class Execution:
    exit_code: int  # -1: it did not exit
    stdout: str  # pgbench's summary
    stderr: str  # what it said besides its progress lines
    progress: tuple[ProgressPoint, ...]
    stopped_early: bool = False  # stop_when ended it before its -T


def execute(run: PgbenchRun, *, env: Mapping[str, str], run_as: proc.RunAs | None, cwd: Path,
            cpus: frozenset[int] | None = None, on_progress: Callable[[ProgressPoint], None] | None = None,
            on_start: Callable[[int], None] | None = None,
            stop_when: Callable[[ProgressPoint], bool] | None = None) -> Execution:
    p = proc.spawn(run.argv(), env=env, cpus=cpus, run_as=run_as, cwd=str(cwd))
    if on_start is not None:
        on_start(p.pid)
    pumps = _Pumps(p, on_progress, stop_when)
    limit = run.duration_s + 60 + run.clients * 0.05
    try:
        with proc.guarded(p, first=signal.SIGINT):
            try:
                p.wait(timeout=limit)
            except subprocess.TimeoutExpired:
                pumps.err_lines.append(f"pgbench did not finish within {limit:.0f} s and was stopped")
    finally:
        pumps.finish()
    return Execution(p.returncode if p.returncode is not None else -1, b"".join(pumps.out).decode(errors="replace"),
                     "\n".join(pumps.err_lines), tuple(pumps.points), pumps.stopped_early)


class _Pumps:
    """Threads reading pgbench's output as it comes: progress lines to `on_progress`, the rest kept."""

    def __init__(self, p: subprocess.Popen[bytes], on_progress: Callable[[ProgressPoint], None] | None,
                 stop_when: Callable[[ProgressPoint], bool] | None = None) -> None:
        self.p, self.on_progress, self.stop_when = p, on_progress, stop_when
        self.stopped_early = False
        self.points: list[ProgressPoint] = []
        self.err_lines: list[str] = []
        self.out: list[bytes] = []
        self.threads = [threading.Thread(target=self._err, daemon=True),
                        threading.Thread(target=self._out, daemon=True)]
        for t in self.threads:
            t.start()

    def _err(self) -> None:
        assert self.p.stderr is not None
        for raw in self.p.stderr:
            line = raw.decode(errors="replace").rstrip("\n")
            pt = parse_progress_line(line)
            if pt is None:
                self.err_lines.append(line)
                continue
            self.points.append(pt)
            if self.on_progress is not None:
                self.on_progress(pt)
            if self.stop_when is not None and not self.stopped_early and self.stop_when(pt):
                # a progress line means pgbench's clients run, so its SIGALRM handler is set
                self.stopped_early = True
                self.p.send_signal(signal.SIGALRM)

    def _out(self) -> None:
        assert self.p.stdout is not None
        self.out.append(self.p.stdout.read())

    def finish(self) -> None:
        for t in self.threads:
            t.join(timeout=5)
        for pipe in (self.p.stdout, self.p.stderr):
            if pipe is not None:
                pipe.close()
