"""pgknee agent: a load generator that serves a coordinator's run through the store
(run/agent.py); and the run's options that ask for agents (`pgknee run --agents N`)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pgknee.base.errors import UserError
from pgknee.cli.common import add_store

if TYPE_CHECKING:
    from pgknee.plan import Plan
    from pgknee.run.distributed import AgentPlan


def add_parser(sub: Any) -> None:
    p = sub.add_parser("agent", help="a load generator: runs its share of another pgknee's steps",
                       description="Register in the store (--store: a PostgreSQL store every host reaches, or a "
                                   "file all the processes share), wait for a 'pgknee run --agents N' to take this "
                                   "agent, run pgbench with its share of each step's clients at the common start, "
                                   "upload what it measured, and exit 0 when the run is over.")
    add_store(p)
    p.add_argument("--name", metavar="NAME",
                   help="the agent's name (default $PGKNEE_AGENT_NAME, gen-$JOB_COMPLETION_INDEX in a "
                                  "Kubernetes Indexed Job, or the host name)")
    p.add_argument("--dsn", metavar="DSN",
                   help="the server, as this host reaches it (or $PGKNEE_DSN; a password goes in "
                                 "PGPASSWORD or ~/.pgpass); default: the coordinator's DSN, without its password")
    p.add_argument("--wait", default="10m", metavar="DURATION",
                   help="how long to wait for a run to take the agent, and then for each next piece of work "
                        "(default 10m)")
    p.add_argument("--keep-logs", metavar="DIR", help="keep pgbench's per-transaction logs there (a directory "
                                                      "per step), for your own analysis")
    p.set_defaults(func=cmd_agent)


def cmd_agent(args: argparse.Namespace) -> int:
    from pgknee.plan.parse import parse_seconds
    from pgknee.run.agent import AgentOptions, default_name, serve

    name = args.name or default_name()
    if not name or len(name) > 63 or not all(c.isalnum() or c in "-_." for c in name):
        raise UserError(f"--name {name!r} is not an agent name", "use letters, digits, '-', '_' and '.' (at most "
                                                                 "63)")
    keep = Path(args.keep_logs) if args.keep_logs else None
    if keep is not None and not keep.is_dir():
        raise UserError(f"--keep-logs {keep}: no such directory", "create it first")
    opts = AgentOptions(name=name, store=args.store, dsn=args.dsn or os.environ.get("PGKNEE_DSN"),
                        wait_s=parse_seconds(args.wait, "--wait"), keep_logs=keep)
    return serve(opts, lambda line: print(line, flush=True))


def add_agent_options(p: argparse.ArgumentParser) -> None:
    a = p.add_argument_group("agents (load generators on other hosts)")
    a.add_argument("--agents", type=int, metavar="N",
                   help="run each step's pgbench on N agents ('pgknee agent' on other hosts, sharing --store), "
                        "its clients split among them; needs --dsn, a server they reach")
    a.add_argument("--agent-wait", default="5m", metavar="DURATION",
                   help="how long to wait for the agents before the sweep (default 5m)")
    a.add_argument("--on-agent-loss", choices=("stop", "continue"), default="stop",
                   help="an agent dies or stops answering mid-run: its step fails with the reason, then the run "
                        "stops (default), or goes on with the others")


def agent_plan(args: argparse.Namespace, plan: Plan) -> AgentPlan | None:
    from pgknee.plan.parse import parse_seconds
    from pgknee.run.distributed import AgentPlan

    if not getattr(args, "agents", None):
        return None
    if args.agents < 1:
        raise UserError(f"--agents {args.agents}: give one agent or more", "e.g. --agents 4")
    if plan.target.dsn is None:
        raise UserError("--agents needs --dsn: the embedded server listens on this machine only",
                        "point --dsn at a server the agents' hosts reach")
    for v in plan.variants:
        if v.pooler is not None or v.rtt_ms:
            what = "goes through a pooler" if v.pooler is not None else "simulates a network hop (rtt=)"
            raise UserError(f"variant {v.name} {what}, which runs on this host, where the agents' pgbench does not "
                            "connect", "with --agents, run the direct variants (a pooler of yours: give the agents "
                            "its DSN with 'pgknee agent --dsn')")
    return AgentPlan(args.agents, parse_seconds(args.agent_wait, "--agent-wait"), args.on_agent_loss)
