"""The report as one self-contained HTML file: inline CSS, charts as inline SVG, no script,
no font or image fetched. Renderers return text; only the CLI writes."""

from __future__ import annotations

import html
from datetime import UTC, datetime
from importlib import resources
from string import Template

from rich.table import Table
from rich.text import Text

from pgknee import __version__
from pgknee.report import document as doc
from pgknee.report import plotting as pl


def _template(name: str) -> str:
    return resources.files("pgknee.report").joinpath("templates", name).read_text(encoding="utf-8")


def cell_text(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def table_rows(t: Table) -> tuple[list[str], list[list[str]], list[bool]]:
    """A rich table's header, rows (as plain text) and which rows end a section."""
    header = [cell_text(c.header) for c in t.columns]
    columns = [[cell_text(x) for x in c.cells] for c in t.columns]
    n = max((len(c) for c in columns), default=0)
    rows = [[col[i] if i < len(col) else "" for col in columns] for i in range(n)]
    ends = [bool(t.rows[i].end_section) if i < len(t.rows) else False for i in range(n)]
    return header, rows, ends


def _class(names: str) -> str:
    """The class attribute of an element, none without a class name."""
    return f' class="{names}"' if names else ""


def _cell_class(text: str, right: bool) -> str:
    classes = ["r"] if right else []
    if text.startswith(("WARN", "FAILED", "INTERRUPTED", "RUNNING", "NOT RUN")):
        classes.append("warn" if text.startswith("WARN") else "failed")
    return _class(" ".join(classes))


def table(t: Table) -> str:
    header, rows, ends = table_rows(t)
    right = [c.justify == "right" for c in t.columns]
    out = ['<div class="tablewrap"><table>']
    if t.title:
        out.append(f"<caption>{html.escape(cell_text(t.title))}</caption>")
    if t.show_header:
        out.append("<thead><tr>" + "".join(f"<th{' class=r' if r else ''}>{html.escape(h)}</th>"
                                           for h, r in zip(header, right, strict=True)) + "</tr></thead>")
    out.append("<tbody>")
    for row, end in zip(rows, ends, strict=True):
        cells = "".join(f"<td{_cell_class(c, r)}>{_multiline(c)}</td>" for c, r in zip(row, right, strict=True))
        out.append(f"<tr{' class=section' if end else ''}>{cells}</tr>")
    out.append("</tbody></table></div>")
    return "\n".join(out)


def _multiline(text: str) -> str:
    return html.escape(text).replace("\n", "<br>")


def chart(c: pl.Chart) -> str:
    return (f'<figure class="chart" id="chart-{c.key}" data-chart="{c.kind}" data-points="{c.points}">\n'
            f"{pl.svg(c)}\n<figcaption><b>{html.escape(c.title)}</b>{html.escape(c.caption)}</figcaption></figure>")


def block(b: doc.Block) -> str:
    if isinstance(b, doc.Heading):
        return f'<h{b.level} id="{b.anchor}">{html.escape(b.text)}</h{b.level}>'
    if isinstance(b, doc.Para):
        return f"<p{_class(b.kind)}>{_multiline(b.text)}</p>"
    if isinstance(b, doc.Bullets):
        return f"<ul{_class(b.kind)}>" + "".join(f"<li>{html.escape(x)}</li>" for x in b.items) + "</ul>"
    if isinstance(b, doc.TableBlock):
        return table(b.table)
    if isinstance(b, doc.ChartBlock):
        return chart(b.chart)
    if isinstance(b, doc.KeyValues):
        rows = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in b.rows)
        return f"<h3>{html.escape(b.title)}</h3><dl class=\"kv\">{rows}</dl>"
    if isinstance(b, doc.Code):
        return f'<pre class="code">{html.escape(b.text)}</pre>'
    return (f"<details><summary>{html.escape(b.summary)}</summary>\n" + "\n".join(block(x) for x in b.blocks)
            + "</details>")


def render(report: doc.Report, *, generated: datetime | None = None) -> str:
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    toc = "".join(f'<a href="#{h.anchor}">{html.escape(h.text)}</a>' for h in report.headings())
    return Template(_template("report.html")).substitute(
        title=html.escape(report.title), css=_template("report.css"), version=__version__, generated=when,
        toc=toc, body="\n".join(block(b) for b in report.blocks), charts=len(report.charts))
