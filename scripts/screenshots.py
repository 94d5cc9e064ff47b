"""Screenshots of a pgknee HTML report's charts, for the docs: one PNG per chart kind (the
first chart of each), rendered by headless Chromium.

    .venv/bin/python scripts/screenshots.py report.html docs/screenshots [--kinds cpu,waits]

Needs Debian's chromium (make system-browsers) and the dev extras (playwright)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

CHROMIUM = "/usr/lib/chromium/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("report", type=Path)
    p.add_argument("outdir", type=Path)
    p.add_argument("--kinds", help="only these chart kinds, comma-separated")
    p.add_argument("--top", action="store_true", help="also the top of the page (report-top.png)")
    a = p.parse_args()
    wanted = set(a.kinds.split(",")) if a.kinds else None
    a.outdir.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        page = browser.new_page(viewport={"width": 1100, "height": 900}, device_scale_factor=1)
        page.goto(a.report.resolve().as_uri())
        if a.top:
            page.screenshot(path=str(a.outdir / "report-top.png"))
            print(a.outdir / "report-top.png")
        seen: set[str] = set()
        for fig in page.locator("figure.chart").all():
            kind = fig.get_attribute("data-chart") or ""
            if kind in seen or (wanted is not None and kind not in wanted):
                continue
            seen.add(kind)
            out = a.outdir / f"chart-{kind}.png"
            fig.screenshot(path=str(out))
            print(out)
        browser.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
