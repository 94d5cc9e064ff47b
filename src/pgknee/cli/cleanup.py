"""pgknee cleanup: what pgknee processes that died left behind (servers, pgbouncers, pgbench,
directories, runs marked running), stopped, removed and marked, from the registry; every
other command does the same quietly when it starts."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("cleanup", help="stop and remove what pgknee processes that died left behind; with --dsn, "
                                       "drop pgknee's own workload schemas on a server",
                       description="Read the registry of what pgknee processes started; for those that are gone "
                                   "(and their watchdogs too), stop what still runs, remove their directories and "
                                   "mark their runs abandoned, and list what was done. With --dsn: drop the "
                                   "workload schemas pgknee created in that database (marked as pgknee's), each "
                                   "with its own tables only (RESTRICT: anything of yours inside or depending on "
                                   "them stops it, nothing is changed); a schema not marked as pgknee's is refused.")
    p.add_argument("--dsn", metavar="DSN", help="the database to remove pgknee's workload schemas from (the password "
                                                 "in ~/.pgpass or PGPASSWORD)")
    p.add_argument("--schema", metavar="NAME", help="only this schema of pgknee's (with --dsn)")
    p.add_argument("--dry-run", action="store_true", help="list what would be dropped (with --dsn), drop nothing")
    p.set_defaults(func=cmd_cleanup)


def cmd_cleanup(args: argparse.Namespace) -> int:
    from pgknee.base.errors import UserError
    from pgknee.system import registry

    if args.dsn:
        return _server_cleanup(args)
    if args.schema or args.dry_run:
        raise UserError("--schema and --dry-run go with --dsn", "add --dsn DSN, the database to clean up")

    done = registry.sweep()
    for line in done:
        print(line)
    if not done:
        print(f"nothing to clean up (registry: {registry.state_dir()})")
    return 0


def _server_cleanup(args: argparse.Namespace) -> int:
    from pgknee.targets.base import Endpoint
    from pgknee.workloads.schema import cleanup

    endpoint = Endpoint.resolve(args.dsn)
    with endpoint.connect("cleanup") as conn:
        done = cleanup(conn, args.schema, dry_run=args.dry_run, say=lambda line: print(line, flush=True))
    if not done:
        print(f"no workload schema of pgknee's in {endpoint.label}")
    return 0
