"""The CI gate (pgknee compare --fail-if) as the terminal shows it and as JSON: each rule at each
client count, the change, its 95% interval, PASS or FAIL; a last line with the verdict."""

from __future__ import annotations

from typing import Any

from rich import box
from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from pgknee.analyze.gate import Gate, GateRow
from pgknee.report.cells import cell, columns, fmt


def _interval(row: GateRow) -> str:
    r = row.ratio
    if r is None or r.lo is None or r.hi is None:
        return "unknown (1 rep)" if r is not None else "-"
    return f"{100 * (r.lo - 1):+.1f}%..{100 * (r.hi - 1):+.1f}%"


def gate_items(gate: Gate) -> list[RenderableType]:
    what = (f"each variant against {gate.base}, paired repetitions" if gate.paired
            else f"NEW against {gate.base}, Welch's interval over the repetitions")
    t = columns(Table(title=f"Gate (--fail-if): {what}; a step fails when its change passes the threshold and its "
                            "95% interval excludes no change; Base and New are the geometric means of the "
                            "repetitions, Change their ratio", box=box.SIMPLE_HEAVY, title_justify="left"),
                ("Rule", "Clients", "Variant", "Base", "New", "Change", "95% interval", "Verdict"),
                ("Rule", "Variant", "Verdict"))
    last = None
    for row in gate.rows:
        if last is not None and row.rule != last:
            t.add_section()
        digits = 0 if row.rule.metric == "tps" else 2
        change = cell(row.change_pct, "+.1f", "%")
        t.add_row(row.rule.text if row.rule != last else "", f"c{row.clients}", row.variant,
                  fmt(row.base, digits), fmt(row.new, digits), change, _interval(row),
                  Text(row.verdict, style="bold red" if row.failed else "green"))
        last = row.rule
    items: list[RenderableType] = [t]
    if gate.unmatched:
        items.append(Text("not compared (nothing to compare with): " + ", ".join(gate.unmatched), style="dim"))
    items.append(Text(verdict_line(gate), style="bold red" if gate.failed else "bold green"))
    return items


def verdict_line(gate: Gate) -> str:
    failed = [r for r in gate.rows if r.failed]
    if not failed:
        return f"gate: PASS ({len(gate.rows)} checks of {len(gate.rules)} rule(s))"
    what = ", ".join(f"{r.rule.text} at c{r.clients} {r.variant} ({r.change_pct:+.1f}%)" for r in failed[:5])
    return f"gate: FAIL ({len(failed)} of {len(gate.rows)} checks): {what}" + (" ..." if len(failed) > 5 else "")


def gate_json(gate: Gate) -> dict[str, Any]:
    return {"failed": gate.failed, "base": gate.base, "paired": gate.paired, "rules": [r.text for r in gate.rules],
            "not_compared": list(gate.unmatched),
            "checks": [{"rule": row.rule.text, "metric": row.rule.metric, "clients": row.clients,
                        "variant": row.variant, "base": row.base, "new": row.new, "change_pct": row.change_pct,
                        "interval_pct": (None if row.ratio is None or row.ratio.lo is None or row.ratio.hi is None
                                         else [100 * (row.ratio.lo - 1), 100 * (row.ratio.hi - 1)]),
                        "repetitions": None if row.ratio is None else row.ratio.pairs,
                        "beyond_noise": row.noise, "verdict": row.verdict, "failed": row.failed}
                       for row in gate.rows]}
