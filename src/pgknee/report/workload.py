"""The terminal's tables of a captured workload (`pgknee workload show`) and of its replay's
resemblance (captured against replayed statement mix, per step)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich import box
from rich.table import Table

from pgknee.analyze.holdcheck import HOLD_TOL, SHARE_TOL, STATEMENTS_TOL, TURN_SPREAD_MS, HoldCheck
from pgknee.analyze.resemblance import Resemblance
from pgknee.analyze.words import clause
from pgknee.report.cells import cell, columns

if TYPE_CHECKING:  # a report reads no server: the captured package's workload would load psycopg
    from pgknee.workloads.captured.manifest import Manifest

SHOWN = 70  # characters of a statement's text in a table


def _short(q: str) -> str:
    q = " ".join(q.split())
    return q if len(q) <= SHOWN else q[:SHOWN - 1] + "…"


def captured_tables(m: Manifest) -> list[Table]:
    weights = {x: sc.weight for sc in m.scripts for x in sc.statements}
    t = columns(Table(title=f"Captured from {m.source} ({m.database}) at {m.captured_at}: top {m.top} by "
                            f"{m.order_by}", box=box.SIMPLE_HEAD),
                ("id", "statement", "kind", "calls", "mean ms", "share of calls", "share of time", "weight"),
                ("id", "statement", "kind"))
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
    out = [t, p, *observed_tables(m)]
    # observed: how its transactions were found; else what a capture cannot know, and BEGIN's hint
    t.caption = m.grouping if m.observed is not None else "; ".join(x for x in (m.grouping, _grouping_note(m)) if x)
    if m.skipped:
        k = columns(Table(title="Not scripted", box=box.SIMPLE_HEAD), ("statement", "calls", "why"),
                    ("statement", "why"))
        for sk in m.skipped:
            k.add_row(_short(sk.query), f"{sk.calls:,}", sk.reason)
        out.append(k)
    return out


def _ms(x: float | None) -> str:
    return cell(x, ",.1f")


def observed_tables(m: Manifest) -> list[Table]:
    """What --observe saw of the application, and the scripts that replay its transactions."""
    o = m.observed
    if o is None:
        return []
    t = Table(title=f"The application as observed ({o.window_s:.0f} s, {o.samples:,} samples of pg_stat_activity "
                    f"every {o.interval_s * 1000:.0f} ms)", box=box.SIMPLE_HEAD)
    columns(t, ("", "mean", "p50", "p90", "p99", "max", "from"), ("", "from"))
    t.add_row("transactions per second", f"{o.transactions_per_s:,.1f}", "", "", "", "",
              "pg_stat_database: commits + rollbacks")
    t.add_row("  of which BEGIN ... COMMIT", f"{o.explicit_per_s:,.1f}", "", "", "", "", "pg_stat_statements: BEGIN")
    t.add_row("statements per transaction", _ms(o.statements_per_transaction), "", "", "", "",
              "pg_stat_statements' calls / transactions")
    t.add_row("hold per transaction, ms", _ms(o.hold_ms), _ms(o.transaction_ms.p50), _ms(o.transaction_ms.p90),
              _ms(o.transaction_ms.p99), _ms(o.transaction_ms.max), "active + idle in transaction; the sampled ones")
    t.add_row("  running statements, ms", _ms(o.active_ms), "", "", "", "", "pg_stat_database: active_time")
    t.add_row("  idle inside it, ms", _ms(o.idle_in_transaction_ms), "", "", "", "",
              f"idle_in_transaction_time ({o.idle_share:.0%} of the hold)" if o.idle_share is not None else "-")
    t.add_row("idle per BEGIN ... COMMIT, ms", _ms(o.explicit_idle_mean_ms), _ms(o.explicit_idle_ms.p50),
              _ms(o.explicit_idle_ms.p90), _ms(o.explicit_idle_ms.p99), _ms(o.explicit_idle_ms.max),
              "what the replay sleeps inside its transactions")
    t.add_row("sessions open", "", _ms(o.sessions_open.p50), _ms(o.sessions_open.p90), _ms(o.sessions_open.p99),
              _ms(o.sessions_open.max), "the application's pool, per sample")
    t.add_row("  busy (in a transaction)", "", _ms(o.sessions_busy.p50), _ms(o.sessions_busy.p90),
              _ms(o.sessions_busy.p99), _ms(o.sessions_busy.max), "active or idle in transaction")
    t.add_row("think between transactions, ms", _ms(o.think_ms), "", "", "", "", "the working sessions' idle share")
    t.add_row("new connections per second", _ms(o.new_connections_per_s), "", "", "", "",
              "pg_stat_database: sessions")
    t.caption = (f"{o.transactions_seen:,} transactions sampled ({o.transactions_exact:,} seen to end exactly); "
                 f"{o.own_statements} statements of pgknee's own taken out of the counters"
                 + "".join(f"; {n}" for n in o.notes))
    out = [t]
    grouped = [sc for sc in m.scripts if len(sc.idle_ms) == 12]  # (pauses.POINTS: an edited list is not read)
    if grouped:
        g = columns(Table(title="Transactions replayed as the application holds them", box=box.SIMPLE_HEAD),
                    ("script", "statements", "weight", "idle inside, ms p50", "p90", "p99", "evidence"),
                    ("script", "statements", "evidence"))
        for sc in grouped:
            g.add_row(sc.name, ", ".join(sc.statements), str(sc.weight), _ms(sc.idle_ms[5]), _ms(sc.idle_ms[9]),
                      _ms(sc.idle_ms[10]), sc.evidence)
        out.append(g)
    return out


def _grouping_note(m: Manifest) -> str:
    """pg_stat_statements has no transaction ids: each statement is a script of its own, in
    autocommit. BEGIN's calls are the one hint of the application's transactions."""
    begins = sum(k.calls for k in m.skipped if k.query.split()[:1] in (["BEGIN"], ["START"]))
    if not begins:
        return "each statement runs as its own transaction (autocommit); no BEGIN among the top statements read"
    near = [s.id for s in m.statements if abs(s.calls - begins) <= 0.1 * begins]
    hint = clause("; statements with about as many calls: {}", ", ".join(near))
    return (f"BEGIN was called {begins:,} times{hint}: to replay them as one transaction, list them in one "
            "[[scripts]] entry of workload.toml and put BEGIN; ... COMMIT; in its file")


def resemblance_table(r: Resemblance) -> Table:
    t = Table(title=f"Replay against capture (tolerance: share of calls ±{r.calls_tol:.0%} points, "
                    f"of time ±{r.time_tol:.0%} points; shares among the replayed statements)",
              box=box.SIMPLE_HEAD)
    columns(t, ("id", "statement", "calls: captured", "replayed", "diff", "time: captured", "replayed", "diff",
                "within"), ("id", "statement", "within"))
    for row in r.rows:
        t.add_row(row.id, _short(row.query), f"{row.captured_calls:.1%}", f"{row.replayed_calls:.1%}",
                  f"{row.replayed_calls - row.captured_calls:+.1%}", f"{row.captured_time:.1%}",
                  f"{row.replayed_time:.1%}", f"{row.replayed_time - row.captured_time:+.1%}",
                  "yes" if row.within else "NO")
    t.caption = r.note
    return t


def hold_table(h: HoldCheck) -> Table:
    """Each step's transactions against the application's: hold, idle share, statements."""
    c = h.captured
    t = Table(title=f"Transactions: replay against the application (tolerance: hold ±{HOLD_TOL:.0%} or "
                    f"{TURN_SPREAD_MS:g} ms per client turnaround, idle share ±{SHARE_TOL:.0%}, statements per "
                    f"transaction ±{STATEMENTS_TOL:.0%})", box=box.SIMPLE_HEAD)
    columns(t, ("step", "hold ms", "application", "idle share", "application", "statements per tx", "application",
                "within"), ("step", "within"))
    for r in h.rows:
        t.add_row(f"c{r.clients} rep {r.rep}", _ms(r.hold_ms), _ms(c.hold_ms),
                  cell(r.idle_share, ".0%"), cell(c.idle_share, ".0%"), cell(r.statements_per_transaction, ".2f"),
                  cell(c.statements_per_transaction, ".2f"),
                  "yes" if r.within else "NO: " + ", ".join(r.misses))
    t.caption = ("both from the server's counters: (active_time + idle_in_transaction_time) per transaction; a step "
                 "past the knee holds longer as its statements wait; a turnaround (one before each statement and "
                 "COMMIT) is the client machine's, and lengthens when pgknee shares a machine with the server")
    return t
