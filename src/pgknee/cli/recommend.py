"""pgknee recommend RUN: the connection count to use, with its interval and reasons; and
pgknee size: the articles' back-of-envelope sizing (Little's law, (cores x 2) + spindles).
The heavy modules (the model's numpy and scipy, reports, the store, rich) load inside the
commands."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from pgknee.base.errors import UserError
from pgknee.cli.common import Renamed, add_store, print_items, stdout_outputs
from pgknee.report.output import write_text_file

if TYPE_CHECKING:
    from pgknee.analyze.view import RunView


def _ms(text: str) -> float:
    from pgknee.plan import parse_seconds

    try:
        return parse_seconds(text, "--p99-target") * 1000.0
    except UserError as e:
        raise argparse.ArgumentTypeError(e.message) from None


def _fraction(text: str) -> float:
    """A percentage, as every other share in pgknee is written ('95%' or '95'); a fraction below 1
    ('0.95', as it was written before) still works and says the new way."""
    t = text.strip()
    try:
        v = float(t.removesuffix("%"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage (write it like 95%)") from None
    if not t.endswith("%") and 0 < v < 1:
        print(f"pgknee: note: --min-fraction {t} is now written as a percentage, {100 * v:g}%; the fraction goes "
              "in the next release", file=sys.stderr)
        v *= 100
    if not 50 <= v < 100:
        raise argparse.ArgumentTypeError("--min-fraction must be at least 50% and below 100%, e.g. 95%")
    return v / 100


def add_recommend_options(p: Any) -> None:
    p.add_argument("--p99-target", type=_ms, metavar="DURATION",
                   help="a latency target: the recommended count keeps its measured p99 under it (e.g. 20ms)")
    p.add_argument("--min-fraction", metavar="PCT", type=_fraction, default=0.95,
                   help="the share of the plateau's (or the modelled peak's) throughput the answer reaches "
                        "(default 95%%)")
    p.add_argument("--spindles", metavar="N",
                   type=int, default=0, help="disks, for the (cores x 2) + spindles heuristic (0)")


def add_server_cpus(p: Any) -> None:
    p.add_argument("--server-cpus", type=_positive_cpus, metavar="N",
                   help="the server's CPUs, for a run that could not read them (a managed server); it "
                        "overrides what the run read: the wait profile and the rule of thumb use it")


def _positive_cpus(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of CPUs (a whole number, 1 or more)")
    return int(text)


def _positive(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} instances: an application has at least one (give the number of "
                                         "processes, pods or servers that connect)")
    return v


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of connections (0 or more)")
    return int(text)


def add_deploy_options(p: Any) -> None:
    g = p.add_argument_group("deployment (the recommended count as pool sizes)")
    g.add_argument("--app-instances", type=_positive, metavar="N",
                   help="the application's instances (pods, servers) that share the database: per-instance pool "
                        "sizes, with the arithmetic")
    g.add_argument("--pgbouncer", action="store_true", help="also a pgbouncer snippet (apps through pgbouncer)")
    g.add_argument("--app-pool", metavar="NAMES", help="also these application pools' settings: hikari, sqlalchemy, "
                                                       "pgx (commas)")
    g.add_argument("--other-connections", type=_count, default=5, metavar="N",
                   help="connections others need on the server besides the application (monitoring, admin, "
                        "migrations; default 5), for the max_connections check")


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("recommend", help="the connection count to use, with its interval and the reasons",
                       description="Per variant: the verdict read from the sweep's evidence (its whole curve "
                                   "against the noise the run measured, saturated resources, and as second opinions "
                                   "the scalability model and Kneedle), the count with its 95% interval (the counts "
                                   "the same rule picks on 95% of copies of the sweep moved by that noise), and why; "
                                   "docs/reading-the-answer.md reads each kind of answer.")
    p.add_argument("run_id", metavar="RUN_ID", help="a run id, a unique prefix of one, or 'last'")
    p.add_argument("--variant", metavar="VARIANT", help="the variant to recommend for (default: each of them)")
    add_recommend_options(p)
    add_server_cpus(p)
    add_deploy_options(p)
    p.add_argument("--json", metavar="PATH", help="also write it as JSON ('-': standard output)")
    add_store(p)
    p.set_defaults(func=cmd_recommend)

    p = sub.add_parser("size", help="back-of-envelope sizing: Little's law and (cores x 2) + spindles",
                       description="The articles' arithmetic: Little's law (connections busy = TPS x the time "
                                   "each transaction spends in the database) and the rule of thumb (cores x 2) + "
                                   "spindles; with --run, where a measured curve first reaches that TPS.")
    p.add_argument("--tps", metavar="TPS",
                   type=float, help="the arrival rate to serve, transactions per second (default with --workload: "
                                    "the application's, as observed)")
    p.add_argument("--latency", metavar="DURATION",
                   help="the time each holds its connection, e.g. 50ms (default with --workload: the application's "
                        "hold as observed, its idle time inside its transactions included)")
    p.add_argument("--workload", metavar="DIR",
                   help="a workload captured with --observe: the application's own rate and hold time")
    p.add_argument("--server-cpus", dest="cores", metavar="N", type=int, default=None,
                   help="the server's CPUs, as pgknee run names them (default: the --run's server's, as that run "
                        "found them; else this machine's, said so)")
    p.add_argument("--cores", dest="cores", action=Renamed, new="--server-cpus", type=int)
    p.add_argument("--spindles", metavar="N", type=int, default=0, help="the server's disks (0 for SSDs)")
    p.add_argument("--run", metavar="RUN_ID", help="also read how many connections the measured curve needs")
    p.add_argument("--variant", metavar="VARIANT", help="the run's variant (default: the first)")
    add_store(p)
    p.set_defaults(func=cmd_size)


def cmd_recommend(args: argparse.Namespace) -> int:
    from rich.text import Text

    from pgknee.analyze.cpus import with_server_cpus
    from pgknee.analyze.holdcheck import application_terms
    from pgknee.analyze.recommend import recommend_all
    from pgknee.analyze.run import build
    from pgknee.report.deploy import deployment_items, deployment_json
    from pgknee.report.jsonout import dumps, recommendations_json
    from pgknee.report.terminal import recommendation_items
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    pools = _deploy_args(args)
    view = build(with_server_cpus(load_run(Store(args.store, create=False), args.run_id), args.server_cpus))
    variants = view.variants()
    if args.variant and args.variant not in variants:
        raise UserError(f"run {view.data.run.run_id} has no variant {args.variant!r}",
                        f"its variants: {', '.join(variants)}")
    recs = recommend_all(view, [args.variant] if args.variant else None, fraction=args.min_fraction,
                         p99_target_ms=args.p99_target, spindles=args.spindles)
    items: list[Any] = [Text(f"run {view.data.run.run_id} ({view.data.run.workload})")]
    for r in recs:
        items.extend(recommendation_items(r))
        items.extend(Text(line) for line in application_terms(view.data.env, r.connections if r.answered else None))
    deployed = _deployments(view, recs, args, pools) if args.app_instances else []
    items += [x for d in deployed for x in deployment_items(d)]
    print_items(items, to_stderr=stdout_outputs(args.json))
    if args.json:
        out = recommendations_json(view, recs)
        write_text_file(args.json, dumps({**out, "deployments": [deployment_json(d) for d in deployed]}
                                         if args.app_instances else out))
    return 0


def _deploy_args(args: argparse.Namespace) -> tuple[str, ...]:
    """The deployment flags checked before the store is read."""
    from pgknee.analyze.deploy import app_pool_names

    if (args.pgbouncer or args.app_pool) and not args.app_instances:
        raise UserError("--pgbouncer and --app-pool size pools for the application's instances",
                        "add --app-instances N")
    return app_pool_names(args.app_pool) if args.app_pool else ()


def _deployments(view: Any, recs: list[Any], args: argparse.Namespace, pools: tuple[str, ...]) -> list[Any]:
    """The deployment of each variant with a recommended count; none at all is bad input."""
    from pgknee.analyze.deploy import database_n, deployment

    usable = [r for r in recs if r.answered and not r.family]  # a pool sweep's size: its variants deploy
    if not usable:
        database_n(view, recs[0])  # raises the one line that says why
    return [deployment(view, r, args.app_instances, other=args.other_connections, pgbouncer=args.pgbouncer,
                       app_pools=pools) for r in usable]


def cmd_size(args: argparse.Namespace) -> int:
    from pgknee.analyze.run import build
    from pgknee.analyze.sizing import reach, sizing
    from pgknee.plan import parse_seconds
    from pgknee.report.terminal import sizing_text
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    held = _held(args.workload)
    if args.tps is None or args.latency is None:
        if held is None:
            raise UserError("pgknee size needs --tps and --latency", "or --workload DIR, a capture made with --observe")
        args.tps = held.tps if args.tps is None else args.tps
    latency_s = parse_seconds(args.latency, "--latency") if args.latency is not None else held.hold_ms / 1000.0 \
        if held is not None else 0.0
    if args.tps <= 0 or (args.cores is not None and args.cores < 1) or args.spindles < 0:
        raise UserError("--tps must be above 0, --server-cpus at least 1, --spindles 0 or more")
    measured, view = None, None
    if args.run:
        view = build(load_run(Store(args.store, create=False), args.run))
        measured = reach(view, args.variant or view.variants()[0], args.tps)
    cores, source = _size_cores(args.cores, view)
    print_items([sizing_text(sizing(args.tps, latency_s, cores, args.spindles), measured, source, held)])
    return 0


def _held(directory: str | None) -> Any:
    """The application's rate and hold time from a capture made with --observe (None: no --workload)."""
    from pgknee.analyze.sizing import Held
    from pgknee.workloads.captured.manifest import load

    if directory is None:
        return None
    o = load(directory).observed
    if o is None or o.hold_ms is None:
        raise UserError(f"{directory} was captured without --observe: it does not know how long the application "
                        "holds a connection", "capture again with --observe 60s while the application runs, or give "
                                              "--tps and --latency")
    return Held(o.transactions_per_s, o.hold_ms, o.active_ms, o.idle_in_transaction_ms, o.sessions_open.p99,
                o.sessions_busy.p99)


def _size_cores(given: int | None, view: RunView | None) -> tuple[int, str]:
    """--server-cpus, else the run's server's (when known), else this machine's; and where from."""
    from pgknee.analyze.cpus import server_cpus

    if given is not None:
        return given, "--server-cpus"
    if view is not None:
        cpus = server_cpus(view.data.env, view.data.run.target_kind)
        if cpus.n is not None:
            return cpus.n, f"run {view.data.run.run_id}'s server: {cpus.source}"
        raise UserError(f"run {view.data.run.run_id}'s server CPUs are unknown ({cpus.source})",
                        "give --server-cpus N")
    return os.cpu_count() or 1, "this machine's; give --server-cpus N for another server"
