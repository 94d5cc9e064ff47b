"""The terminal's tables of a captured workload (`pgknee workload show`) and of its replay's
resemblance (captured against replayed statement mix, per step)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from pgknee.analyze.resemblance import Resemblance

if TYPE_CHECKING:  # a report reads no server: the captured package's workload would load psycopg
    from pgknee.workloads.captured.manifest import Manifest

SHOWN = 70  # characters of a statement's text in a table


def _short(q: str) -> str:
    q = " ".join(q.split())
    return q if len(q) <= SHOWN else q[:SHOWN - 1] + "…"


def captured_tables(m: Manifest) -> list[Table]:
    weights = {x: sc.weight for sc in m.scripts for x in sc.statements}
    t = Table(title=f"Captured from {m.source} ({m.database}) at {m.captured_at}: top {m.top} by {m.order_by}",
              box=box.SIMPLE_HEAD)
    for col in ("id", "statement", "kind", "calls", "mean ms", "share of calls", "share of time", "weight"):
        t.add_column(col, justify="left" if col in ("id", "statement", "kind") else "right")
    for s in m.statements:
        t.add_row(s.id, _short(s.query), s.kind, f"{s.calls:,}", f"{s.mean_ms:.3f}", f"{s.share_calls:.1%}",
                  f"{s.share_time:.1%}", str(weights.get(s.id, "-")))
    p = Table(title="Parameters (drawn from pg_stats)", box=box.SIMPLE_HEAD)
    for col in ("id", "param", "column", "type", "drawn", "top common values"):
        p.add_column(col)
    for s in m.statements:
        for x in s.params:
            top = ", ".join(f"{v} {f:.1%}" for v, f in zip(x.mcv[:3], x.mcf[:3], strict=False))
            p.add_row(s.id, f"${x.n}", x.column or "-", x.type or "-", x.drawn, top or "-")
    out = [t, p]
    t.caption = _grouping_note(m)
    if m.skipped:
        k = Table(title="Not scripted", box=box.SIMPLE_HEAD)
        for col in ("statement", "calls", "why"):
            k.add_column(col, justify="right" if col == "calls" else "left")
        for sk in m.skipped:
            k.add_row(_short(sk.query), f"{sk.calls:,}", sk.reason)
        out.append(k)
    return out


def _grouping_note(m: Manifest) -> str:
    """pg_stat_statements has no transaction ids: each statement is a script of its own, in
    autocommit. BEGIN's calls are the one hint of the application's transactions."""
    begins = sum(k.calls for k in m.skipped if k.query.split()[:1] in (["BEGIN"], ["START"]))
    if not begins:
        return "each statement runs as its own transaction (autocommit); no BEGIN among the top statements read"
    near = [s.id for s in m.statements if abs(s.calls - begins) <= 0.1 * begins]
    hint = f"; statements with about as many calls: {', '.join(near)}" if near else ""
    return (f"BEGIN was called {begins:,} times{hint}: to replay them as one transaction, list them in one "
            "[[scripts]] entry of workload.toml and put BEGIN; ... COMMIT; in its file")


def resemblance_table(r: Resemblance) -> Table:
    t = Table(title=f"Replay against capture (tolerance: share of calls ±{r.calls_tol:.0%} points, "
                    f"of time ±{r.time_tol:.0%} points; shares among the replayed statements)",
              box=box.SIMPLE_HEAD)
    for col in ("id", "statement", "calls: captured", "replayed", "diff", "time: captured", "replayed", "diff",
                "within"):
        t.add_column(col, justify="left" if col in ("id", "statement", "within") else "right")
    for row in r.rows:
        t.add_row(row.id, _short(row.query), f"{row.captured_calls:.1%}", f"{row.replayed_calls:.1%}",
                  f"{row.replayed_calls - row.captured_calls:+.1%}", f"{row.captured_time:.1%}",
                  f"{row.replayed_time:.1%}", f"{row.replayed_time - row.captured_time:+.1%}",
                  "yes" if row.within else "NO")
    t.caption = r.note
    return t
