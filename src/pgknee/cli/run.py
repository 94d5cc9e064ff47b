"""pgknee run: flags -> Plan -> Runner, with live progress, then the tables."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from pgknee.analyze.recommend import Recommendation, recommend, recommend_all
from pgknee.analyze.run import RunView, build
from pgknee.cli.common import (
    add_noise_threshold,
    add_store,
    check_writable,
    print_items,
    stdout_outputs,
    write_text_file,
)
from pgknee.cli.recommend import add_recommend_options
from pgknee.errors import Interrupted, PgkneeError, UserError
from pgknee.plan import (
    DEFAULTS,
    PROTOCOLS,
    WORKLOADS,
    Plan,
    PlanFile,
    load_plan_file,
    plan_from_values,
)
from pgknee.report.jsonout import dumps, run_json
from pgknee.report.terminal import recommendation_items, run_report
from pgknee.runner import Runner
from pgknee.scenarios import SMALL_MACHINE_CPUS
from pgknee.scenarios import find as find_scenario
from pgknee.store.db import Store, load_run
from pgknee.targets.conninfo import parse_dsn, redact_dsn, scrub_secrets, split_secret
from pgknee.types import ProgressPoint


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "run", help="sweep client counts against a PostgreSQL server and store the results",
        epilog="Every option can also come from a TOML plan file (pgknee run plan.toml); options given on "
               "the command line win over the file.",
        description="Start a throwaway PostgreSQL (or use --dsn), install the e-wallet workload, run pgbench at "
                    "each client count, sample pg_stat_activity and the OS, store everything and print the tables.")
    p.add_argument("plan", nargs="?", metavar="PLAN.toml",
                   help="a plan file holding everything a run needs (sections target, workload, sweep, collect)")
    p.add_argument("--scenario", metavar="NAME",
                   help="run one of the articles' experiments as a ready plan ('pgknee scenarios' lists them)")
    t = p.add_argument_group("target")
    t.add_argument("--dsn", default=None,
                   help="a running server (postgresql://user@host:port/db); default: an embedded throwaway "
                        "cluster. Keep the password out of it: use PGPASSWORD or ~/.pgpass")
    t.add_argument("--pg-bindir", metavar="DIR", help="PostgreSQL server binaries for the embedded cluster")
    t.add_argument("--set", dest="settings", action="append", default=None, metavar="NAME=VALUE",
                   help="a setting of the embedded server (repeatable), e.g. --set shared_buffers=256MB")
    t.add_argument("--keep", action="store_true", default=None,
                   help="leave the embedded server running and say how to use it")
    w = p.add_argument_group("workload")
    w.add_argument("--workload", choices=WORKLOADS,
                   help="ewallet (default; article 000), tpcb and select-only (pgbench's own, initialised by "
                        "pgbench -i), read-heavy (article 004's script on pgbench's tables), or custom (your "
                        "--script files against your own schema)")
    w.add_argument("--scale", type=float,
                   help="data size: ewallet 1 = 10k users, 100k transactions, about 40 MB; tpcb, select-only and "
                        "read-heavy: pgbench's scale factor, 100k accounts (about 15 MB) each (default 1)")
    w.add_argument("--script", dest="scripts", action="append", default=None, metavar="FILE[@WEIGHT]",
                   help="a pgbench script of the custom workload, repeatable, with an optional weight")
    w.add_argument("--schema", help="schema holding the workload (default pgknee_ewallet)")
    w.add_argument("--reinit", action="store_true", default=None,
                   help="drop and reseed the workload schema if it exists (pgknee's own schema only)")
    s = p.add_argument_group("sweep")
    s.add_argument("--clients",
                   help="client counts in order: 2,4,8 or ranges 50:1000:50 and 2:64:x2 (default 2,4,8,16,32)")
    s.add_argument("--duration", help="measured time per step, whole seconds (default 60s)")
    s.add_argument("--reps", type=int, help="repetitions of each step (default 1)")
    s.add_argument("--summary", choices=("median", "best"),
                   help="figure shown for repeated steps: the median (default) or the best of N (the repetition "
                        "with the highest TPS, as article 002 did); the min..max spread is shown either way")
    add_noise_threshold(s, default_note="10")
    s.add_argument("--warmup", help="unmeasured pgbench run before each step (default 0)")
    s.add_argument("--threads", type=int, help="pgbench threads (default: one per CPU, at most one per client)")
    s.add_argument("--protocol", choices=PROTOCOLS, help="default prepared")
    s.add_argument("--variant", dest="variants", action="append", default=None, metavar="SPEC",
                   help="a variant of the sweep, repeatable; variants run interleaved (A B A B) per client "
                        "count and repetition. SPEC: normal, pipeline, connect (-C), simple, extended, "
                        "prepared, or several joined by ':', or key=value (name, protocol, pipeline, connect, "
                        "rate=TPS for an open loop, think=DURATION for a pause after each transaction), "
                        "e.g. --variant normal --variant pipeline")
    s.add_argument("--max-tries", type=int,
                   help="pgbench tries per transaction on serialization failures and deadlocks (default 3)")
    s.add_argument("--pgbench", metavar="PATH", help="the pgbench to use (default: from PATH)")
    q = p.add_argument_group("pooler (variants pooled:MODE:pool=N and pooled-external)")
    q.add_argument("--pgbouncer", metavar="PATH", help="the pgbouncer pgknee starts for pooled variants "
                                                       "(default: from PATH)")
    q.add_argument("--pooler-dsn", metavar="DSN",
                   help="your own pgbouncer, for pooled-external variants (or $PGKNEE_POOLER_DSN; a password "
                        "belongs in the variable or ~/.pgpass)")
    q.add_argument("--pooler-admin-dsn", metavar="DSN",
                   help="its admin console (dbname=pgbouncer, a user in admin_users or stats_users), to sample "
                        "SHOW POOLS and SHOW STATS (or $PGKNEE_POOLER_ADMIN_DSN)")
    q.add_argument("--pooler-interval", help="SHOW POOLS sampling interval (default 250ms)")
    c = p.add_argument_group("collection")
    c.add_argument("--sample-interval",
                   help="pg_stat_activity sampling interval, with ±20%% jitter; 0 switches it off (default 100ms)")
    c.add_argument("--os-interval", help="OS sampling interval; 0 switches it off (default 1s)")
    c.add_argument("--log-sampling-rate", type=float,
                   help="fraction of transactions pgbench logs for latency (default 1: all)")
    c.add_argument("--pre", help="seconds sampled before pgbench starts in each step (default 1s)")
    c.add_argument("--post", help="seconds sampled after it ends (default 1s)")
    c.add_argument("--settle", help="the longest wait after a step for the server's statistics to stop moving "
                                    "(default 3s)")
    c.add_argument("--idle-flush", help="the wait after opening idle sessions that read the catalogue, for "
                                        "their statistics to reach pg_stat_database (default 11s)")
    c.add_argument("--sample-all-databases", action="store_true", default=None,
                   help="sample the sessions of every database on the server (default: the benchmark's only)")
    c.add_argument("--no-query-text", dest="query_text", action="store_const", const=False, default=None,
                   help="do not store the sampled sessions' query texts (the wait profile needs none)")
    o = p.add_argument_group("output")
    add_store(o)
    o.add_argument("--json", metavar="PATH", help="also write the results as JSON ('-': to standard output)")
    o.add_argument("--no-waits", action="store_true", help="leave the per-step wait profiles out of the tables")
    o.add_argument("--quiet", action="store_true", help="no progress, only the tables")
    o.add_argument("--extend", metavar="RUN_ID",
                   help="run more client counts of a stored run (those its recommendation proposes, or --clients) "
                        "and add them to it")
    o.add_argument("--recommend", action="store_true",
                   help="end with a recommendation per variant (as 'pgknee recommend' gives)")
    add_recommend_options(o)
    o.add_argument("--report", metavar="PATH",
                   help="also write a report with charts (report.html: one self-contained file; report.md: "
                        "markdown with its charts in report_files/; '-': HTML to standard output), as 'pgknee "
                        "report' does")
    o.add_argument("--dry-run", action="store_true",
                   help="print the pgbench command lines and the estimated wall time, run nothing")
    p.set_defaults(func=cmd_run)


FLAG_KEYS = tuple(DEFAULTS)


def plan_from_args(a: argparse.Namespace) -> tuple[Plan, PlanFile | None]:
    """The plan file (if one is given) with the flags given on top; then the environment's DSN."""
    if a.plan and a.scenario:
        raise UserError("give a plan file or --scenario, not both")
    source = None
    if a.scenario:
        scenario = find_scenario(a.scenario)
        small = (os.cpu_count() or 1) < SMALL_MACHINE_CPUS
        source = load_plan_file(str(scenario.path), small_machine=small)
        if small and scenario.small_note:
            print(f"scenario {scenario.name}: {scenario.small_note} (this machine has {os.cpu_count()})",
                  file=sys.stderr)
    elif a.plan:
        source = load_plan_file(a.plan)
    flags = {k: getattr(a, k) for k in FLAG_KEYS if getattr(a, k, None) is not None}
    if "dsn" not in flags and not (source and "dsn" in source.values) and os.environ.get("PGKNEE_DSN"):
        flags["dsn"] = os.environ["PGKNEE_DSN"]
    specs = flags.get("variants") or (source.values.get("variants") if source else None) or []
    if any("pooled-external" in str(s) for s in specs):  # the variables matter only to such a variant
        for key, var in (("pooler_dsn", "PGKNEE_POOLER_DSN"), ("pooler_admin_dsn", "PGKNEE_POOLER_ADMIN_DSN")):
            if key not in flags and not (source and key in source.values) and os.environ.get(var):
                flags[key] = os.environ[var]
    for key in ("dsn", "pooler_dsn", "pooler_admin_dsn"):
        dsn = flags.get(key) or (source.values.get(key) if source else None)
        if dsn:
            redact_dsn(dsn)  # a DSN that cannot be parsed is bad input: say so before anything starts
    return plan_from_values(flags, source), source


_DSN_FLAGS = ("--dsn", "--pooler-dsn", "--pooler-admin-dsn")


def _redacted_argv(argv: list[str]) -> list[str]:
    out, skip_next = [], False
    for i, tok in enumerate(argv):
        if skip_next:
            skip_next = False
            continue
        flag = tok.split("=", 1)[0]
        if flag in _DSN_FLAGS and "=" not in tok and i + 1 < len(argv):
            out += [tok, _safe_redact(argv[i + 1])]
            skip_next = True
        elif flag in _DSN_FLAGS and "=" in tok:
            out.append(flag + "=" + _safe_redact(tok.split("=", 1)[1]))
        else:
            out.append(tok)
    return [scrub_secrets(tok) for tok in out]  # whatever spelling carried a password


def _safe_redact(dsn: str) -> str:
    try:
        return redact_dsn(dsn)
    except UserError:
        return "<unparseable DSN>"


class LiveUI:
    """Progress on a terminal: step, rep, elapsed/remaining, live TPS."""

    def __init__(self, console: Console, total_seconds: float) -> None:
        self.console = console
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=24),
                                 TextColumn("{task.fields[secs]}"), TextColumn("{task.fields[tps]}"),
                                 TextColumn("· run {task.fields[run_left]} left"), TimeElapsedColumn(),
                                 console=console, transient=True)
        self.task: TaskID | None = None
        self.total_seconds = total_seconds
        self.started = time.monotonic()
        self.step_seconds = 0.0

    def __enter__(self) -> LiveUI:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def say(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False)

    def _left(self) -> str:
        left = max(0.0, self.total_seconds - (time.monotonic() - self.started))
        return f"~{int(left // 60)}m{int(left % 60):02d}s"

    def step_started(self, seq: int, total: int, variant: str, clients: int, rep: int, seconds: float) -> None:
        if self.task is not None:
            self.progress.remove_task(self.task)
        self.step_seconds = seconds
        name = f"step {seq}/{total} c{clients} rep {rep}" + ("" if variant == "base" else f" {variant}")
        self.task = self.progress.add_task(name, total=seconds, secs=f"0/{seconds:.0f}s", tps="",
                                           run_left=self._left())

    def step_progress(self, point: ProgressPoint) -> None:
        if self.task is not None:
            self.progress.update(self.task, completed=min(point.t_s, self.step_seconds),
                                 secs=f"{point.t_s:.0f}/{self.step_seconds:.0f}s", tps=f"{point.tps:,.0f} tps",
                                 run_left=self._left())

    def step_finished(self, text: str) -> None:
        self.say("  " + text)


class PlainUI:
    """Progress when the output is not a terminal (CI, logs): a line per event."""

    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.last_print = 0.0

    def __enter__(self) -> PlainUI:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def say(self, text: str) -> None:
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def step_started(self, seq: int, total: int, variant: str, clients: int, rep: int, seconds: float) -> None:
        self.say(f"step {seq}/{total}: c{clients} rep {rep}" + ("" if variant == "base" else f" {variant}")
                 + f", {seconds:.0f} s")

    def step_progress(self, point: ProgressPoint) -> None:
        now = time.monotonic()
        if now - self.last_print >= 10:
            self.last_print = now
            self.say(f"  {point.t_s:.0f} s: {point.tps:,.0f} tps")

    def step_finished(self, text: str) -> None:
        self.say("  " + text)


def _extension(args: argparse.Namespace) -> tuple[Plan, tuple[str, dict[str, Any]]]:
    """pgknee run --extend RUN_ID: the stored run's plan, at the counts its recommendation
    proposes (or --clients), to be added to the same run."""
    from pgknee.plan import parse_clients, plan_from_stored

    others = [k for k in FLAG_KEYS if k not in ("clients", "dsn", *_EXTEND_BINARIES)
              and getattr(args, k, None) is not None]
    if args.plan or args.scenario or others:
        raise UserError("--extend runs the stored run's own plan; only --clients, --dsn and the programs "
                        "(--pgbench, --pg-bindir, --pgbouncer) may be given with it",
                        f"drop {('--' + others[0].replace('_', '-')) if others else 'the plan file or --scenario'}")
    store = Store(args.store, create=False)
    view = build(load_run(store, args.extend))
    run = view.data.run
    if run.status == "running":
        raise UserError(f"run {run.run_id} is still running (or was killed): it cannot be extended")
    if args.clients:
        clients = parse_clients(args.clients)
    else:
        proposals = [r.next_counts for v in view.variants() if (r := recommend(view, v)).verdict == "not-identified"]
        if not proposals:
            raise UserError(f"run {run.run_id} already shows its peak (see pgknee recommend {run.run_id})",
                            "give --clients to extend it anyway")
        clients = tuple(sorted({c for p in proposals for c in p}))
    stored = run.plan
    known = set(stored.get("clients", ()))
    dup = [c for c in clients if c in known]
    if dup:
        raise UserError(f"run {run.run_id} already has {dup[0]} clients", "give counts it has not run")
    dsn = args.dsn or os.environ.get("PGKNEE_DSN")
    plan = plan_from_stored(stored, clients, dsn if stored.get("target", {}).get("dsn") else None,
                            binaries={k: getattr(args, k) for k in _EXTEND_BINARIES})
    _same_scripts(plan, view.data.env)
    merged = {**stored, "clients": [*stored.get("clients", ()), *clients]}
    return plan, (run.run_id, merged)


_EXTEND_BINARIES = ("pgbench", "pg_bindir", "pgbouncer")


def _same_scripts(plan: Plan, env: dict[str, str]) -> None:
    """A custom workload is extended with the scripts it ran, byte for byte: a script file
    changed (or swapped) since is refused."""
    for path, _ in plan.workload.scripts:
        recorded = env.get(f"workload.script.{Path(path).name}.sha256")
        try:
            now = hashlib.sha256(Path(path).read_bytes()).hexdigest()
        except OSError as e:
            raise UserError(f"the run's script {path} cannot be read: {e.strerror}") from None
        if recorded is not None and recorded != now:
            raise UserError(f"the script {path} has changed since the run measured it",
                            "start a new run with the changed script, or restore the one the run used")


def _plan_file_env(source: PlanFile) -> dict[str, str]:
    """The plan file travels with the run, any password in it removed; when one hides where
    text cannot see it (a TOML escape, a line continuation), the file's text stays behind."""
    dsns = [source.values[key] for key in ("dsn", "pooler_dsn", "pooler_admin_dsn") if source.values.get(key)]
    text = source.text
    for dsn in dsns:
        text = text.replace(dsn, _safe_redact(dsn))
    text = scrub_secrets(text)
    passwords = [p for dsn in dsns if (p := _password_of(dsn))]
    if passwords and any(p in json.dumps(_toml_or_empty(text)) or p in text for p in passwords):
        text = ("(not kept: the plan file holds a password pgknee could not take out of it; keep passwords in "
                "PGPASSWORD or a passfile)")
    return {"plan.file": os.path.abspath(source.path), "plan.source": text}


def _password_of(dsn: str) -> str | None:
    try:
        return split_secret(parse_dsn(dsn))[1]
    except UserError:
        return None


def _toml_or_empty(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return {}


def cmd_run(args: argparse.Namespace) -> int:
    extend = None
    if args.extend:
        plan, extend = _extension(args)
        source = None
    else:
        plan, source = plan_from_args(args)
    if args.dry_run:
        for line in Runner(plan, None, PlainUI(quiet=True)).dry_run():
            print(line)
        return 0
    _check_outputs(args)
    # refusals before the store is created: a new store only once the plan can run
    new_store = not os.path.exists(args.store)
    store = Store(args.store) if not new_store else Store.check_new(args.store)
    Runner(plan, None, PlainUI(quiet=True)).preflight()
    store = store or Store(args.store)
    interactive = sys.stderr.isatty() and not args.quiet
    ui: LiveUI | PlainUI = (LiveUI(Console(stderr=True), plan.estimated_seconds()) if interactive
                            else PlainUI(quiet=args.quiet))
    runner = Runner(plan, store, ui, argv=["pgknee", *_redacted_argv(sys.argv[1:])], extend=extend)
    if source is not None:
        runner.extra_env = _plan_file_env(source)
    try:
        with ui:
            runner.run()
    except Interrupted:
        ui.say(f"interrupted: run {runner.run_id} is kept as 'interrupted' with its completed steps "
               f"('pgknee show {runner.run_id}')")
        _partial_report(args, store, runner.run_id, ui.say)
        raise
    except PgkneeError:
        if new_store and not store.runs():  # refused before a run began (the server too small, ...)
            store.close()
            for suffix in ("", "-wal", "-shm"):
                Path(args.store + suffix).unlink(missing_ok=True)
        else:
            _partial_report(args, store, runner.run_id, ui.say)
        raise
    finally:
        if runner.kept_message:
            ui.say(runner.kept_message)
    view = build(load_run(store, runner.run_id))
    if args.json:
        write_text_file(args.json, dumps(run_json(view)))
    to_stderr = stdout_outputs(args.json, args.report)
    print_items(run_report(view, waits=not args.no_waits), to_stderr=to_stderr)
    recs = _recommendations(args, view) if args.recommend or args.report else None
    if args.recommend and recs is not None:
        items: list[Any] = []
        for rec in recs:
            items.extend(recommendation_items(rec))
        print_items(items, to_stderr=to_stderr)
    if args.report:
        _write_report(args, view, ui.say, recs)
    return 0


def _recommendations(args: argparse.Namespace, view: RunView) -> list[Recommendation]:
    """Once, for the terminal and the report alike."""
    return recommend_all(view, fraction=args.min_fraction, p99_target_ms=args.p99_target, spindles=args.spindles)


def _check_outputs(args: argparse.Namespace) -> None:
    """Fail on an unwritable output before an hour of measuring, not after."""
    stdout_outputs(args.json, args.report)
    if args.json:
        check_writable(args.json)
    if args.report:
        from pgknee.cli.report import check_output, output_format

        check_output(args.report, output_format(args.report, None))


def _partial_report(args: argparse.Namespace, store: Store, run_id: str, say: Callable[[str], None]) -> None:
    """A run that ended early still gets its report when one was asked for: what exists, with
    the failed and never-run steps marked."""
    if not args.report:
        return
    if not any(s.status == "completed" for s in store.steps(run_id)):
        say(f"no report written to {args.report}: no step completed")
        return
    try:  # the run's own error is what the user must see: a report that fails only says so
        _write_report(args, build(load_run(store, run_id)), say)
    except Exception as e:
        say(f"no report written to {args.report}: {e.one_line() if isinstance(e, PgkneeError) else repr(e)}")


def _write_report(args: argparse.Namespace, view: RunView, say: Callable[[str], None],
                  recs: list[Recommendation] | None = None) -> None:
    from pgknee.cli.report import options_from, output_format, write

    say(write(args.report, output_format(args.report, None), [view], options_from(args), recs=recs))
