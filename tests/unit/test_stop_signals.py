"""A stop signal's exception is not lost where Python only prints it: raised by the handler at
an arbitrary point, it can land in code that swallows it (an at-fork or weakref callback, a broad
except); pgknee raises it again at its own points, once, while the handler is in force."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from pgknee.base.errors import Interrupted
from pgknee.system import proc


def _swallowed() -> None:
    """A signal taken where its exception goes nowhere."""
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs at the next bytecode
            pass
    except Exception:  # noqa: S110 - the point: code that swallows what is raised in it
        pass


def test_a_swallowed_stop_is_raised_again_once_at_pgkneess_own_points() -> None:
    with proc.signals(proc.raising(lambda name: Interrupted(f"interrupted by {name}"))):
        _swallowed()
        with proc.signals(signal.SIG_IGN):  # a cleanup that ignores the signals: not now
            proc.check_stop()
        with pytest.raises(Interrupted, match="interrupted by SIGTERM"):
            proc.check_stop()
        proc.check_stop()  # once: handled now


def test_nothing_starts_after_a_swallowed_stop_and_a_handled_one_is_not_raised_again() -> None:
    before = set(proc._live)
    with proc.signals(proc.raising(lambda name: Interrupted(f"interrupted by {name}"))):
        _swallowed()
        with pytest.raises(Interrupted):
            proc.spawn([sys.executable, "-c", "pass"])
        assert proc._live == before  # the child was never started
        _swallowed()
        proc.stop_handled()  # the exception reached the code that ends the run
        proc.check_stop()  # nothing raised again
