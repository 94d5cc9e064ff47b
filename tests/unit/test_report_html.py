"""The report's charts, HTML and markdown renderings, from the synthetic run (no server)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from builders import step, with_run
from rich.table import Table

from pgknee.analyze.run import build
from pgknee.base.errors import UserError
from pgknee.model.results import RunData
from pgknee.report import charts as ch
from pgknee.report import document as doc
from pgknee.report import html, markdown
from pgknee.report import plotting as pl
from pgknee.report.files import write
from pgknee.report.output import chart_folder, check_output, output_format


def _with_progress(data: RunData) -> RunData:
    return replace(data, progress={s.step_id: [(float(t), 90.0 + t) for t in range(1, 6)] for s in data.steps})


def _charts(data: RunData) -> dict[str, pl.Chart]:
    view = build(data)
    return {c.kind: c for c in ch.charts_for(view, doc.recommendations(view, doc.Options()))}


@pytest.mark.parametrize(("counts", "expected"), [
    ((1, 2, 4, 8, 16, 32), True), ((2, 4, 8), True), ((25, 50, 75, 100, 125), False), ((2, 8), False),
    ((1, 2, 3), False), ((10, 20, 50, 100), True), ((1, 2, 4, 6), False)])
def test_doubling_sweeps_get_a_log_axis(counts: tuple[int, ...], expected: bool) -> None:
    assert pl.doubling(counts) is expected


def test_charts_carry_the_measured_points(run_data: RunData) -> None:
    charts = _charts(_with_progress(run_data))
    # TPS at 2 counts, and mean, p95 and p99 latency at 2 counts each
    assert charts["throughput-latency"].points == 2 + 3 * 2
    assert charts["tps-stddev"].points == 2
    # 5 CPU parts + load + runnable, at the one count with OS samples
    assert charts["cpu"].points == 7
    # CPU:running, Lock:transactionid, LWLock:WALWrite, each at both counts
    assert charts["waits"].points == 3 * 2
    assert charts["timeline"].points == 4 * 5
    assert "pooler" not in charts and "idle-memory" not in charts  # no data for them: not drawn
    assert "scalability" not in charts  # two counts: no fit


def test_svg_marks_data_and_ids_do_not_collide(run_data: RunData) -> None:
    charts = _charts(_with_progress(run_data))
    svgs = {k: pl.svg(c) for k, c in charts.items()}
    assert all(s.startswith("<svg") for s in svgs.values())
    assert 'id="data-throughput-latency-0"' in svgs["throughput-latency"]
    # hovering a line shows its values (an SVG title: no script)
    assert ('<g id="data-throughput-latency-0"><title>base, TPS: c2 100 (100..100); c8 200 (180..220)</title>'
            in svgs["throughput-latency"])
    assert "<title>c8 Lock:transactionid AAS 1.50</title>" in svgs["waits"]  # 60 / 40 snapshots
    assert len(re.findall(r'id="data-waits-[^"]+"', svgs["waits"])) == 3 * 2  # one per bar
    ids = {k: set(re.findall(r'id="([^"]+)"', s)) for k, s in svgs.items()}
    kinds = list(ids)
    for i, a in enumerate(kinds):
        for b in kinds[i + 1:]:
            assert not ids[a] & ids[b], (a, b, ids[a] & ids[b])
    assert pl.png(charts["tps-stddev"]).startswith(b"\x89PNG")


def test_html_is_self_contained_and_marks_failed_and_missing_steps(run_data: RunData) -> None:
    plan = json.loads(run_data.run.plan_json)
    plan["clients"] = [2, 8, 32]  # c32 was planned but never ran
    data = with_run(run_data, plan_json=json.dumps(plan), status="interrupted", steps_planned=6)
    data = replace(data, steps=[*data.steps[:3], step(step_id=4, seq=4, clients=8, rep=2, status="failed",
                                                      status_reason="pgbench: connection refused", tps=None)])
    rep = doc.build([build(data)])
    text = html.render(rep)
    assert text.startswith("<!DOCTYPE html>")
    assert not re.search(r"<script|<link|@import|url\((?!#)|src=|href=\"(?!#)", text)
    assert "FAILED" in text and "pgbench: connection refused" in text
    assert text.count("NOT RUN") == 2  # c32 rep 1 and rep 2
    assert "1 step(s) did not complete and 2 planned step(s) were never run" in text
    assert [h.text for h in rep.headings()][:2] == ["Recommendation", "Throughput and latency"]
    assert re.search(r'<figure class="chart" id="chart-throughput-latency" data-chart="throughput-latency" '
                     r'data-points="\d+"', text)


def test_tables_keep_sections_alignment_and_escape() -> None:
    t = Table(title="T <1>")
    t.add_column("Name")
    t.add_column("TPS", justify="right")
    t.add_row("a|b", "1,000")
    t.add_section()
    t.add_row("<x>", "WARN +20%")
    out = html.table(t)
    assert "<caption>T &lt;1&gt;</caption>" in out
    assert "<th class=r>TPS</th>" in out
    assert "<tr class=section><td>a|b</td>" in out
    assert '<td class="r warn">WARN +20%</td>' in out and "&lt;x&gt;" in out
    md = markdown.table(t)
    assert "| a\\|b | 1,000 |" in md and "| --- | ---: |" in md


def test_markdown_links_every_chart_it_returns(run_data: RunData) -> None:
    rep = doc.build([build(_with_progress(run_data))])
    text, files = markdown.render(rep, "r_files", "png")
    assert set(files) == {f"{c.key}.png" for c in rep.charts}
    for name, data in files.items():
        assert f"](r_files/{name})" in text
        assert data.startswith(b"\x89PNG")
    _, svgs = markdown.render(rep, "r_files", "svg")
    assert all(n.endswith(".svg") and d.startswith(b"<svg") for n, d in svgs.items())


def test_comparison_of_two_runs_labels_them(run_data: RunData) -> None:
    other = with_run(run_data, run_id="20250102-000000-beef")
    rep = doc.build([build(run_data), build(other)], labels="AB")
    assert rep.title == "pgknee comparison — A = 20250101-000000-abcd, B = 20250102-000000-beef"
    text = html.render(rep)
    assert "Variants side by side" in text and ">A<" in text and ">B<" in text


def test_output_paths(tmp_path: Path) -> None:
    assert output_format("x/report.md", None) == "md" and output_format("r.HTML", None) == "html"
    assert output_format("r.txt", "md") == "md"
    assert chart_folder("out/report.md") == Path("out/report_files")
    (tmp_path / "r_files").write_text("not a folder")
    with pytest.raises(UserError, match="a file of that name exists"):
        check_output(str(tmp_path / "r.md"), "md")
    with pytest.raises(UserError, match="it is a directory"):
        check_output(str(tmp_path), "html")
    with pytest.raises(UserError, match="cannot write"):
        check_output(str(tmp_path / "missing" / "r.html"), "html")
    assert list(tmp_path.iterdir()) == [tmp_path / "r_files"]  # nothing created


def test_markdown_writes_its_charts_and_leaves_the_rest_of_the_folder_alone(run_data: RunData,
                                                                              tmp_path: Path) -> None:
    folder = tmp_path / "r_files"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    said = write(str(tmp_path / "r.md"), "md", [build(run_data)], doc.Options())
    charts = sorted(p.name for p in folder.iterdir() if p.suffix == ".png")
    assert said == f"wrote {tmp_path / 'r.md'} and {len(charts)} charts in {folder}/" and charts
    assert (folder / "notes.txt").read_text() == "mine"
    assert not [p for p in tmp_path.rglob(".*tmp-*")]  # no temporary file left


def test_environment_shows_every_fact_and_no_password(run_data: RunData) -> None:
    env = {**run_data.env, "pgknee": json.dumps(["pgknee", "run", "--dsn", "postgresql://u:pw9zz@h/db"]),
           "plan.source": "[target]\ndsn = 'host=h password=pw9zz'\n", "plan.file": "/p.toml",
           "pgbouncer.version": "1.18.0", "check.money": "money conserved"}
    text = html.render(doc.build([build(replace(run_data, env=env))]))
    assert "pw9zz" not in text
    assert "postgresql://u:***@h/db" in text and "password=***" in text
    assert "Other facts recorded with the run" in text and "pgbouncer.version" in text


def test_an_output_never_writes_over_a_store(tmp_path: Path) -> None:
    from pgknee.store.db import Store

    Store(tmp_path / "s.db").close()
    before = (tmp_path / "s.db").read_bytes()
    for fmt in ("html", "md"):
        with pytest.raises(UserError, match="is a SQLite database"):
            check_output(str(tmp_path / "s.db"), fmt)
    assert (tmp_path / "s.db").read_bytes() == before


def test_markdown_escapes_what_came_from_the_run() -> None:
    assert markdown.esc("x<script>alert(1)</script> *a* [b](c) | d_e") == (
        "x&lt;script&gt;alert(1)&lt;/script&gt; \\*a\\* \\[b\\](c) \\| d\\_e")
    block = markdown._block(doc.Code("a\n```\nb"), "f", "png", {})
    assert block.startswith("````\n") and block.endswith("\n````")


def test_the_report_options_and_writer_the_run_command_uses(run_data: RunData, tmp_path: Path) -> None:
    """pgknee run --report: options from the flags (cli.report), the writer in report/."""
    import argparse

    from pgknee.cli import report as cli_report
    from pgknee.report import files, output

    args = argparse.Namespace(min_fraction=0.9, p99_target=None, spindles=2)
    opts = cli_report.options_from(args)
    assert opts == doc.Options(fraction=0.9, p99_target_ms=None, spindles=2)
    out = str(tmp_path / "r.html")
    fmt = output.output_format(out, None)
    output.check_output(out, fmt)
    said = files.write(out, fmt, [build(run_data)], opts)
    assert said.startswith(f"wrote {out} (") and (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
