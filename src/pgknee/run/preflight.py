"""Everything that can be refused before anything starts (no server, no store, no directory):
pgbench and its version, every script as pgbench parses it, the open-file limit, the pooler and
what it can carry; and, once the server answers, whether it has room for the largest step."""

from __future__ import annotations

import resource
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pgknee.base.errors import DriverError, TargetError, UserError
from pgknee.collect.serverfacts import ServerFacts
from pgknee.collect.sshproc import check_config
from pgknee.driver.pgbench import find_pgbench, pgbench_version
from pgknee.model.rules import database_concurrency
from pgknee.plan import Plan, Variant
from pgknee.pooler.lab import Poolers
from pgknee.run.schedule import schedule
from pgknee.run.scripts import Pgbench, pgbench_run, script_texts, scripts_for
from pgknee.system import proc, safefs
from pgknee.system.serverwheel import wheel_bindir
from pgknee.targets import Target
from pgknee.targets.local import server_user
from pgknee.workloads import Script, Workload, get_workload


@dataclass(frozen=True)
class Prepared:
    """What a run needs that needs no server, found and checked."""

    pgbench: Pgbench
    workload: Workload
    poolers: Poolers  # without pooled variants it has nothing to check, start, describe or record


def preflight(plan: Plan) -> Prepared:
    wheel = plan.target.pg_bindir == "wheel" and plan.target.dsn is None
    path = find_pgbench(plan.pgbench, prefer=wheel_bindir() if wheel else None)  # the wheel's server: its pgbench
    pgbench = Pgbench(path, *pgbench_version(path))
    check_open_files(plan)
    check_config(plan.target.server_ssh_config)  # before anything starts: a file ssh would run commands from
    workload = get_workload(plan.workload)  # a missing script file is bad input: say so now
    check_scripts(plan, pgbench, workload)
    poolers = Poolers(plan)
    if plan.pooled():
        texts = {v.name: [(src.filename, text) for src, text in script_texts(workload, v)] for v in plan.variants}
        poolers.check_before_start(texts, embedded=plan.target.dsn is None)
    return Prepared(pgbench, workload, poolers)


def check_scripts(plan: Plan, pgbench: Pgbench, workload: Workload) -> None:
    """pgbench parses every script (in every variant's form) before it connects: point it at a
    server that cannot exist and keep what it says about the scripts, with file and line. It
    runs as the user it will run as for the sweep."""
    run_as = server_user()
    tmp = safefs.private_dir("pgknee-preflight-", reachable_by=run_as)
    try:
        for i, v in enumerate(plan.variants):
            d = safefs.make_dir(tmp / f"v{i}", mode=0o711 if run_as else 0o700)
            scripts = [s for s, _ in scripts_for(workload, v, d, run_as)]
            run = pgbench_run(plan, pgbench, v, scripts, workload.defines(), clients=1, threads=1, seconds=1,
                              log_prefix=None, progress=False)
            argv = [a for a in run.argv() if not a.startswith("--time=")] + ["--transactions=1"]
            env = {**proc.base_env(), "PGHOST": str(tmp / "no-server"), "PGPORT": "1", "PGCONNECT_TIMEOUT": "1",
                   "PGPASSFILE": str(tmp / "no-passfile")}
            r = proc.run(argv, env=env, timeout=30, run_as=run_as, cwd=str(tmp))
            _refuse_script_errors(r.stderr, scripts, v, len(plan.variants) > 1)
    finally:
        safefs.remove_private_dir(tmp)


def _refuse_script_errors(stderr: str, scripts: list[Script], v: Variant, several: bool) -> None:
    for line in stderr.splitlines():
        if line.startswith("pgbench: error:") and "connection" not in line and "connect" not in line:
            msg = line.removeprefix("pgbench: error:").strip()
            for s in scripts:  # show the user's file name, not pgknee's copy
                msg = msg.replace(str(s.path), s.path.name)
            raise UserError(f"script error: {msg}" + (f" (in the {v.name} variant)" if several else ""),
                            "fix the script; pgbench's script syntax: \\set, \\sleep, SQL ending in ;")


def check_open_files(plan: Plan) -> None:
    """pgbench holds a socket per client; a managed pgbouncer one per client plus its pool."""
    clients = max(plan.clients)
    pools = [v.pooler.server_connections for v in plan.variants if v.pooler is not None]
    need = clients + 64 + (max(pools) + 64 if pools else 0) + max(v.idle for v in plan.variants)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard == resource.RLIM_INFINITY or hard >= need:
            resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
        else:
            raise DriverError(f"{clients} clients need about {need} open files but the limit is {hard}",
                              f"raise it with 'ulimit -n {need}' (or in limits.conf) and run again")


def server_connections(clients: int, v: Variant) -> int:
    """Server connections a step opens: its clients and idle sessions, or through a managed pool
    at most the pool's (the idle sessions go through it too); an external pooler's are its own."""
    if v.pooler is None:
        return clients + v.idle
    if v.pooler.kind == "external":
        return 0
    if v.pooler.kind == "pgpool":  # a child per client and pgbench's first connection, one for pgknee's console
        return min(clients + 1, v.pooler.pool_size) + 1
    return database_concurrency(clients, "managed", v.pooler.pool_size, v.pooler.reserve, v.pooler.processes)


def check_capacity(plan: Plan, target: Target, server: ServerFacts) -> None:
    """The largest step of every variant fits in what the server has room for (a variant's own
    max_connections, a restart, replaces the server's)."""
    ours = 1 if plan.sample_interval_s else 0  # the sampler, still to come
    for v in plan.variants:
        mine = int(dict(v.settings).get("max_connections", server.max_connections))
        free = server.room_for(mine) - ours
        need = max(server_connections(c, v) for c in plan.clients)
        if need <= free:
            continue
        what = f"variant {v.name}'s largest step" if len(plan.variants) > 1 else "the largest step"
        idle = f" ({v.idle} of them idle sessions)" if v.idle and v.pooler is None else ""

        hint = (f"add --set max_connections={need + mine - free + 10}, lower --clients or idle="
                if target.created_by_pgknee else "raise max_connections on the server or lower --clients")
        reserved = mine - server.room_for(mine) - server.connections_in_use
        if v.pooler is not None and v.pooler.kind != "external" and need == v.pooler.server_connections:
            _pool_too_large(v, need, free, mine, target.created_by_pgknee)
        raise TargetError(f"{what} needs {need} connections{idle} but the server has room for {free} "
                          f"(max_connections={mine}, {reserved} reserved, {server.connections_in_use} in use, "
                          f"{ours} for pgknee's sampler)", hint)


def _pool_too_large(v: Variant, need: int, free: int, mine: int, ours: bool) -> None:
    """The variant's pools, not its clients, ask for more than the server has room for: the
    variant is wrong as written (exit 2)."""
    p = v.pooler
    assert p is not None
    each = p.pool_size + p.reserve
    what = f"{p.processes} pgbouncer processes, each with a pool of {each}" if p.processes > 1 else f"a pool of {each}"
    hint = "lower pool= or processes="
    if p.kind == "pgpool":
        what, hint = f"pgpool-II with {p.pool_size} children and one for pgknee's console", "lower pool="
    raise UserError(f"variant {v.name}: {what} can open {need} server connections but the server has room for "
                    f"{free} (max_connections={mine})",
                    hint + (f", or add --set max_connections={need + mine - free + 10}"
                                                     if ours else ", or raise max_connections on the server"))


def dry_run(plan: Plan, prepared: Prepared, cpus: int) -> list[str]:
    """The plan as pgknee would execute it: every pgbench command line (no secrets: the connection
    travels in the environment) and the estimated wall time."""
    workload, steps = prepared.workload, schedule(plan)
    target = plan.target.dsn and f"--dsn {plan.to_dict()['target']['dsn']}" or "an embedded throwaway cluster"
    lines = [f"target: {target}; workload {workload.name} at scale {plan.workload.scale:g}; {len(steps)} steps; "
             "variants: " + "; ".join(f"{v.name} = {v.describe()}" for v in plan.variants)]
    lines += prepared.poolers.describe_managed(max(plan.clients), plan.duration_s + plan.warmup_s)
    with tempfile.TemporaryDirectory(prefix="pgknee-dry-") as tmp:
        scripts = {v.name: [s for s, _ in scripts_for(workload, v, Path(tmp), None)] for v in plan.variants}
        for spec in steps:
            run = pgbench_run(plan, prepared.pgbench, spec.variant, scripts[spec.variant.name], workload.defines(),
                              clients=spec.clients, threads=plan.threads_for(spec.clients, cpus),
                              seconds=plan.duration_s, log_prefix=Path("STEPDIR/log"), progress=True)
            argv = " ".join(a.replace(tmp + "/", "") for a in run.argv())
            lines.append(f"step {spec.seq}/{len(steps)} c{spec.clients} rep {spec.rep} {spec.variant.name}: {argv}")
    setup = 10.0 + (7.0 * plan.workload.scale if workload.name == "ewallet" else 0.0)
    total = plan.estimated_seconds() + setup
    lines.append(f"estimated wall time: {int(total // 60)} min {int(total % 60)} s "
                 f"({plan.duration_s + plan.warmup_s} s per step plus about "
                 f"{min(plan.pre_s, 0.5) + plan.post_s + 2:.0f} s around it, plus setup)")
    return lines
