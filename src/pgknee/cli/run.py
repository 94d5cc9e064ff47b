"""pgknee run: flags (or a plan file) -> Plan -> preflight -> Sweep, with progress, then the
tables, the recommendation and the report asked for."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgknee.base.dsn import TARGETS
from pgknee.base.errors import DriverError, Interrupted, PgkneeError
from pgknee.cli.agent import add_agent_options, agent_plan
from pgknee.cli.common import add_noise_threshold, add_store, print_items, stdout_outputs
from pgknee.cli.recommend import add_recommend_options
from pgknee.model.rules import SUMMARIES
from pgknee.plan import PROTOCOLS

if TYPE_CHECKING:
    from pgknee.analyze.recommend import Recommendation
    from pgknee.analyze.run import RunView
    from pgknee.model.results import Reopening
    from pgknee.plan import Plan, PlanFile
    from pgknee.run import Prepared
    from pgknee.run.adaptive import Answer
    from pgknee.store.db import Store


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run", help="sweep client counts against a PostgreSQL server and store the results",
        epilog="Every option can also come from a TOML plan file (pgknee run plan.toml); options given on "
               "the command line win over the file.",
        description="Start a throwaway PostgreSQL (or use --dsn), install the e-wallet workload, run pgbench at "
                    "each client count, sample pg_stat_activity and the OS, store everything and print the tables.")
    p.add_argument("plan", nargs="?", metavar="PLAN.toml",
                   help="a plan file holding everything a run needs (sections target, workload, sweep, pooler, "
                        "collect)")
    p.add_argument("--scenario", metavar="NAME",
                   help="run one of the articles' experiments as a ready plan ('pgknee scenarios' lists them)")
    for add in (_target_options, _workload_options, _sweep_options, _pooler_options, _collection_options,
                _output_options, add_agent_options):
        add(p)
    _answer_options(p)
    p.set_defaults(func=cmd_run)


def _target_options(p: argparse.ArgumentParser) -> None:
    t = p.add_argument_group("target")
    t.add_argument("--target", choices=TARGETS, default=None,
                   help="env: the server libpq's environment names (PGHOST or PGSERVICE, PGPORT, PGUSER, "
                        "PGDATABASE, ...), without --dsn; embedded (default without --dsn): a throwaway cluster")
    t.add_argument("--dsn", metavar="DSN", default=None,
                   help="a running server (postgresql://user@host:port/db); default: an embedded throwaway "
                        "cluster. Keep the password out of it: use PGPASSWORD or ~/.pgpass")
    t.add_argument("--pg-bindir", metavar="DIR", help="PostgreSQL server binaries for the embedded cluster")
    t.add_argument("--set", dest="settings", action="append", default=None, metavar="NAME=VALUE",
                   help="a setting of the embedded server (repeatable), e.g. --set shared_buffers=256MB")
    t.add_argument("--keep", action="store_true", default=None,
                   help="leave the embedded server running and say how to use it")
    t.add_argument("--server-cpus", type=int, metavar="N",
                   help="the server's CPUs, for the CPU-based lines (rule of thumb, AAS against the CPUs) when pgknee "
                        "cannot read them (a managed service, a role without pg_read_server_files)")
    t.add_argument("--server-memory", metavar="SIZE", help="the server's memory (e.g. 64GB), likewise")
    t.add_argument("--server-ssh", metavar="USER@HOST",
                   help="read the server's /proc over ssh (keys or an agent only, BatchMode; host keys as your ssh "
                        "config says): its CPUs and memory, and its OS sampled every --os-interval")
    t.add_argument("--server-ssh-config", metavar="FILE", help="an ssh configuration file for --server-ssh (ssh -F)")


def _workload_options(p: argparse.ArgumentParser) -> None:
    w = p.add_argument_group("workload")
    w.add_argument("--workload", metavar="NAME|DIR",
                   help="ewallet (default; article 000), tpcb and select-only (pgbench's own, initialised by "
                        "pgbench -i), read-heavy (article 004's script on pgbench's tables), or custom (your "
                        "--script files against your own schema); or DIR, your own workload as "
                        "'pgknee workload capture' wrote it")
    w.add_argument("--allow-writes", action="store_true", default=None,
                   help="replay a captured workload's INSERT, UPDATE and DELETE statements: on a copy of the "
                        "database only (a server with the source's system identifier is refused)")
    w.add_argument("--scale", metavar="FACTOR", type=float,
                   help="data size: ewallet 1 = 10k users, 100k transactions, about 40 MB; tpcb, select-only and "
                        "read-heavy: pgbench's scale factor, 100k accounts (about 15 MB) each (default 1)")
    w.add_argument("--script", dest="scripts", action="append", default=None, metavar="FILE[@WEIGHT]",
                   help="a pgbench script of the custom workload, repeatable, with an optional weight")
    w.add_argument("--schema", metavar="NAME",
                   help="pgknee's schema for the workload (default pgknee_ewallet, or pgknee_pgbench "
                                    "for pgbench's tables)")
    w.add_argument("--reinit", action="store_true", default=None,
                   help="drop and reseed the workload schema if it exists (pgknee's own schema only)")


def _sweep_options(p: argparse.ArgumentParser) -> None:
    s = p.add_argument_group("sweep")
    s.add_argument("--clients", metavar="CLIENTS",
                   help="client counts in order: 2,4,8 or ranges 50:1000:50 and 2:64:x2 (default 2,4,8,16,32)")
    s.add_argument("--duration", metavar="DURATION",
                   help="measured time per step, whole seconds (default 60s); or auto (auto:MAX): each step "
                        "stops once its steady TPS is known within --steady-target, after a warm-up found in "
                        "its progress, 20 s at least and at most MAX (default 2m)")
    s.add_argument("--steady-target", metavar="PCT",
                   help="with --duration auto: the half-width of the steady TPS's 95%% interval at which a step "
                        "stops (default 2%%)")
    s.add_argument("--reps", metavar="N", type=int, help="repetitions of each step (default 1)")
    s.add_argument("--summary", choices=SUMMARIES,
                   help="figure shown for repeated steps: the median (default) or the best of N (the repetition "
                        "with the highest TPS, as article 002 did); the min..max spread is shown either way")
    add_noise_threshold(s, default_note="10")
    s.add_argument("--warmup", metavar="DURATION", help="unmeasured pgbench run before each step (default 0)")
    s.add_argument("--threads", metavar="N",
                   type=int, help="pgbench threads (default: one per CPU, at most one per client)")
    s.add_argument("--protocol", choices=PROTOCOLS, help="default prepared")
    s.add_argument("--variant", dest="variants", action="append", default=None, metavar="SPEC",
                   help="a variant of the sweep, repeatable; variants run interleaved (A B A B) per client "
                        "count and repetition. SPEC: normal, pipeline, connect (-C), simple, extended, "
                        "prepared, or several joined by ':', or key=value: name, protocol, pipeline, connect, "
                        "rate=TPS (an open loop), think=DURATION (a pause after each transaction), rtt=DURATION "
                        "(a simulated round trip); through a pgbouncer pgknee manages: pooled (or session, "
                        "transaction, statement) with pool=N, mode=, reserve=N, auth=, placement=, or "
                        "pooled-external (--pooler-dsn); idle=N (sessions beside the workers, idle_kind=); "
                        "max_connections=N and set.NAME=VALUE (the embedded server's settings, a restart per "
                        "step). A list (pool=2,4,8, idle=0,100, rtt=0,1ms) makes one variant per value. "
                        "E.g. --variant normal --variant pipeline --variant pooled:transaction:pool=16")
    s.add_argument("--rtt", metavar="DURATION[,...]",
                   help="a simulated network round trip between pgbench and the server (or its pgbouncer) for every "
                        "variant that sets no rtt= of its own: 1ms, or a list 0,1ms,5ms (one variant per value); "
                        "a delaying relay, its own cost measured and shown")
    s.add_argument("--rtt-jitter", metavar="DURATION", help="the simulated round trip's jitter (e.g. 0.2ms)")
    s.add_argument("--max-tries", metavar="N", type=int,
                   help="pgbench tries per transaction on serialization failures and deadlocks (default 3)")
    s.add_argument("--pgbench", metavar="PATH", help="the pgbench to use (default: from PATH)")
    s.add_argument("--server-wait", metavar="DURATION",
                   help="how long the sweep waits for a server that went away during a step (a restart, a "
                        "failover) before it ends, completed steps kept; 0 ends it at once (default 120s)")


def _pooler_options(p: argparse.ArgumentParser) -> None:
    q = p.add_argument_group("pooler (variants pooled:MODE:pool=N and pooled-external)")
    q.add_argument("--pgbouncer", metavar="PATH", help="the pgbouncer pgknee starts for pooled variants "
                                                       "(default: from PATH)")
    q.add_argument("--pgpool", metavar="PATH", help="the pgpool-II pgknee starts for pgpool variants "
                                                    "(default: from PATH or /usr/sbin)")
    q.add_argument("--pooler-dsn", metavar="DSN",
                   help="your own pgbouncer, for pooled-external variants (or $PGKNEE_POOLER_DSN; a password "
                        "belongs in the variable or ~/.pgpass)")
    q.add_argument("--pooler-admin-dsn", metavar="DSN",
                   help="its admin console (dbname=pgbouncer, a user in admin_users or stats_users), to sample "
                        "SHOW POOLS and SHOW STATS (or $PGKNEE_POOLER_ADMIN_DSN)")
    q.add_argument("--pooler-interval", metavar="DURATION", help="SHOW POOLS sampling interval (default 250ms)")


def _collection_options(p: argparse.ArgumentParser) -> None:
    c = p.add_argument_group("collection")
    c.add_argument("--sample-interval", metavar="DURATION",
                   help="pg_stat_activity sampling interval, with ±20%% jitter; 0 switches it off (default 100ms)")
    c.add_argument("--os-interval", metavar="DURATION", help="OS sampling interval; 0 switches it off (default 1s)")
    c.add_argument("--log-sampling-rate", metavar="FRACTION", type=float,
                   help="fraction of transactions pgbench logs for latency (default: chosen per step so that "
                        "some 10,000 are logged, no more than a tenth while that keeps 5,000, enough for p99 "
                        "within about 6%% (4%% at 10,000); 1 logs all)")
    c.add_argument("--pre", metavar="DURATION",
                   help="the longest wait before pgbench starts in each step for the server to be quiet: "
                                 "the last step's backends gone, no immediate checkpoint running; measured, "
                                 "0.3 s at least, sampled as the 'pre' phase (default 5s)")
    c.add_argument("--post", metavar="DURATION", help="seconds sampled after it ends (default 1s)")
    c.add_argument("--settle", metavar="DURATION",
                   help="the longest wait after a step for the server's statistics to stop moving "
                                    "(default 3s)")
    c.add_argument("--idle-flush", metavar="DURATION",
                   help="the wait after opening idle sessions that read the catalogue, for "
                                        "their statistics to reach pg_stat_database (default 11s)")
    c.add_argument("--sample-all-databases", action="store_true", default=None,
                   help="sample the sessions of every database on the server (default: the benchmark's only)")
    c.add_argument("--no-query-text", dest="query_text", action="store_const", const=False, default=None,
                   help="do not store the sampled sessions' query texts (the wait profile needs none)")


def _output_options(p: argparse.ArgumentParser) -> None:
    o: Any = p.add_argument_group("output")
    add_store(o)
    o.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-': to standard output)")
    o.add_argument("--no-waits", action="store_true", help="leave the per-step wait profiles out of the tables")
    o.add_argument("--quiet", action="store_true", help="no progress, only the tables")
    o.add_argument("--extend", metavar="RUN_ID",
                   help="run more client counts of a stored run (those its recommendation proposes, or --clients) "
                        "and add them to it")
    o.add_argument("--resume", metavar="RUN_ID",
                   help="run the steps of a stored run that did not complete (interrupted, failed, or its pgknee "
                        "died), with its stored plan, into the same run")
    o.add_argument("--recommend", action="store_true",
                   help="end with a recommendation per variant (as 'pgknee recommend' gives)")
    add_recommend_options(o)
    o.add_argument("--report", metavar="PATH",
                   help="also write a report with charts (report.html: one self-contained file; report.md: "
                        "markdown with its charts in report_files/; '-': HTML to standard output), as 'pgknee "
                        "report' does")
    o.add_argument("--dry-run", action="store_true",
                   help="print the pgbench command lines and the estimated wall time, run nothing")


def cmd_run(args: argparse.Namespace) -> int:
    """From the first thing started (preflight's pgbench) on, a stop signal ends the command in
    order: what was started is stopped, what was measured kept."""
    from pgknee.system import proc

    args.started = time.monotonic()  # --budget counts from here, setup included
    with proc.signals(proc.raising(lambda name: Interrupted(f"interrupted by {name}"))):
        return _run_command(args)


def _run_command(args: argparse.Namespace) -> int:
    from pgknee.cli.run_plan import plan_file_env
    from pgknee.run import dry_run, preflight

    plan, extend, source, only = _plan(args)
    if args.dry_run:
        for note in (getattr(args, "coverage_note", None), getattr(args, "pace_note", None)):
            if note:
                print(f"pgknee: {note}", file=sys.stderr)
        for line in dry_run(plan, preflight(plan), os.cpu_count() or 1):
            print(line)
        if plan.until_answer:
            print(_answer_dry_run(plan))
        return 0
    _check_outputs(args)
    # refusals before the store is created: a new store only once the plan can run
    from pgknee.store.db import Store
    from pgknee.store.location import exists

    new_store = not exists(args.store)
    store = Store(args.store) if not new_store else Store.check_new(args.store)
    prepared = preflight(plan)
    store = store or Store(args.store)
    run_id = _sweep(args, plan, store, prepared, extend, plan_file_env(source) if source.given else {}, new_store,
                    only)
    nothing = _nothing_measured(store, run_id)
    if nothing:  # said first, before the tables; the run is kept, and the exit code is pgbench's
        print(f"pgknee: {nothing}", file=sys.stderr)
    _results(args, store, run_id)
    return DriverError.exit_code if nothing else 0


def _nothing_measured(store: Store, run_id: str) -> str:
    """'' when some step of the run completed; else what failed, for the line said first."""
    steps = store.steps(run_id)
    if not steps or any(s.status == "completed" for s in steps):
        return ""
    reasons = [s.status_reason for s in steps if s.status_reason]
    first = f" (the first: {reasons[0]})" if reasons else ""
    return (f"run {run_id} measured nothing: its {len(steps)} step{'s' if len(steps) > 1 else ''} failed{first}; "
            f"'pgknee show {run_id}' has each step's reason")


def _plan(args: argparse.Namespace) -> tuple[Plan, Reopening | None, PlanFile,
                                             Counter[tuple[str, int, int]] | None]:
    """The plan: a stored run's (--extend, --resume: and which of its steps to run), or a plan
    file's or a scenario's with the flags on top."""
    from pgknee.cli.run_plan import extension, resumption
    from pgknee.plan import NO_FILE

    if args.resume:
        plan, run, only = resumption(args)
        return plan, run, NO_FILE, only
    if args.extend:
        plan, extend = extension(args)
        return plan, extend, NO_FILE, None
    plan, source = fresh_plan(args)
    return plan, None, source, None


def fresh_plan(args: argparse.Namespace) -> tuple[Plan, PlanFile]:
    """The plan of a new run from its flags (a plan file's or a scenario's with the flags on top),
    with every check `pgknee run` makes before it starts (k8s render makes the same)."""
    from pgknee.cli.run_plan import as_observed, coverage_note, plan_from_args

    plan, source = plan_from_args(args)
    # said once the run starts, after preflight's refusals: a refused run gets one line, not two
    plan, args.pace_note = as_observed(plan)
    args.coverage_note = coverage_note(plan)
    if plan.until_answer:
        plan = _answer_range(args, plan, source)
    return plan, source


def _sweep(args: argparse.Namespace, plan: Plan, store: Store, prepared: Prepared,
           extend: Reopening | None, extra_env: dict[str, str], new_store: bool,
           only: Counter[tuple[str, int, int]] | None) -> str:
    """The run, with progress; however it ends, the user learns how (and gets the report of what
    exists, when one was asked for)."""
    from pgknee.cli.progress import make_ui
    from pgknee.cli.run_plan import password_note, redacted_argv
    from pgknee.run import Sweep

    ui = make_ui(args.quiet, plan.budget_s or plan.estimated_seconds())
    notes = [n for n in (getattr(args, "coverage_note", None), getattr(args, "pace_note", None),
                         password_note(plan, sys.argv)) if n]
    sweep = Sweep(plan, store, ui, prepared, argv=["pgknee", *redacted_argv(sys.argv[1:])], extend=extend,
                  agents=agent_plan(args, plan),
                  extra_env=extra_env, only=only, answer=_answer(args))
    try:
        with ui:
            for note in notes:
                ui.say(note)
            return sweep.run()
    except Interrupted:
        kept = ("is as it was before --extend, with the steps this extension completed" if extend and only is None
                else "is kept as 'interrupted' with its completed steps")  # a failed --extend: store/writer.py
        ui.say(f"interrupted: run {sweep.run_id} {kept} ('pgknee show {sweep.run_id}')")
        _partial_report(args, store, sweep.run_id, ui.say)
        raise
    except PgkneeError:
        # refused before a run began (the server too small): a store file made for it goes
        if new_store and store.created and not store.runs() and store.path is not None:
            store.close()
            # SQLite removes the -wal when the last connection closes: if it is still there, another
            # pgknee started on the same new store has it open, and it is that pgknee's now
            if not Path(args.store + "-wal").exists():
                for suffix in ("", "-shm"):
                    Path(args.store + suffix).unlink(missing_ok=True)
        else:
            _partial_report(args, store, sweep.run_id, ui.say)
        raise
    finally:
        if sweep.kept_message:
            ui.say(sweep.kept_message)


def _results(args: argparse.Namespace, store: Store, run_id: str) -> None:
    """The tables (and JSON, recommendation, report) of the run just made, from the store."""
    from pgknee.analyze.run import build
    from pgknee.cli.workload import mix_items
    from pgknee.report.jsonout import dumps, run_json
    from pgknee.report.output import write_text_file
    from pgknee.report.terminal import recommendation_items, run_report
    from pgknee.store.load import load_run

    view = build(load_run(store, run_id))
    if args.json:
        write_text_file(args.json, dumps(run_json(view)))
    to_stderr = stdout_outputs(args.json, args.report)
    print_items(run_report(view, waits=not args.no_waits), to_stderr=to_stderr)
    print_items(mix_items(store, run_id), to_stderr=to_stderr)  # a captured workload's replay against its capture
    recs = _recommendations(args, view) if args.recommend or args.report else None
    if args.recommend and recs is not None:
        print_items([item for rec in recs for item in recommendation_items(rec)], to_stderr=to_stderr)
    if args.report:
        _write_report(args, view, lambda text: None if args.quiet else print(text, file=sys.stderr), recs)


def _recommendations(args: argparse.Namespace, view: RunView) -> list[Recommendation]:
    """Once, for the terminal and the report alike."""
    from pgknee.analyze.recommend import recommend_all

    return recommend_all(view, fraction=args.min_fraction, p99_target_ms=args.p99_target, spindles=args.spindles)


def _check_outputs(args: argparse.Namespace) -> None:
    """Fail on an unwritable output before an hour of measuring, not after."""
    stdout_outputs(args.json, args.report)
    if args.json:
        from pgknee.report.output import check_writable

        check_writable(args.json)
    if args.report:
        from pgknee.report.output import check_output, output_format

        check_output(args.report, output_format(args.report, None))


def _partial_report(args: argparse.Namespace, store: Store, run_id: str, say: Callable[[str], None]) -> None:
    """A run that ended early still gets its report when one was asked for: what exists, with
    the failed and never-run steps marked."""
    if not args.report:
        return
    if not any(s.status == "completed" for s in store.steps(run_id)):
        say(f"no report written to {args.report}: no step completed")
        return
    from pgknee.analyze.run import build
    from pgknee.store.load import load_run

    try:  # the run's own error is what the user must see: a report that fails only says so
        _write_report(args, build(load_run(store, run_id)), say)
    except Exception as e:
        say(f"no report written to {args.report}: {e.one_line() if isinstance(e, PgkneeError) else repr(e)}")


def _write_report(args: argparse.Namespace, view: RunView, say: Callable[[str], None],
                  recs: list[Recommendation] | None = None) -> None:
    from pgknee.cli.report import options_from
    from pgknee.report.files import write
    from pgknee.report.output import output_format

    say(write(args.report, output_format(args.report, None), [view], options_from(args), recs=recs))


# ---- --until-answer, --budget: an adaptive sweep (analyze/adaptive.py chooses, run/adaptive.py runs) ----

def _answer_options(p: argparse.ArgumentParser) -> None:
    a = p.add_argument_group("adaptive sweep")
    a.add_argument("--until-answer", action="store_true", default=None,
                   help="choose the client counts as the run goes, until the recommendation is known to one step: "
                        "a coarse sweep (1, 2, 4, ..), then the counts that narrow its 95%% interval most; "
                        "--clients N or LOW:HIGH:STEP gives the range (default 1 to 4x the server's CPUs); "
                        "--p99-target and --min-fraction say what the answer is")
    a.add_argument("--budget", metavar="DURATION",
                   help="with --until-answer: the whole run's wall time, setup included (e.g. 20m); a step that "
                        "would not end within it is not started")


def _answer_range(args: argparse.Namespace, plan: Plan, source: PlanFile) -> Plan:
    """The range the adaptive sweep chooses in: 1 to 4x the CPUs, or --clients N (1..N) or one
    range LOW:HIGH:STEP; the plan's counts become its coarse start."""
    import dataclasses

    from pgknee.analyze.adaptive import coarse, grid
    from pgknee.base.errors import UserError
    from pgknee.plan import clients_text, parse_clients

    given = args.clients if args.clients is not None else source.values.get("clients")
    if given is None:
        lo, hi = 1, 4 * _server_cpus_before_connecting(plan)
    else:
        text = clients_text(given)
        counts = parse_clients(text)
        if "," in text:
            raise UserError(f"--until-answer chooses the client counts itself, and --clients {text} fixes them",
                            "give the range it may use: --clients 1:16:1, or the largest count: --clients 16")
        lo, hi = (1, counts[0]) if len(counts) == 1 else (min(counts), max(counts))
    if len(grid(lo, hi)) < 3:
        raise UserError(f"--until-answer needs at least three client counts to choose from, got {lo}..{hi}",
                        "give a wider range, e.g. --clients 1:8:1")
    return dataclasses.replace(plan, clients=coarse(lo, hi))


def _server_cpus_before_connecting(plan: Plan) -> int:
    """The server's CPUs for --until-answer's default range: the user's --server-cpus, or this
    machine's for the embedded server; a remote server's are not known before pgknee connects."""
    from pgknee.base.errors import UserError

    if plan.target.server_cpus is not None:
        return plan.target.server_cpus
    if plan.target.dsn is None:
        return os.cpu_count() or 1
    raise UserError("--until-answer's default range is 1 to 4x the server's CPUs, and a remote server's are not "
                    "known before pgknee connects", "give --server-cpus N, or the range: --clients 1:32:1")


def _answer(args: argparse.Namespace) -> Answer:
    from pgknee.run.adaptive import Answer

    return Answer(fraction=args.min_fraction, p99_target_ms=args.p99_target,
                  started=getattr(args, "started", time.monotonic()))


def _answer_dry_run(plan: Plan) -> str:
    budget = f", within {plan.budget_s:g} s in all" if plan.budget_s else ", without a budget"
    return (f"--until-answer: the steps above are the coarse start; then counts between {min(plan.clients)} and "
            f"{max(plan.clients)} are chosen as the run goes, until the answer is known to one step{budget}")
