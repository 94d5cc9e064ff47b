"""The report as markdown, for a wiki or a pull request: pipe tables, and the charts as PNG
(or SVG) files in a folder beside it, linked relatively. Returns the text and the files;
only the CLI writes."""

from __future__ import annotations

from rich.table import Table

from pgknee.report import charts as ch
from pgknee.report import document as doc
from pgknee.report.html import cell_text, table_rows

IMAGE_FORMATS = ("png", "svg")


def _esc(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def table(t: Table) -> str:
    header, rows, _ends = table_rows(t)
    if not t.show_header:
        header = [""] * len(header)
    align = ["---:" if c.justify == "right" else "---" for c in t.columns]
    lines = [f"**{_esc(cell_text(t.title))}**", ""] if t.title else []
    lines += ["| " + " | ".join(_esc(h) for h in header) + " |", "| " + " | ".join(align) + " |"]
    lines += ["| " + " | ".join(_esc(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _block(b: doc.Block, folder: str, fmt: str, files: dict[str, bytes]) -> str:
    if isinstance(b, doc.Heading):
        return "#" * b.level + " " + b.text
    if isinstance(b, doc.Para):
        prefix = {"headline": "**▶ ", "warning": "> ⚠ ", "ok": "✓ ", "bad": "✗ ", "note": "_"}.get(b.kind, "")
        suffix = {"headline": "**", "note": "_"}.get(b.kind, "")
        return prefix + b.text.replace("\n", "  \n") + suffix
    if isinstance(b, doc.Bullets):
        return "\n".join(("- ⚠ " if b.kind == "warning" else "- ") + x for x in b.items)
    if isinstance(b, doc.TableBlock):
        return table(b.table)
    if isinstance(b, doc.ChartBlock):
        c = b.chart
        name = f"{c.key}.{fmt}"
        files[name] = ch.png(c) if fmt == "png" else ch.svg(c).encode()
        return f"![{c.title}]({folder}/{name})\n\n_{c.title}: {c.caption}_"
    if isinstance(b, doc.KeyValues):
        return f"**{b.title}**\n\n" + "\n".join(f"- {k}: `{v}`" for k, v in b.rows)
    if isinstance(b, doc.Code):
        return "```\n" + b.text + "\n```"
    inner = "\n\n".join(_block(x, folder, fmt, files) for x in b.blocks)
    return f"<details><summary>{b.summary}</summary>\n\n{inner}\n\n</details>"


def render(report: doc.Report, folder: str, image_format: str = "png") -> tuple[str, dict[str, bytes]]:
    """The markdown text, and the chart files (name -> bytes) it links under `folder`."""
    files: dict[str, bytes] = {}
    parts = [f"# {report.title}"] + [_block(b, folder, image_format, files) for b in report.blocks]
    return "\n\n".join(parts) + "\n", files
