"""How the terminal's tables write a number, a figure over repetitions, a ratio; and the
metrics-by-client-count layout they share. Formatting only."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TypeVar

from rich import box
from rich.table import Table

from pgknee.analyze.compare import Ratio
from pgknee.analyze.view import Spread
from pgknee.analyze.words import clause

R = TypeVar("R")

WIDE = 7  # more client counts than this: one row per client count instead of one column


def cell(v: float | None, spec: str, unit: str = "", none: str = "-") -> str:
    """A value that may be missing: formatted with `spec` and followed by `unit`, or `none`."""
    return none if v is None else format(v, spec) + unit


def fmt(v: float | None, digits: int = 2) -> str:
    return cell(v, f",.{digits}f")


def value(f: Spread | None, digits: int = 2) -> str:
    """The figure shown (median or best), '-' without one."""
    return fmt(f.value if f else None, digits)


def with_change(f: Spread | None, change: float | None, digits: int) -> str:
    """'1,906.79 +30.4%': a figure and its change against the first client count."""
    if f is None:
        return "-"
    return fmt(f.value, digits) + clause(" {:+.1f}%", change)


def with_range(f: Spread | None, digits: int) -> str:
    """'1,463 (1,355..1,570)': a figure and its min..max when it was repeated."""
    if f is None:
        return "-"
    if f.n < 2:
        return fmt(f.value, digits)
    return f"{fmt(f.value, digits)} ({fmt(f.lo, digits)}..{fmt(f.hi, digits)})"


def across(rows: Sequence[R | None], cell_of: Callable[[R], str]) -> list[str]:
    """A table row's cells, one per client count: `cell_of` its record, '-' where it has none."""
    return ["-" if r is None else cell_of(r) for r in rows]


def span(f: Spread | None, digits: int) -> str:
    """'1,355..1,570': a figure's min..max over the repetitions, '-' without one."""
    return "-" if f is None else f"{fmt(f.lo, digits)}..{fmt(f.hi, digits)}"


def ratio(r: Ratio | None) -> str:
    if r is None:
        return ""
    if r.lo is None or r.hi is None:
        return f"×{r.value:.2f} (1 rep)"
    return f"×{r.value:.2f} [{r.lo:.2f}..{r.hi:.2f}]"


def matrix(title: str, header: list[str], rows: list[list[str]]) -> Table:
    """Metrics as rows and client counts as columns (the article's layout) while it
    fits; transposed when the sweep has many client counts."""
    if len(header) - 1 > WIDE + 1:
        header, rows = [header[0].replace("Metric", "Step"), *[r[0] for r in rows]], \
            [[header[i], *[r[i] for r in rows]] for i in range(1, len(header))]
    t = columns(Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left"), header, header[:1])
    for r in rows:
        t.add_row(*r)
    return t


def columns(t: Table, header: Iterable[str], left: Collection[str], fold: Collection[str] = ()) -> Table:
    """The table's columns: those named in `left` (words) justified left, the others (figures)
    right; those named in `fold` wrap their text instead of cutting it."""
    for h in header:
        t.add_column(h, justify="left" if h in left else "right", overflow="fold" if h in fold else "ellipsis")
    return t
