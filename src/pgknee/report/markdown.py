"""The report as markdown, for a wiki or a pull request: pipe tables, and the charts as PNG
(or SVG) files in a folder beside it, linked relatively. Returns the text and the files;
only the CLI writes."""

from __future__ import annotations

import html
import re

from rich.table import Table

from pgknee.report import document as doc
from pgknee.report import plotting as pl
from pgknee.report.html import cell_text, table_rows

_SPECIAL = re.compile(r"([\\`*_\[\]|#])")


def esc(text: str) -> str:
    """Text as markdown shows it literally: its markdown characters backslash-escaped and <, >
    and & as entities (a variant name or a pgbench error cannot turn into markup)."""
    return html.escape(_SPECIAL.sub(r"\\\1", text), quote=False)


def _cell(text: str) -> str:
    return esc(text).replace("\n", "<br>")


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks inside."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


def table(t: Table) -> str:
    header, rows, _ends = table_rows(t)
    if not t.show_header:
        header = [""] * len(header)
    align = ["---:" if c.justify == "right" else "---" for c in t.columns]
    lines = [f"**{_cell(cell_text(t.title))}**", ""] if t.title else []
    lines += ["| " + " | ".join(_cell(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _block(b: doc.Block, folder: str, fmt: str, files: dict[str, bytes]) -> str:
    if isinstance(b, doc.Heading):
        return "#" * b.level + " " + esc(b.text)
    if isinstance(b, doc.Para):
        prefix = {"headline": "**▶ ", "warning": "> ⚠ ", "ok": "✓ ", "bad": "✗ ", "note": "_"}.get(b.kind, "")
        suffix = {"headline": "**", "note": "_"}.get(b.kind, "")
        return prefix + esc(b.text).replace("\n", "  \n") + suffix
    if isinstance(b, doc.Bullets):
        return "\n".join(("- ⚠ " if b.kind == "warning" else "- ") + esc(x) for x in b.items)
    if isinstance(b, doc.TableBlock):
        return table(b.table)
    if isinstance(b, doc.ChartBlock):
        c = b.chart
        name = f"{c.key}.{fmt}"
        files[name] = pl.png(c) if fmt == "png" else pl.svg(c).encode()
        return f"![{esc(c.title)}]({folder}/{name})\n\n_{esc(c.title)}: {esc(c.caption)}_"
    if isinstance(b, doc.KeyValues):
        return f"**{esc(b.title)}**\n\n" + "\n".join(f"- {esc(k)}: {_cell(v)}" for k, v in b.rows)
    if isinstance(b, doc.Code):
        return _fence(b.text)
    inner = "\n\n".join(_block(x, folder, fmt, files) for x in b.blocks)
    return f"<details><summary>{html.escape(b.summary)}</summary>\n\n{inner}\n\n</details>"


def render(report: doc.Report, folder: str, image_format: str = "png") -> tuple[str, dict[str, bytes]]:
    """The markdown text, and the chart files (name -> bytes) it links under `folder`."""
    files: dict[str, bytes] = {}
    parts = [f"# {esc(report.title)}"] + [_block(b, folder, image_format, files) for b in report.blocks]
    return "\n\n".join(parts) + "\n", files
