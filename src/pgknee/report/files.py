"""A report as files: built (document.py), rendered (html.py or markdown.py) and written, HTML
as one self-contained file, markdown with its charts in a folder beside it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from pgknee.analyze.recommend import Recommendation
from pgknee.analyze.view import RunView
from pgknee.base.errors import UserError
from pgknee.report import document, html, markdown
from pgknee.report.output import chart_folder, write_file

LABELS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"  # several runs in one report: A, B, ... in order


def write(path: str, fmt: str, views: Sequence[RunView], opts: document.Options,
          say: Callable[[str], None] = lambda _: None, image_format: str = "png",
          recs: Sequence[Recommendation] | None = None) -> str:
    """Build and write the report; returns a one-line description of what was written."""
    labels = LABELS[:len(views)] if len(views) > 1 else ""
    say(("drawing the charts" if recs is not None else "fitting the scalability model and drawing the charts")
        + (f" of {len(views)} runs" if len(views) > 1 else ""))
    rep = document.build(views, opts, labels=labels, recs=recs)
    say(f"writing {len(rep.charts)} charts")
    if fmt == "html":
        data = html.render(rep).encode()
        write_file(path, data)
        where = "the report to standard output" if path == "-" else path
        return f"wrote {where} ({len(data) / 1e6:.1f} MB, {len(rep.charts)} charts, self-contained)"
    return _write_markdown(path, rep, image_format)


def _write_markdown(path: str, rep: document.Report, image_format: str) -> str:
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
        write_file(Path(path), text.encode())
    except UserError:  # a full disk halfway: take back the charts this call added
        for f in written:
            f.unlink(missing_ok=True)
        raise
    return f"wrote {path} and {len(files)} charts in {folder}/"
