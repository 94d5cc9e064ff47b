"""The report of a stored run (the golden store, made by real runs: scripts/make_golden.py),
rendered in real browsers: headless Chromium driven by Playwright (Debian's chromium, no browser
download), and Firefox's own headless screenshot. (A run writing its own report as it ends:
test_sweep.py.)"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from .conftest import CliResult, golden_runs, make_golden, pgknee, sql

CHROMIUM = "/usr/lib/chromium/chromium"  # the binary itself: /usr/bin/chromium is a shell wrapper
BROWSER_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync"]
# every chart kind the sweep below has data for
KINDS = {"throughput-latency", "tps-stddev", "scalability", "cpu", "waits", "timeline", "pooler", "idle-memory"}
SHOTS = Path(os.environ.get("PGKNEE_SCREENSHOT_DIR", "")) if os.environ.get("PGKNEE_SCREENSHOT_DIR") else None


def _colours(img: Any) -> set[tuple[int, int, int]]:
    # packed into one integer a pixel: PIL's getcolors(maxcolors=2**24) allocates its table for
    # 16M colours (0.4 s a chart, 14 s of the suite's CPU); this is 0.05 s
    rgb = np.asarray(img.convert("RGB"), dtype=np.uint32)
    return {(int(c) >> 16, (int(c) >> 8) & 255, int(c) & 255)
            for c in np.unique((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2])}


def _need(path: str | None, what: str) -> None:
    if path is None or not os.path.exists(path):
        if os.environ.get("CI"):
            pytest.fail(f"{what} is missing: 'make test' installs it (scripts/setup-system.sh --browsers)")
        pytest.skip(f"{what} is not installed (make system-browsers)")


@pytest.fixture(scope="module")
def reported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, CliResult]]:
    """The report of the golden store's run A (a direct, a pooled and an idle-sessions variant over
    three client counts, two repetitions), written by 'pgknee report'."""
    d = tmp_path_factory.mktemp("report")
    store, out = d / "r.db", d / "r.html"
    make_golden(store)
    r = pgknee("report", golden_runs(store)[0], "--store", str(store), "-o", str(out), cwd=d)
    assert r.code == 0, r.err
    yield store, out, r


@pytest.mark.xdist_group("report")  # the tests of one rendered report: one test process renders it
def test_the_report_is_self_contained_with_every_chart(reported: tuple[Path, Path, CliResult]) -> None:
    store, out, r = reported
    assert re.search(r"wrote .*r\.html \(\d+\.\d MB, \d+ charts, self-contained\)", r.err + r.out)
    text = out.read_text()
    assert 50_000 < len(text) < 3_000_000
    # nothing to fetch: no script, stylesheet, image or font from anywhere; references are in-page
    assert not re.search(r"<script|<link|<img|@import|url\((?!#)|src=|href=\"(?!#)", text)
    kinds = set(re.findall(r'data-chart="([a-z-]+)"', text))
    assert kinds == KINDS
    for title in ("Recommendation", "Throughput and latency", "Data Summary", "Variants side by side",
                  "Pooler — pooled:transaction:pool=2", "Idle sessions and memory", "Wait events", "Checks",
                  "Steps", "Environment", "Server settings", "max_connections"):
        assert title in text, title
    # the command line, to reproduce the run
    argv = json.loads(str(sql(store, "SELECT argv_json FROM run_commands WHERE purpose = 'pgknee' AND run_id = ?",
                              golden_runs(store)[0])[0][0]))
    assert argv[:2] == ["pgknee", "run"] and " ".join(argv[:6]) in text


def _open(browser: Any, path: Path) -> tuple[Any, list[str], list[str]]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    fetched: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))

    def route(r: Any) -> None:
        if r.request.url.startswith("file:"):
            r.continue_()
        else:
            fetched.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(path.as_uri(), wait_until="load")
    return page, errors, fetched


# per chart: its drawn size, and for each data artist its drawn extent
CHART_JS = """() => [...document.querySelectorAll('figure.chart')].map(f => {
  const svg = f.querySelector('svg'); const r = svg.getBoundingClientRect();
  const marks = [...svg.querySelectorAll('[id^="data-"]')].map(g => { const b = g.getBBox();
      return [b.width, b.height, g.querySelectorAll('path, use').length]; });
  return {key: f.id, kind: f.dataset.chart, points: +f.dataset.points, w: r.width, h: r.height, marks: marks,
          caption: f.querySelector('figcaption').textContent};
})"""


@pytest.mark.xdist_group("report")
def test_every_chart_is_drawn_with_data_in_chromium(reported: tuple[Path, Path, CliResult],
                                                    tmp_path: Path) -> None:
    _need(CHROMIUM, "Chromium")
    from playwright.sync_api import sync_playwright

    _, out, _ = reported
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=BROWSER_ARGS)
        try:
            page, errors, fetched = _open(browser, out)
            charts = page.evaluate(CHART_JS)
            assert {c["kind"] for c in charts} == KINDS
            for c in charts:
                assert c["w"] > 500 and c["h"] > 200, c["key"]
                assert c["points"] > 0, c["key"]
                assert c["marks"], f"{c['key']}: no data drawn"
                # a data artist with an extent: a line through several points, a bar with a height
                assert any(w > 0 and h > 0 and n > 0 for w, h, n in c["marks"]), (c["key"], c["marks"])
                assert len(c["caption"]) > 40, c["key"]
            # one screenshot of each kind (the first), kept with the test's files
            shots = SHOTS or tmp_path
            shots.mkdir(parents=True, exist_ok=True)
            seen: set[str] = set()
            for c in charts:
                if c["kind"] not in seen:
                    seen.add(c["kind"])
                    page.locator(f"#{c['key']}").screenshot(path=str(shots / f"chart-{c['kind']}.png"))
            page.screenshot(path=str(shots / "report-top.png"))
            assert errors == [] and fetched == []
        finally:
            browser.close()
    for kind in KINDS:
        img = Image.open(shots / f"chart-{kind}.png")
        assert img.width > 500 and len(_colours(img)) > 50, kind  # not a blank box


@pytest.mark.xdist_group("report")
def test_firefox_renders_it_too(reported: tuple[Path, Path, CliResult], tmp_path: Path) -> None:
    _need(shutil.which("firefox-esr"), "Firefox")
    _, out, _ = reported
    shot, profile = tmp_path / "ff.png", tmp_path / "profile"
    profile.mkdir()  # Firefox waits forever on a -profile folder that does not exist
    subprocess.run(["firefox-esr", "--headless", "--no-remote", "-profile", str(profile),
                    "--screenshot", str(shot), "--window-size=1280,2400", out.as_uri()],
                   env={**os.environ, "HOME": str(tmp_path), "MOZ_HEADLESS": "1"}, capture_output=True, timeout=120,
                   check=True)
    img = Image.open(shot)
    assert img.size == (1280, 2400)
    # the recommendation's scalability chart and the throughput chart are in the first 2400 px:
    # the page has the charts' colours, not just text
    colours = _colours(img)
    assert len(colours) > 200
    assert any(abs(r - 0x1f) < 12 and abs(g - 0x77) < 12 and abs(b - 0xb4) < 12 for r, g, b in colours)


def test_markdown_report_with_its_charts(golden: Path, tmp_path: Path) -> None:
    md = tmp_path / "r.md"
    r = pgknee("report", golden_runs(golden)[0], "--store", str(golden), "-o", str(md))
    assert r.code == 0, r.err
    text = md.read_text()
    links = re.findall(r"!\[[^\]]*\]\((r_files/[^)]+\.png)\)", text)
    assert {Path(x).stem.split("-")[0] for x in links} >= {"throughput", "tps", "cpu", "waits", "timeline",
                                                         "pooler", "idle", "scalability"}
    for link in links:
        img = Image.open(tmp_path / link)
        assert img.width > 500 and len(_colours(img)) > 20, link
    assert "| Metric |" in text and "## Recommendation" in text
    assert sorted(p.name for p in (tmp_path / "r_files").iterdir()) == sorted(Path(x).name for x in links)


def test_comparison_report_of_two_runs(golden: Path, tmp_path: Path) -> None:
    ids = golden_runs(golden)
    out = tmp_path / "c.html"
    r = pgknee("report", *ids, "--store", str(golden), "-o", str(out))
    assert r.code == 0, r.err
    text = out.read_text()
    assert f"A = {ids[0]}, B = {ids[1]}" in text
    # the first run's three variants and the second run, aligned per client count
    variants = [v for (v,) in sql(golden, "SELECT DISTINCT variant FROM steps WHERE run_id = ? ORDER BY seq", ids[0])]
    assert len(variants) == 3 and variants[0] == "direct"
    for label in (*(f"A:{v}" for v in variants), ">B<"):
        assert label in text, label
    assert "TPS vs A:direct" in text


def test_bad_input_is_one_line_and_writes_nothing(golden: Path, tmp_path: Path) -> None:
    store = golden
    before = sorted(p.name for p in tmp_path.iterdir())
    for args, message in (
            (("report", "nope", "-o", str(tmp_path / "x.html")), "no run"),
            (("report", "last", "-o", str(tmp_path / "no" / "x.html")), "cannot write"),
            (("report", "last", "-o", str(tmp_path)), "it is a directory"),
            (("report", "last", "last", "-o", str(tmp_path / "x.html")), "the same run is given twice"),
            (("run", "--clients", "2", "--duration", "2s", "--report", str(tmp_path / "no" / "r.html"),
              "--store", str(tmp_path / "new.db")), "cannot write")):
        r = pgknee(*args, "--store", str(store)) if args[0] == "report" else pgknee(*args, cwd=tmp_path)
        assert r.code != 0, args
        assert message in r.err, (args, r.err)
        assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err, r.err
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_run_with_failed_and_missing_steps_reports_what_exists(golden: Path, tmp_path: Path) -> None:
    """What an interrupted run leaves: the store as a crash or Ctrl-C leaves it (a step failed,
    the last ones never started). Cut after the first client count: no scalability fit to wait for."""
    copy = golden
    run_a = golden_runs(copy)[0]
    with contextlib.closing(sqlite3.connect(copy)) as db, db:
        last = db.execute("SELECT max(seq) FROM steps WHERE run_id = ?", (run_a,)).fetchone()[0]
        kept = db.execute("SELECT max(seq) FROM steps WHERE run_id = ? AND clients = 1", (run_a,)).fetchone()[0]
        db.execute("PRAGMA foreign_keys = ON")
        db.execute("DELETE FROM steps WHERE run_id = ? AND seq > ?", (run_a, kept))
        db.execute("UPDATE steps SET status = 'failed', status_reason = 'pgbench: server closed the connection', "
                   "tps = NULL WHERE run_id = ? AND seq = 2", (run_a,))
        db.execute("UPDATE runs SET status = 'interrupted' WHERE run_id = ?", (run_a,))
    out = tmp_path / "cut.html"
    r = pgknee("report", run_a, "--store", str(copy), "-o", str(out))
    assert r.code == 0, r.err
    text = out.read_text()
    assert "FAILED" in text and "pgbench: server closed the connection" in text
    assert last - kept >= 3 and text.count(">NOT RUN<") == last - kept
    assert f"1 step(s) did not complete and {last - kept} planned step(s) were never run" in text
    assert 'data-chart="throughput-latency"' in text
