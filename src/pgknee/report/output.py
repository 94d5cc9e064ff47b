"""Where outputs go: a report's format and its charts folder, an output path checked before
any work (without creating or opening anything), and every file written whole (safefs). Only
the standard library and safefs: the CLI imports it before it knows what it will run."""

from __future__ import annotations

import os
from pathlib import Path

from pgknee.base.errors import UserError
from pgknee.system import safefs

FORMATS = ("html", "md")
IMAGE_FORMATS = ("png", "svg")  # of a markdown report's charts


def output_format(path: str, given: str | None) -> str:
    if given:
        return given
    return "md" if Path(path).suffix.lower() in (".md", ".markdown") else "html"


def chart_folder(path: str) -> Path:
    """Where a markdown report's charts go: report.md -> report_files/ beside it."""
    p = Path(path)
    return p.with_name(p.stem + "_files")


def check_output(path: str, fmt: str) -> None:
    """Refuse a report output that cannot be written, before any work and without creating anything."""
    check_writable(path)
    if fmt == "md" and path == "-":
        raise UserError("a markdown report keeps its charts in files beside it, so it cannot go to standard "
                        "output", "give it a file name, or write HTML ('-' with --format html)")
    if fmt == "md":
        folder = chart_folder(path)
        if folder.is_symlink() and os.geteuid() == 0 and safefs.writable_by_others(folder.parent):
            raise UserError(f"{folder} is a symbolic link in a directory other users can write: as root, pgknee "
                            "does not follow it", "remove it, or write the report in a directory of root's")
        if folder.exists() and not folder.is_dir():
            raise UserError(f"cannot write the charts to {folder}: a file of that name exists",
                            "move it, or choose another output name")
        if folder.exists() and not os.access(folder, os.W_OK | os.X_OK):
            raise UserError(f"cannot write the charts to {folder}", "choose a writable path for the output")


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
    from pgknee.system import proc

    proc.check_ctrl_c()  # a Ctrl-C that came, though an import swallowed it: nothing written
    target = Path(path)
    if str(path) != safefs.STDOUT and safefs.output_kind(str(path)) == "file":
        _refuse_a_database(target)
    safefs.write_output(str(path), data)
