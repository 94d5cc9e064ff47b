"""pgknee runs | show | waits: read the collector database, nothing else. The heavy modules
(analysis, reports, the store, rich) load inside the commands: building the parser, and
--help, does without them."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from pgknee.base.errors import UserError
from pgknee.cli.common import add_noise_threshold, add_store, print_items, stdout_outputs, variant_suffix
from pgknee.model.rules import SUMMARIES
from pgknee.report.output import write_text_file

if TYPE_CHECKING:
    from pgknee.store.db import Store

PHASES = ("pre", "warmup", "bench", "post")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("scenarios", help="the articles' experiments as ready plans",
                       description="List the five articles' experiments as ready plans, each with what it runs "
                                   "and how long it takes here; run one with 'pgknee run --scenario NAME'.")
    p.set_defaults(func=cmd_scenarios)

    p = sub.add_parser("runs", help="list the stored runs",
                       description="List the store's runs: when, status (a run left running by a pgknee that died"
                                   " says so), workload, target, steps and best TPS.")
    p.add_argument("--json", metavar="PATH", help="also write the list as JSON ('-': standard output)")
    add_store(p)
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("show", help="print a run's tables again, from the store alone",
                       description="Print a run's tables again from the store alone: throughput and latency by "
                                   "client count, the machine, waits, the pooler, checks and warnings, as the run"
                                   " printed them.")
    p.add_argument("run_id", metavar="RUN_ID", help="a run id, a unique prefix of one, or 'last'")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-': standard output)")
    p.add_argument("--no-waits", action="store_true", help="leave out the per-step wait profiles")
    p.add_argument("--summary", choices=SUMMARIES,
                   help="over repetitions: median or best of N (default: what the run asked for)")
    add_noise_threshold(p)
    add_store(p)
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("waits", help="the wait-event profile (AAS) of a run's steps",
                       description="The wait-event profile of chosen steps as Average Active Sessions "
                                   "(occurrences over all snapshots), client backends or background processes, by"
                                   " phase.")
    p.add_argument("run_id", metavar="RUN_ID", help="a run id, a unique prefix of one, or 'last'")
    p.add_argument("--phase", metavar="PHASE",
                   default="bench", help=f"one of {', '.join(PHASES)}, or several with commas "
                                                     "(default bench)")
    p.add_argument("--clients", metavar="CLIENTS", type=int, help="only the steps with this many clients")
    p.add_argument("--rep", metavar="N", type=int, help="only this repetition")
    p.add_argument("--variant", metavar="VARIANT", help="only this variant")
    p.add_argument("--backend", choices=("client", "background", "all"), default="client",
                   help="client backends (default), background processes, or all")
    p.add_argument("--json", metavar="PATH", help="also write the profiles as JSON ('-': standard output)")
    add_store(p)
    p.set_defaults(func=cmd_waits)


def cmd_scenarios(args: argparse.Namespace) -> int:
    from rich import box
    from rich.table import Table

    from pgknee.scenarios import all_scenarios

    t = Table(title="Scenarios: the articles' experiments as ready plans (pgknee run --scenario NAME)",
              box=box.SIMPLE, title_justify="left")
    for c in ("Name", "What it runs", "From"):
        t.add_column(c)
    for s in all_scenarios():
        t.add_row(s.name, s.description + (f"\n(small machines: {s.small_note})" if s.small_note else ""),
                  s.article)
    print_items([t])
    return 0


def _open(path: str) -> Store:
    from pgknee.store.db import Store

    return Store(path, create=False)


def cmd_runs(args: argparse.Namespace) -> int:
    import time

    from rich.text import Text

    from pgknee.analyze.run import listing
    from pgknee.report.jsonout import dumps, runs_json
    from pgknee.report.terminal import runs_table
    from pgknee.store.claims import STALE_RUN_S, owner_alive

    store = _open(args.store)
    now = time.time()
    runs = [listing(r, store.steps(r.run_id),
                    gone=r.status == "running" and owner_alive(r.owner, r.heartbeat_at) is None,
                    silent_s=now - r.heartbeat_at if r.status == "running" and r.heartbeat_at else None)
            for r in store.runs()]
    if args.json:
        write_text_file(args.json, dumps(runs_json(runs)))
    to_stderr = stdout_outputs(args.json)
    if not runs:
        print_items([Text(f"no runs in {store.label}")], to_stderr=to_stderr)
        return 0
    items: list[Any] = [runs_table(runs)]
    gone = [x.run.run_id for x in runs if x.gone]
    if gone:
        items.append(Text(f"its pgknee gone: left 'running' by a pgknee that died (on another host: silent for "
                          f"{STALE_RUN_S / 60:.0f} min); 'pgknee run --resume {gone[-1]}' runs the rest of it"))
    print_items(items, to_stderr=to_stderr)
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from pgknee.cli.loading import loaded

    def meanwhile() -> None:  # what renders the run, imported while the store is read
        import pgknee.analyze.run
        import pgknee.report.jsonout
        import pgknee.report.terminal  # noqa: F401

    (data,) = loaded(args.store, [args.run_id], meanwhile)
    from pgknee.analyze.run import build
    from pgknee.report.jsonout import dumps, run_json
    from pgknee.report.terminal import run_report

    view = build(data, args.summary, args.noise_threshold)
    if args.json:
        write_text_file(args.json, dumps(run_json(view)))
    print_items(run_report(view, waits=not args.no_waits), to_stderr=stdout_outputs(args.json))
    _replay_mix(args.store, view.data.run.run_id, stdout_outputs(args.json))
    return 0


def _replay_mix(path: str, run_id: str, to_stderr: bool) -> None:
    """A captured workload's replay: its statement mix against the capture's."""
    from pgknee.cli.workload import mix_items
    from pgknee.store.db import Store

    store = Store(path, create=False)
    try:
        print_items(mix_items(store, run_id), to_stderr=to_stderr)
    finally:
        store.close()


def cmd_waits(args: argparse.Namespace) -> int:
    from rich.text import Text

    from pgknee.analyze.waits import profile_of, wait_profile
    from pgknee.report.tables import wait_table

    phases = tuple(p.strip() for p in args.phase.split(",") if p.strip())
    bad = [p for p in phases if p not in PHASES]
    if bad or not phases:
        raise UserError(f"unknown phase {','.join(bad) or args.phase!r}", f"choose from {', '.join(PHASES)}")
    store = _open(args.store)
    run = store.resolve_run(args.run_id)
    steps = [s for s in store.steps(run.run_id)
             if (args.clients is None or s.clients == args.clients) and (args.rep is None or s.rep == args.rep)
             and (args.variant is None or s.variant == args.variant)]
    if not steps:
        have = sorted({s.clients for s in store.steps(run.run_id)})
        raise UserError(f"run {run.run_id} has no step matching that selection",
                        f"client counts in this run: {', '.join(map(str, have)) or 'none'}")
    items: list[Any] = [Text(f"Run {run.run_id} · phase {','.join(phases)} · {args.backend} backends")]
    by_clients: dict[tuple[str, int], list[int]] = {}
    for s in steps:
        by_clients.setdefault((s.variant, s.clients), []).append(s.step_id)
    profiles = []
    for (variant, clients), ids in by_clients.items():
        n, _, _, hidden = store.snapshot_stats(ids, phases)
        profile = profile_of(wait_profile(store.wait_counts(ids, phases, args.backend), n), n, hidden=hidden)
        profiles.append((variant, clients, len(ids), profile))
        label = f"c{clients}{variant_suffix(variant)}"
        items.append(wait_table(f"{label} ({len(ids)} step(s))", profile))
        if phases == ("bench",) and args.backend == "client":
            items += _second_source(store, ids, label)
    if args.json:
        from pgknee.report.jsonout import dumps, waits_json

        write_text_file(args.json, dumps(waits_json(run.run_id, phases, args.backend, profiles)))
    print_items(items, to_stderr=stdout_outputs(args.json))
    return 0


def _second_source(store: Store, ids: list[int], label: str) -> list[Any]:
    """pg_wait_sampling's profile of the same steps beside pgknee's samples, when it was recorded."""
    from rich.text import Text

    from pgknee.analyze.waitsource import compare_sources
    from pgknee.model.samples import WaitSampling
    from pgknee.report.waitsource import SOURCES_NOTE, agreement_line, sources_table

    profiles = {i: w for i, (w, *_) in store.records(ids, [WaitSampling]).items()}
    bench = ("bench",)
    c = compare_sources(store.wait_counts(list(profiles), bench, "client"), store.snapshot_count(list(profiles), bench),
                        list(profiles.values()))
    if c is None:
        return []
    return [sources_table(label, c), Text(agreement_line(c)), Text(SOURCES_NOTE, style="dim")]
