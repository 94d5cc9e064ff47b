"""The two wait sources side by side (analyze.waitsource): pg_stat_activity's samples and
pg_wait_sampling's in-server profile, per event, with their difference and the agreement."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from pgknee.analyze.view import RunView
from pgknee.analyze.waitsource import NOT_COMPARED_TYPES, SourceComparison, Z, group_sources
from pgknee.analyze.words import clause

MAX_ROWS = 15


def sources_table(title: str, c: SourceComparison) -> Table:
    probes = "probes counted" if c.probes_counted else "probes partly assumed from profile_period"
    t = Table(title=f"{title}: two wait sources, {c.steps} step(s)", box=box.SIMPLE, title_justify="left")
    t.add_column("Wait Type")
    t.add_column("Wait Event")
    t.add_column(f"pg_stat_activity, sampled {c.sampled_hz:.0f} Hz\nAAS ±1σ ({c.snapshots} snapshots)",
                 justify="right")
    t.add_column(f"pg_wait_sampling, in-server, ~{c.profile_hz:.0f} Hz\nAAS ±1σ ({c.probes} {probes})",
                 justify="right")
    t.add_column("difference", justify="right")
    for r in c.rows[:MAX_ROWS]:
        profile = "not sampled" if r.profile is None else f"{r.profile:.2f} ±{r.profile_err:.2f}"
        diff = "" if r.diff is None or not r.comparable else f"{r.diff:+.2f}" + (" !" if r.beyond else "")
        t.add_row(r.wait_event_type, r.wait_event, f"{r.sampled:.2f} ±{r.sampled_err:.2f}", profile,
                  diff or "not compared")
    if len(c.rows) > MAX_ROWS:
        t.add_row("…", f"{len(c.rows) - MAX_ROWS} more", "", "", "")
    return t


def agreement_line(c: SourceComparison) -> str:
    pct = c.total_diff_pct
    verdict = (f"agree within the sampling error (±{Z:g}σ = {Z * c.total_err:.2f})" if c.agree
               else f"differ beyond the sampling error (±{Z:g}σ = {Z * c.total_err:.2f})")
    flagged = clause("; events beyond it (!): {}", ", ".join(c.flagged))
    return (f"Agreement: waits other than {' and '.join(sorted(NOT_COMPARED_TYPES))} total {c.sampled_total:.2f} "
            f"(pg_stat_activity) vs {c.profile_total:.2f} (pg_wait_sampling)"
            + clause(", {:+.1f}%", pct) + f": {verdict}{flagged}")


SOURCES_NOTE = ("pg_wait_sampling samples only processes in a wait event and does not know a session's state: it "
                "has no CPU, and a Client wait there is idle time as often as not, so those are not compared. "
                "AAS there = count / the collector's probes in the bench window (counted on a session asleep "
                "in pg_sleep, not assumed from the 10 ms setting). ! = beyond 2σ of sampling error.")


def run_sources(view: RunView, variant: str) -> list[tuple[Table, str]]:
    """Per client count of `variant` with both sources: its table and agreement line."""
    out = []
    for g in view.groups:
        if g.variant == variant and (c := group_sources(view.data, g.done)) is not None:
            out.append((sources_table(f"Wait sources {g.label}", c), agreement_line(c)))
    return out


def sources_items(view: RunView, variant: str) -> list[Table | Text]:
    """What the terminal shows: the tables, each with its agreement line, then the note."""
    pairs = run_sources(view, variant)
    items: list[Table | Text] = [x for t, line in pairs for x in (t, Text(line))]
    return [*items, Text(SOURCES_NOTE, style="dim")] if pairs else []
