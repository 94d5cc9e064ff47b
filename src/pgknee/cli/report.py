"""pgknee report: one run, or several side by side, as a self-contained HTML file or as
markdown with the charts in a folder beside it."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pgknee import safefs
from pgknee.analyze.recommend import Recommendation
from pgknee.analyze.run import RunView, build
from pgknee.cli.common import add_noise_threshold, add_store, check_writable, write_file
from pgknee.cli.recommend import add_recommend_options
from pgknee.errors import UserError
from pgknee.report import document, html, markdown
from pgknee.rules import SUMMARIES
from pgknee.store.db import Store, load_run

FORMATS = ("html", "md")
LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("report", help="write a report with charts: one self-contained HTML file, or markdown")
    p.add_argument("runs", nargs="+", metavar="RUN_ID",
                   help="a run (its variants side by side), or several runs to compare (A, B, ... in order)")
    p.add_argument("-o", "--output", required=True, metavar="PATH",
                   help="the file to write (report.html, or report.md with its charts in report_files/; "
                        "'-': HTML to standard output)")
    p.add_argument("--format", choices=FORMATS, help="html or md (default: from the file's extension, else html)")
    p.add_argument("--image-format", choices=markdown.IMAGE_FORMATS, default="png",
                   help="the chart files of a markdown report (default png)")
    p.add_argument("--summary", choices=SUMMARIES, help="over repetitions (default: the run's own)")
    add_noise_threshold(p)
    add_recommend_options(p)
    add_store(p)
    p.set_defaults(func=cmd_report)


def output_format(path: str, given: str | None) -> str:
    if given:
        return given
    return "md" if Path(path).suffix.lower() in (".md", ".markdown") else "html"


def chart_folder(path: str) -> Path:
    """Where a markdown report's charts go: report.md -> report_files/ beside it."""
    p = Path(path)
    return p.with_name(p.stem + "_files")


def check_output(path: str, fmt: str) -> None:
    """Refuse an output that cannot be written, before any work and without creating anything."""
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


def write(path: str, fmt: str, views: Sequence[RunView], opts: document.Options,
          say: Callable[[str], None] = lambda _: None, image_format: str = "png",
          recs: Sequence[Recommendation] | None = None) -> str:
    """Build and write the report; returns a one-line description of what was written."""
    labels = LABELS[:len(views)] if len(views) > 1 else ""
    say(("drawing the charts" if recs is not None else "fitting the scalability model and drawing the charts")
        + (f" of {len(views)} runs" if len(views) > 1 else ""))
    rep = document.build(views, opts, labels=labels, recs=recs)
    say(f"writing {len(rep.charts)} charts")
    target = Path(path)
    if fmt == "html":
        data = html.render(rep).encode()
        write_file(path, data)
        where = "the report to standard output" if path == "-" else path
        return f"wrote {where} ({len(data) / 1e6:.1f} MB, {len(rep.charts)} charts, self-contained)"
    folder = chart_folder(path)
    text, files = markdown.render(rep, folder.name, image_format)
    try:  # the charts first, each written whole; nothing else in the folder is touched
        folder.mkdir(exist_ok=True)
    except OSError as e:
        raise UserError(f"cannot write the charts to {folder}: {e.strerror}", "choose a writable path") from None
    written: list[Path] = []
    try:
        for name, data in files.items():
            new = not (folder / name).exists()
            write_file(folder / name, data)
            if new:
                written.append(folder / name)
        write_file(target, text.encode())
    except UserError:  # a full disk halfway: take back the charts this call added
        for f in written:
            f.unlink(missing_ok=True)
        raise
    return f"wrote {path} and {len(files)} charts in {folder}/"


def options_from(args: argparse.Namespace) -> document.Options:
    return document.Options(fraction=args.min_fraction, p99_target_ms=args.p99_target, spindles=args.spindles)


def cmd_report(args: argparse.Namespace) -> int:
    fmt = output_format(args.output, args.format)
    check_output(args.output, fmt)
    if len(args.runs) > len(LABELS):
        raise UserError(f"a report compares at most {len(LABELS)} runs")
    store = Store(args.store, create=False)
    datas = [load_run(store, r) for r in args.runs]
    ids = [d.run.run_id for d in datas]
    if len(set(ids)) < len(ids):
        raise UserError("the same run is given twice", "give each run once")
    views = [build(d, args.summary, args.noise_threshold) for d in datas]

    def say(text: str) -> None:
        print(f"pgknee: {text} ...", file=sys.stderr, flush=True)

    print(write(args.output, fmt, views, options_from(args), say, args.image_format),
          file=sys.stderr if args.output == "-" else sys.stdout)
    return 0
