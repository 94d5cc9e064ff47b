"""Helpers shared by the subcommands: the store and noise flags, printing, the outputs. Light
on purpose (every command's parser is built from it, --help included): the renderer loads when
something is printed, and files are written by report/output.py."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

from pgknee.base.errors import UserError
from pgknee.model.rules import DEFAULT_NOISE_PCT, check_noise_pct
from pgknee.system import safefs

if TYPE_CHECKING:
    from rich.console import RenderableType



DEFAULT_STORE = "pgknee.db"


def variant_suffix(variant: str) -> str:
    """' NAME' after a step's label ('c8 pooled'); nothing for 'base', a run's one variant by default."""
    return "" if variant == "base" else f" {variant}"


def default_store() -> str:
    """The store when --store is not given: $PGKNEE_STORE_DSN (a PostgreSQL store's DSN, which
    may hold its password), $PGKNEE_STORE, or ./pgknee.db."""
    return os.environ.get("PGKNEE_STORE_DSN") or os.environ.get("PGKNEE_STORE") or DEFAULT_STORE


def add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", metavar="PATH|DSN", default=default_store(),
                   help=f"the collector database: an SQLite file, or a PostgreSQL database "
                        f"(postgresql://user@host/db; its password in ~/.pgpass or in a DSN in $PGKNEE_STORE_DSN); "
                        f"default $PGKNEE_STORE_DSN, $PGKNEE_STORE or ./{DEFAULT_STORE}")


def _noise_pct(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage") from None
    try:
        return check_noise_pct(value)
    except UserError as e:
        raise argparse.ArgumentTypeError(e.message) from None


def add_noise_threshold(p: Any, *, default_note: str = f"the run's own, {DEFAULT_NOISE_PCT:g}%% unless it set one"
                        ) -> None:
    p.add_argument("--noise-threshold", type=_noise_pct, metavar="PCT",
                   help="flag a step as noisy when its repetitions' TPS spread, (max-min)/median, exceeds PCT "
                        f"percent (default: {default_note})")


class Renamed(argparse.Action):
    """An option's old name, kept for one release: it still works, and says its new name once on
    standard error. Hidden from --help."""

    def __init__(self, option_strings: list[str], dest: str, new: str = "", **kwargs: Any) -> None:
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)
        self.new = new

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        print(f"pgknee: note: {option_string} is now {self.new}; the old name goes in the next release",
              file=sys.stderr)
        setattr(namespace, self.dest, values)


def width() -> int:
    return max(100, shutil.get_terminal_size((140, 40)).columns)


def print_items(items: list[RenderableType], *, to_stderr: bool = False) -> None:
    """The tables, on standard output (or standard error, when a JSON or report output was asked
    for on standard output)."""
    from pgknee.report.terminal import render

    out = sys.stderr if to_stderr else sys.stdout
    out.write(render(items, width=width(), color=out.isatty() and not os.environ.get("NO_COLOR")))
    out.flush()


def stdout_outputs(*paths: str | None) -> bool:
    """Whether an output goes to standard output ('-'); at most one may."""
    taken = [p for p in paths if p == safefs.STDOUT]
    if len(taken) > 1:
        raise UserError("only one output can go to standard output ('-')", "give the others a file name")
    return bool(taken)
