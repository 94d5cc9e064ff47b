"""Helpers shared by the subcommands: the store flag, printing, writing files."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from rich.console import RenderableType

from pgknee.errors import UserError
from pgknee.report.terminal import render

DEFAULT_STORE = "pgknee.db"


def add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="PATH", default=os.environ.get("PGKNEE_STORE", DEFAULT_STORE),
                   help=f"the collector database (SQLite); default ./{DEFAULT_STORE} or $PGKNEE_STORE")


def _noise_pct(text: str) -> float:
    from pgknee.plan import check_noise_pct

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


def print_items(items: list[RenderableType]) -> None:
    sys.stdout.write(render(items, width=width(), color=sys.stdout.isatty() and not os.environ.get("NO_COLOR")))
    sys.stdout.flush()


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
    """Fail on an output path that cannot be written, without creating or changing it."""
    target = Path(path)
    if target.is_dir():
        raise UserError(f"cannot write {path}: it is a directory", "give a file name")
    _refuse_a_database(target)
    if target.exists():
        ok = os.access(target, os.W_OK)
    else:
        parent = target.parent if str(target.parent) else Path(".")
        ok = parent.is_dir() and os.access(parent, os.W_OK | os.X_OK)
    if not ok:
        raise UserError(f"cannot write {path}", "choose a writable path for the output")


def write_text_file(path: str, text: str) -> None:
    write_file(path, text.encode())


def write_file(path: str | Path, data: bytes) -> None:
    """Write all or nothing: through a temporary file beside it, renamed over it."""
    target = Path(path)
    if target.is_dir():
        raise UserError(f"cannot write {path}: it is a directory", "give a file name")
    _refuse_a_database(target)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {e.strerror}", "choose a writable path") from None
