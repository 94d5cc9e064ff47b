"""pgknee workload: `capture` the source database's own workload from pg_stat_statements and
pg_stats into a directory (a manifest and pgbench scripts), `show` what a capture holds, `mix`
a replay's statement mix against its capture (`pgknee run --workload DIR` replays it)."""

from __future__ import annotations

import argparse
import os
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgknee.base.errors import UserError
from pgknee.cli.common import Renamed, add_store, print_items
from pgknee.system import safefs

if TYPE_CHECKING:
    from pgknee.model.server import DatabaseStep
    from pgknee.store.db import Store

MAX_TOP = 500


def add_parser(sub: Any) -> None:
    p = sub.add_parser("workload", help="capture your database's own workload (pg_stat_statements), show it",
                       description="Your own workload: capture it from pg_stat_statements and pg_stats (read "
                                   "only), show it, and replay it with 'pgknee run --workload DIR'.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    c = actions.add_parser("capture", help="read the top statements and their parameters' statistics into DIR",
                           description="Read pg_stat_statements (statements, calls, time, rows) and pg_stats "
                                       "(the columns of their parameters) in one read-only transaction, and write "
                                       "DIR/workload.toml and one pgbench script per statement.")
    c.add_argument("--dsn", metavar="DSN",
                   required=True, help="the source database (the password in ~/.pgpass or PGPASSWORD); "
                                                "the role needs pg_read_all_stats for other roles' statements")
    c.add_argument("--top", metavar="N", type=int, default=30, help="how many statements (default 30)")
    c.add_argument("--by", choices=("time", "calls"), default="time",
                   help="the statements with the most total time (default) or calls")
    c.add_argument("--observe", metavar="DURATION",
                   help="also watch the application for this long as it runs (e.g. 60s): its transactions per "
                        "second, how long each holds its connection and idles inside it, its sessions open and busy; "
                        "the statements are grouped into its transactions and replayed holding them as long")
    c.add_argument("--output", "-o", dest="out", metavar="DIR",
                   help="a new (or empty) directory for the capture")
    c.add_argument("--out", dest="out", action=Renamed, new="--output")
    c.set_defaults(func=cmd_capture)
    s = actions.add_parser("show", help="what a capture holds: statements, weights, shares, parameters",
                           description="Print a captured workload's statements, their weights and shares of calls "
                                       "and time, how each parameter is drawn, and what was not scripted and why.")
    s.add_argument("dir", metavar="DIR")
    s.set_defaults(func=cmd_show)
    m = actions.add_parser("mix", help="a replay's statement mix against its capture",
                           description="Each captured statement's share of calls and of time in a replay run "
                                       "(pg_stat_statements on the target), against the capture's.")
    m.add_argument("run_id", metavar="RUN", nargs="?", default="last")
    m.add_argument("--clients", metavar="CLIENTS", type=int, help="only the steps with this many clients")
    add_store(m)
    m.set_defaults(func=cmd_mix)


def _out_dir(path: str) -> Path:
    d = Path(path)
    if d.exists() and (not d.is_dir() or any(d.iterdir())):
        raise UserError(f"{path} exists and is not an empty directory", "give --output a new directory")
    parent = d.absolute().parent
    if os.geteuid() == 0 and safefs.writable_by_others(parent):
        raise UserError(f"{parent} can be written by other users: as root, pgknee does not write a capture there",
                        "give --output a path in a directory of root's")
    return d


def cmd_capture(args: argparse.Namespace) -> int:
    from pgknee.workloads.captured.capture import ORDERS, capture
    from pgknee.workloads.captured.manifest import MANIFEST

    if args.out is None:
        raise UserError("workload capture needs --output DIR", "a new (or empty) directory for the capture")
    if not 1 <= args.top <= MAX_TOP:
        raise UserError(f"--top must be from 1 to {MAX_TOP}, got {args.top}")
    observe_s = _observe_seconds(args.observe)
    out = _out_dir(args.out)
    manifest, texts = _capture(capture, args, observe_s, order_by=args.by if args.by in ORDERS else "time")
    if not manifest.statements and manifest.observed is not None and not manifest.skipped:
        raise UserError(f"no statement of the application ran in the {observe_s:g} s observed: was it running?",
                        "observe while the application runs, for a minute or more")
    if not manifest.statements:
        reasons = Counter(s.reason for s in manifest.skipped).most_common(3)
        raise UserError(f"none of the top {args.top} statements could be scripted: "
                        + "; ".join(f"{n} because {why}" for why, n in reasons),
                        "see the reasons; a larger --top may reach scriptable statements")
    out.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        safefs.write_output(str(out / name), text.encode())
    safefs.write_output(str(out / MANIFEST), manifest.to_toml())
    writes = manifest.writes()
    print(f"captured {len(manifest.statements)} statements ({len(writes)} with writes) into {out}/; "
          f"{len(manifest.skipped)} not scripted (pgknee workload show {out})")
    return 0


def _observe_seconds(text: str | None) -> float | None:
    from pgknee.plan.parse import parse_seconds
    from pgknee.workloads.captured.observe import MIN_WINDOW_S

    if text is None:
        return None
    seconds = parse_seconds(text, "--observe")
    if seconds < MIN_WINDOW_S:
        raise UserError(f"--observe {text} is shorter than {MIN_WINDOW_S:g} s: too short to see a transaction end",
                        "watch for a minute or more (--observe 60s) while the application runs")
    return seconds


def _capture(capture: Any, args: argparse.Namespace, observe_s: float | None, order_by: str) -> Any:
    """The capture, with a progress bar while it watches the application."""
    if observe_s is None:
        return capture(args.dsn, top=args.top, order_by=order_by, say=lambda line: print(f"pgknee: {line}"))
    from rich.progress import Progress

    with Progress(transient=True) as bar:
        task = bar.add_task(f"watching the application for {observe_s:g} s", total=observe_s)
        return capture(args.dsn, top=args.top, order_by=order_by, say=lambda line: bar.console.print(f"pgknee: {line}"),
                       observe_s=observe_s, progress=lambda waited: bar.update(task, completed=waited))


def cmd_show(args: argparse.Namespace) -> int:
    from pgknee.report.workload import captured_tables
    from pgknee.workloads.captured.manifest import load

    print_items(list(captured_tables(load(args.dir))))
    return 0


def cmd_mix(args: argparse.Namespace) -> int:
    from pgknee.store.db import Store
    from pgknee.store.location import exists

    if not exists(args.store):
        raise UserError(f"no collector database at {args.store}", "point --store at the right file")
    store = Store(args.store, create=False)
    try:
        print_items(mix_items(store, args.run_id, args.clients, required=True))
    finally:
        store.close()
    return 0


def mix_items(store: Store, run_id: str, clients: int | None = None, *, required: bool = False) -> list[Any]:
    """The resemblance table of a replay run (none for another workload, unless required)."""
    from pgknee.analyze.holdcheck import hold_check
    from pgknee.analyze.resemblance import resemblance
    from pgknee.report.workload import hold_table, resemblance_table

    run = store.resolve_run(run_id)
    captured, replayed = store.statement_mix(run.run_id)
    chosen = [s for s in store.steps(run.run_id) if clients is None or s.clients == clients]
    r = resemblance(captured, replayed, [s.step_id for s in chosen])
    if r is None:
        if required:
            raise UserError(f"run {run.run_id} did not replay a captured workload", "pgknee run --workload DIR")
        return []
    held = hold_check(store.environment(run.run_id), chosen,
                      _databases(store, [s.step_id for s in chosen]), replayed)
    return [resemblance_table(r), *([hold_table(held)] if held is not None and held.rows else [])]


def _databases(store: Store, step_ids: list[int]) -> dict[int, DatabaseStep]:
    """Each step's pg_stat_database record (an empty one for a step without)."""
    from pgknee.model.kinds import first_of
    from pgknee.model.server import DatabaseStep

    read = store.records(step_ids, [DatabaseStep])
    return {i: first_of(read.get(i, ()), DatabaseStep) or DatabaseStep() for i in step_ids}
