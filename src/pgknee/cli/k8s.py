"""pgknee k8s render: a run on N agents as Kubernetes Jobs (report/k8s.py), the run's own flags
after `--` (checked as `pgknee run` checks them, and sizing the agents' pods)."""

from __future__ import annotations

import argparse
from typing import Any

from pgknee.base.errors import UserError

# the DSNs come from the Secrets: a flag naming one would put it (and maybe its password) in the manifest
_REFUSED = ("--dsn", "--store", "--pooler-dsn", "--pooler-admin-dsn", "--agents", "--agent-wait", "--target")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("k8s", help="Kubernetes: render a run on N agents as Jobs",
                       description="Kubernetes manifests for a run whose load comes from agents in pods.")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=type(p))
    r = actions.add_parser(
        "render", help="an Indexed Job of N agents and the coordinator's Job, as YAML",
        description="Write an Indexed Job (one pod per agent, completions = parallelism = N) and a coordinator Job "
                    "running 'pgknee run --agents N' with the run's flags given after '--'. The server's and the "
                    "store's DSNs come from Secrets (key 'dsn'), never from the manifest; each agent's CPU and "
                    "memory requests come from the plan's largest step.",
        epilog="e.g. pgknee k8s render --agents 4 --dsn-secret app-db --store-secret results-db -- "
               "--clients 100:2000:100 --duration 60s > pgknee-job.yaml")
    r.add_argument("--agents", type=int, required=True, metavar="N", help="how many agents (pods)")
    r.add_argument("--dsn-secret", required=True, metavar="NAME", help="the Secret holding the server's DSN (key dsn)")
    r.add_argument("--store-secret", required=True, metavar="NAME",
                   help="the Secret holding the PostgreSQL results store's DSN (key dsn)")
    r.add_argument("--image", metavar="IMAGE",
                   default="pgknee:latest", help="the image built from the Dockerfile (default "
                                                            "pgknee:latest)")
    r.add_argument("--namespace", metavar="NAMESPACE", help="the Jobs' namespace (default: kubectl's)")
    r.add_argument("--name", metavar="NAME", default="pgknee", help="the Jobs' name prefix (default pgknee)")
    r.add_argument("--agent-cpus", type=int, default=2, metavar="N",
                   help="CPUs per agent pod at most (its pgbench threads; default 2)")
    r.add_argument("--service-account", metavar="NAME", help="the pods' service account")
    r.add_argument("-o", "--output", default="-", metavar="FILE", help="where to write the YAML (default: standard "
                                                                        "output)")
    r.add_argument("run_args", nargs=argparse.REMAINDER, metavar="-- RUN FLAGS",
                   help="the run's flags (as for pgknee run), after '--'")
    r.set_defaults(func=cmd_render)


def cmd_render(args: argparse.Namespace) -> int:
    from pgknee import __version__
    from pgknee.report.k8s import K8sOptions, render
    from pgknee.report.output import write_text_file

    run_args = list(args.run_args)
    if run_args and run_args[0] == "--":
        run_args = run_args[1:]
    for a in run_args:
        if a.split("=", 1)[0] in _REFUSED:
            raise UserError(f"{a.split('=', 1)[0]} cannot be a run flag here: the manifests take the DSNs from the "
                            "Secrets and set the agents themselves", "use --dsn-secret, --store-secret and --agents")
    opts = K8sOptions(agents=args.agents, dsn_secret=args.dsn_secret, store_secret=args.store_secret,
                      image=args.image, namespace=args.namespace, name=args.name, agent_cpus=args.agent_cpus,
                      service_account=args.service_account)
    write_text_file(args.output, render(_plan(run_args), opts, run_args, __version__))
    return 0


def _plan(run_args: list[str]) -> Any:
    """The run's plan from its flags, as `pgknee run` would make it (its checks included)."""
    from pgknee.cli import run as run_cmd

    parser = argparse.ArgumentParser(prog="pgknee", exit_on_error=False)
    run_cmd.add_parser(parser.add_subparsers(dest="command"))
    try:
        ns = parser.parse_args(["run", *run_args])
    except argparse.ArgumentError as e:
        raise UserError(f"the run's flags: {e}", "give them as for 'pgknee run', after '--'") from None
    plan, _ = run_cmd.fresh_plan(ns)  # every check run makes (--until-answer's range too)
    return plan
