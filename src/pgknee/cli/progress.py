"""Progress while a run runs: live on a terminal (step, repetition, elapsed and remaining, live
TPS), a line per event otherwise (CI, logs)."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from pgknee.cli.common import variant_suffix
from pgknee.model.results import ProgressPoint


class LiveUI:
    """Progress on a terminal: step, rep, elapsed/remaining, live TPS."""

    def __init__(self, console: Console, total_seconds: float) -> None:
        self.console = console
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=24),
                                 TextColumn("{task.fields[secs]}"), TextColumn("{task.fields[tps]}"),
                                 TextColumn("· run {task.fields[run_left]} left"), TimeElapsedColumn(),
                                 console=console, transient=True)
        self.task: TaskID | None = None
        self.total_seconds = total_seconds
        self.started = time.monotonic()
        self.step_seconds = 0.0

    def __enter__(self) -> LiveUI:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def say(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False)

    def _left(self) -> str:
        left = max(0.0, self.total_seconds - (time.monotonic() - self.started))
        return f"~{int(left // 60)}m{int(left % 60):02d}s"

    def step_started(self, seq: int, total: int, variant: str, clients: int, rep: int, seconds: float) -> None:
        if self.task is not None:
            self.progress.remove_task(self.task)
        self.step_seconds = seconds
        name = f"step {seq}/{total} c{clients} rep {rep}{variant_suffix(variant)}"
        self.task = self.progress.add_task(name, total=seconds, secs=f"0/{seconds:.0f}s", tps="",
                                           run_left=self._left())

    def step_progress(self, point: ProgressPoint) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=min(point.t_s, self.step_seconds),
                                 secs=f"{point.t_s:.0f}/{self.step_seconds:.0f}s", tps=f"{point.tps:,.0f} tps",
                                 run_left=self._left())

    def step_finished(self, text: str) -> None:
        self.say("  " + text)


class PlainUI:
    """Progress when the output is not a terminal (CI, logs): a line per event."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.last_print = 0.0

    def __enter__(self) -> PlainUI:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def step_started(self, seq: int, total: int, variant: str, clients: int, rep: int, seconds: float) -> None:
        self.say(f"step {seq}/{total}: c{clients} rep {rep}{variant_suffix(variant)}, {seconds:.0f} s")

    def step_progress(self, point: ProgressPoint) -> None:
        now = time.monotonic()
        if now - self.last_print >= 10:
            self.last_print = now
            self.say(f"  {point.t_s:.0f} s: {point.tps:,.0f} tps")

    def step_finished(self, text: str) -> None:
        self.say("  " + text)


def make_ui(quiet: bool, total_seconds: float) -> LiveUI | PlainUI:
    if sys.stderr.isatty() and not quiet:
        return LiveUI(Console(stderr=True), total_seconds)
    return PlainUI(quiet=quiet)
