"""A run read from the store while the command imports what it renders with: SQLite works
without the GIL, so a long run's reads (its sampled sessions, counted by wait event) overlap
numpy's, scipy's and matplotlib's imports instead of following them. The store is opened, read
and closed in the reading thread (an SQLite connection stays in the thread that made it); its
errors are raised in the caller's thread, by result().

A Ctrl-C is held while the imports run and handled right after them: raised inside an import,
KeyboardInterrupt can land in importlib's own lock bookkeeping (seen: "Exception ignored in cb",
the command then running on to its end) and leave a module lock that the reading thread's next
import waits on for ever (CPython gh-82272); a faults test's report once hung that way."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from pgknee.system import proc

if TYPE_CHECKING:
    from pgknee.model.results import RunData


def _load(store_path: str, refs: list[str]) -> list[RunData]:
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    store = Store(store_path, create=False)
    try:
        return [load_run(store, r) for r in refs]
    finally:
        store.close()


def loaded(store_path: str, refs: Sequence[str], meanwhile: Callable[[], Any]) -> list[RunData]:
    """The runs, read while `meanwhile` runs (the imports, checks of the arguments: what it
    raises is raised once the reading thread is done)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="pgknee-load")
    try:
        reading: Future[list[RunData]] = pool.submit(_load, store_path, list(refs))
        with proc.deferred():
            meanwhile()
        return reading.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
