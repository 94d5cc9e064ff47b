"""The thread both OS samplers run on (collect.osproc for this machine, collect.serveros for the
server's), as collect.protocol's Collector: every `interval_s` while a step is active,
`_sample_once` adds rows, which `end_step` hands over as the sampler's record. Ticks keep to a
fixed schedule (a slow read does not push the next one back)."""

from __future__ import annotations

import threading
import time
from typing import Generic, TypeVar

from pgknee.collect.protocol import SAMPLERS, Hooks, Phase, StepProcesses
from pgknee.model.kinds import StepRecord

R = TypeVar("R")  # what a tick reads, kept to difference the next one against
S = TypeVar("S")  # the row a tick makes of two reads


class PeriodicSampler(Hooks, Generic[R, S]):
    order = SAMPLERS

    def __init__(self, interval_s: float, name: str) -> None:
        self.interval_s = interval_s
        self.phase = "pre"
        self._name = name
        self._rows: list[S] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._active = False
        self._prev: R | None = None
        self._thread: threading.Thread | None = None
        self.step = StepProcesses(0)  # the step's processes, as the step fills them in

    def start(self) -> None:
        if self.interval_s <= 0:  # not sampled (--os-interval 0): its records are empty
            return
        self._thread = threading.Thread(target=self._loop, name=self._name, daemon=True)
        self._thread.start()

    @property
    def name(self) -> str:
        return self._name

    @property
    def queries_run(self) -> int:
        return 0  # reads files, not the benchmark database (collect.serveros's SQL reader counts its own)

    def begin_step(self, step: StepProcesses) -> None:
        with self._lock:
            self._rows, self._prev, self.phase, self._active = [], None, "pre", True
            self.step = step

    def set_phase(self, phase: Phase) -> None:
        self.phase = phase

    def end_step(self) -> tuple[StepRecord, ...]:
        with self._lock:
            self._active = False
            rows, self._rows = self._rows, []
        return (self._record(tuple(rows)),)

    def _record(self, rows: tuple[S, ...]) -> StepRecord:
        raise NotImplementedError

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _loop(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            next_at += self.interval_s
            if self._active:
                self._sample_once()
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def _keep(self, row: S | None) -> None:
        """A tick's row, unless the step ended while it was read."""
        with self._lock:
            if row is not None and self._active:
                self._rows.append(row)

    def _sample_once(self) -> None:
        raise NotImplementedError
