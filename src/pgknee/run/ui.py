"""What the run tells the person watching; the CLI implements it (live progress on a terminal,
a line per event in a log)."""

from __future__ import annotations

from typing import Protocol

from pgknee.model.results import ProgressPoint


class UI(Protocol):
    def say(self, text: str) -> None: ...
    def step_started(self, seq: int, total: int, variant: str, clients: int, rep: int, seconds: float) -> None: ...
    def step_progress(self, point: ProgressPoint) -> None: ...
    def step_finished(self, text: str) -> None: ...


class QuietUI:
    """Tells nobody anything (preflight and dry runs)."""

    def say(self, text: str) -> None:
        pass

    def step_started(self, seq: int, total: int, variant: str, clients: int, rep: int, seconds: float) -> None:
        pass

    def step_progress(self, point: ProgressPoint) -> None:
        pass

    def step_finished(self, text: str) -> None:
        pass
