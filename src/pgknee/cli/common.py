"""Helpers shared by the subcommands: the store flag, printing, writing files."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from rich.console import RenderableType

from pgknee import safefs
from pgknee.errors import UserError
from pgknee.report.terminal import render

DEFAULT_STORE = "pgknee.db"


def add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="PATH", default=os.environ.get("PGKNEE_STORE", DEFAULT_STORE),
                   help=f"the collector database (SQLite); default ./{DEFAULT_STORE} or $PGKNEE_STORE")


def _noise_pct(text: str) -> float:
    from pgknee.rules import check_noise_pct

    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage") from None
    try:
        return check_noise_pct(value)
    except UserError as e:
        raise argparse.ArgumentTypeError(e.message) from None


def add_noise_threshold(p: Any, *, default_note: str = "the run's own, 10%% unless it set one") -> None:
    p.add_argument("--noise-threshold", type=_noise_pct, metavar="PCT",
                   help="flag a step as noisy when its repetitions' TPS spread, (max-min)/median, exceeds PCT "
                        f"percent (default: {default_note})")


def width() -> int:
    return max(100, shutil.get_terminal_size((140, 40)).columns)


def print_items(items: list[RenderableType], *, to_stderr: bool = False) -> None:
    """The tables, on standard output (or standard error, when a JSON or report output was asked
    for on standard output)."""
    out = sys.stderr if to_stderr else sys.stdout
    out.write(render(items, width=width(), color=out.isatty() and not os.environ.get("NO_COLOR")))
    out.flush()


def stdout_outputs(*paths: str | None) -> bool:
    """Whether an output goes to standard output ('-'); at most one may."""
    taken = [p for p in paths if p == safefs.STDOUT]
    if len(taken) > 1:
        raise UserError("only one output can go to standard output ('-')", "give the others a file name")
    return bool(taken)


def _refuse_a_database(target: Path) -> None:
    """An output never overwrites a SQLite file: it is most likely the collector database."""
    try:
        with target.open("rb") as f:
            head = f.read(16)
    except OSError:
        return
    if head == b"SQLite format 3\x00" or target.name.endswith(("-wal", "-shm")):
        raise UserError(f"{target} is a SQLite database (a pgknee store?): pgknee does not write over one",
                        "choose another output name")


def check_writable(path: str) -> None:
    """Fail on an output path that cannot be written, without creating or changing it (and
    without opening it: a FIFO would block)."""
    kind = safefs.output_kind(path)
    if kind != "file":
        return
    target = Path(path)
    if target.exists():
        _refuse_a_database(target)
        ok = os.access(target, os.W_OK) and os.access(target.resolve().parent, os.W_OK | os.X_OK)
    else:
        parent = target.parent if str(target.parent) else Path(".")
        ok = parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)
    if not ok:
        raise UserError(f"cannot write {path}", "choose a writable path for the output")


def write_text_file(path: str, text: str) -> None:
    write_file(path, text.encode())


def write_file(path: str | Path, data: bytes) -> None:
    """All or nothing (safefs.write_output): '-' is standard output, a device is written in
    place, a file through a temporary name beside it; a FIFO, socket or directory is refused."""
    target = Path(path)
    if str(path) != safefs.STDOUT and safefs.output_kind(str(path)) == "file":
        _refuse_a_database(target)
    safefs.write_output(str(path), data)
