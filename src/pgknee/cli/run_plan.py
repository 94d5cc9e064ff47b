"""pgknee run's plan: a plan file, a scenario or a stored run (--extend), with the flags on top,
the environment's DSNs, and what of it travels with the run (the command line and the plan
file, every password taken out)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

from pgknee.base.dsn import TARGETS, environment_dsn, parse_dsn, redact_dsn, scrub_secrets, split_secret
from pgknee.base.errors import UserError
from pgknee.model.results import Reopening
from pgknee.plan import DEFAULTS, NO_FILE, Plan, PlanFile, load_plan_file, plan_from_values
from pgknee.scenarios import SMALL_MACHINE_CPUS
from pgknee.scenarios import find as find_scenario

FLAG_KEYS = tuple(DEFAULTS)


def plan_from_args(a: argparse.Namespace) -> tuple[Plan, PlanFile]:
    """The plan file (if one is given) with the flags given on top; then the environment's DSN."""
    if a.plan and a.scenario:
        raise UserError("give a plan file or --scenario, not both")
    source = NO_FILE
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
    flags.update(_dsns_from_environment(flags, source))
    for key in ("dsn", "pooler_dsn", "pooler_admin_dsn"):
        dsn = flags.get(key) or source.values.get(key)
        if dsn:
            redact_dsn(dsn)  # a DSN that cannot be parsed is bad input: say so before anything starts
    return plan_from_values(flags, source), source


def _dsns_from_environment(flags: dict[str, Any], source: PlanFile) -> dict[str, str]:
    """PGKNEE_DSN, and the pooler's variables when a pooled-external variant needs them, unless
    a flag or the plan file gives the DSN."""
    def given(key: str) -> bool:
        return key in flags or key in source.values

    out = {}
    target = flags.get("target") or source.values.get("target")
    if target is not None:
        out.update(_target_dsn(target, given("dsn")))
    elif not given("dsn") and os.environ.get("PGKNEE_DSN"):
        out["dsn"] = os.environ["PGKNEE_DSN"]
    specs = flags.get("variants") or source.values.get("variants") or []
    if any("pooled-external" in str(s) for s in specs):  # the variables matter only to such a variant
        for key, var in (("pooler_dsn", "PGKNEE_POOLER_DSN"), ("pooler_admin_dsn", "PGKNEE_POOLER_ADMIN_DSN")):
            if not given(key) and os.environ.get(var):
                out[key] = os.environ[var]
    return out


def _target_dsn(target: str, dsn_given: bool) -> dict[str, str]:
    """--target env: the DSN the environment's PG* variables make (libpq's own list); --target
    embedded: no DSN (PGKNEE_DSN left alone)."""
    if target not in TARGETS:
        raise UserError(f"unknown target {target!r}", f"choose one of {', '.join(TARGETS)}")
    if dsn_given:
        raise UserError(f"--target {target} and a DSN both name the server",
                        "drop --dsn (or the plan's dsn) to use the environment's server, or drop --target")
    return {"dsn": environment_dsn(dict(os.environ))} if target == "env" else {}


def as_observed(plan: Plan) -> tuple[Plan, str | None]:
    """A workload captured with --observe is replayed at the application's pace: each client
    pauses between its transactions as the application's sessions did (think, a closed loop), less
    the client's own turnaround (pauses.TURNAROUND_MS: the replay's pgbench spends it too), unless
    a variant sets its own pace (think= or rate=). Returns the plan and what to tell the user."""
    import dataclasses

    from pgknee.workloads.captured.manifest import load
    from pgknee.workloads.captured.pauses import TURNAROUND_MS

    if plan.workload.name != "captured" or any(v.think_ms or v.rate for v in plan.variants):
        return plan, None
    o = load(plan.workload.path).observed
    if o is None or o.think_ms is None or o.think_ms < 0.001:
        return plan, None
    seen = round(min(o.think_ms, 60_000.0), 3)
    think = round(seen - TURNAROUND_MS, 3)
    if think < 0.001:
        return plan, (f"the application's sessions ran their transactions back to back ({seen:g} ms between two, "
                      f"no more than a client's own turnaround, which the replay's pgbench spends too): replayed "
                      f"without a pause; --variant think=... sets one, --variant rate={o.transactions_per_s:g} "
                      f"the application's arrival rate (open loop)")
    try:
        paced = dataclasses.replace(plan, variants=tuple(dataclasses.replace(v, think_ms=think) for v in plan.variants))
    except UserError as e:
        return plan, f"note: the application's {seen:g} ms between transactions is not replayed: {e.message}"
    return paced, (f"replaying the application's pace as observed: {think:g} ms between a client's transactions "
                   f"({seen:g} ms seen, less {TURNAROUND_MS:g} ms of the client's own turnaround, which the "
                   f"replay's pgbench spends too; its sessions worked in a closed loop); --variant think=... sets "
                   f"another, --variant rate={o.transactions_per_s:g} its arrival rate (open loop)")


COVERED_ENOUGH = 0.90  # a replay covering less of the application's database time says so before it starts


def coverage_note(plan: Plan) -> str | None:
    """A captured workload: the share of the application's database time its scripts replay,
    said first; under 90%, what the rest is (the statements left out, with why)."""
    from pgknee.workloads.captured.manifest import load

    if plan.workload.name != "captured":
        return None
    m = load(plan.workload.path)
    scripted = {x for sc in m.scripts for x in sc.statements}
    covered = sum(s.share_time for s in m.statements if s.id in scripted)
    line = (f"the replay covers {covered:.0%} of the application's database time ({len(scripted)} scripted "
            f"statement{'s' if len(scripted) != 1 else ''})")
    if covered >= COVERED_ENOUGH:
        return line
    left = sorted(m.skipped, key=lambda x: -x.calls)[:3]
    why = "; ".join(f"{x.query[:60]!r} ({x.calls:,} calls): {x.reason}" for x in left)
    return (f"note: {line}, under {COVERED_ENOUGH:.0%}: the answer is for that part of it"
            + (f"; left out, the most called: {why}" if why else "; the rest was beyond --top")
            + " ('pgknee workload show' lists them all)")


def password_note(plan: Plan, argv: list[str]) -> str | None:
    """A DSN given on the command line with its password in it: other users of this machine can
    read it in the process list."""
    dsn = plan.target.dsn
    if dsn and _password_of(dsn) and any(dsn in a for a in argv):
        return ("note: the DSN holds a password, which other users of this machine can read in the process "
                "list; prefer PGPASSWORD or ~/.pgpass (pgknee never stores or passes it on)")
    return None


_DSN_FLAGS = ("--dsn", "--pooler-dsn", "--pooler-admin-dsn")


def redacted_argv(argv: list[str]) -> list[str]:
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


def extension(args: argparse.Namespace) -> tuple[Plan, Reopening]:
    """pgknee run --extend RUN_ID: the stored run's plan, at the counts its recommendation
    proposes (or --clients), to be added to the same run."""
    from pgknee.analyze.recommend import recommend
    from pgknee.analyze.run import build
    from pgknee.plan import parse_clients, plan_from_stored
    from pgknee.store.claims import refusal_for
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    others = [k for k in FLAG_KEYS if k not in ("clients", "dsn", *_EXTEND_BINARIES)
              and getattr(args, k, None) is not None]
    if args.plan or args.scenario or others:
        raise UserError("--extend runs the stored run's own plan; only --clients, --dsn and the programs "
                        "(--pgbench, --pg-bindir, --pgbouncer) may be given with it",
                        _drop(others, "the plan file or --scenario"))
    store = Store(args.store, create=False)
    view = build(load_run(store, args.extend))
    run = view.data.run
    refusal = refusal_for(run, resume=False)  # checked again when the run is claimed (store/writer.py)
    if refusal is not None:
        raise refusal
    if args.clients:
        clients = parse_clients(args.clients)
    else:
        known = set(run.plan.get("clients", ()))  # a step out of line is measured again by repetitions, not here
        proposals = [[c for c in r.next_counts if c not in known] for v in view.variants()
                     if (r := recommend(view, v)).verdict in ("not-identified", "peaks", "levels-off", "saturated")]
        if not any(proposals):
            raise UserError(f"run {run.run_id} already shows its peak (see pgknee recommend {run.run_id})",
                            "give --clients to extend it anyway")
        clients = tuple(sorted({c for p in proposals for c in p}))
    stored = run.plan
    known = set(stored.get("clients", ()))
    dup = [c for c in clients if c in known]
    if dup:
        raise UserError(f"run {run.run_id} already has {dup[0]} clients", "give counts it has not run")
    plan = plan_from_stored(stored, clients, _dsn_again(args, stored),
                            binaries={k: getattr(args, k) for k in _EXTEND_BINARIES})
    _same_scripts(plan, view.data.env)
    merged = {**stored, "clients": [*stored.get("clients", ()), *clients]}
    return plan, Reopening(run.run_id, merged, stored, sum(s.status == "completed" for s in view.data.steps))


_EXTEND_BINARIES = ("pgbench", "pg_bindir", "pgbouncer", "pgpool")


def _drop(others: list[str], otherwise: str) -> str:
    """The hint of --extend's and --resume's refusal: the first flag they cannot take, else `otherwise`."""
    return f"drop {'--' + others[0].replace('_', '-') if others else otherwise}"


def _dsn_again(args: argparse.Namespace, stored: dict[str, Any]) -> str | None:
    """The DSN a stored run's server is reached by again (--dsn, else $PGKNEE_DSN; the stored one
    has no password); none for a run on an embedded server, which is started anew."""
    dsn: str | None = args.dsn or os.environ.get("PGKNEE_DSN")
    return dsn if stored.get("target", {}).get("dsn") else None


def resumption(args: argparse.Namespace) -> tuple[Plan, Reopening, Counter[tuple[str, int, int]]]:
    """pgknee run --resume RUN_ID: the steps of a stored run's plan that did not complete (it was
    interrupted, failed, or its pgknee died), run with the stored plan, checked again, into the
    same run; returns the plan, the run, and which (variant, clients, repetition) to run."""
    from pgknee.plan import plan_from_stored
    from pgknee.run.schedule import schedule
    from pgknee.store.claims import refusal_for
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    others = [k for k in FLAG_KEYS if k not in ("dsn", *_EXTEND_BINARIES) and getattr(args, k, None) is not None]
    if args.plan or args.scenario or args.extend or others:
        raise UserError("--resume runs the stored run's own plan; only --dsn and the programs (--pgbench, "
                        "--pg-bindir, --pgbouncer) may be given with it",
                        _drop(others, "the other plan"))
    data = load_run(Store(args.store, create=False), args.resume)
    run = data.run
    refusal = refusal_for(run, resume=True)  # a live pgknee holds it; one that is gone is taken over
    if refusal is not None:
        raise refusal
    stored = run.plan
    plan = plan_from_stored(stored, tuple(stored.get("clients") or ()), _dsn_again(args, stored),
                            binaries={k: getattr(args, k) for k in _EXTEND_BINARIES})
    _same_scripts(plan, data.env)
    # a plan may name a client count twice: steps are counted, not just matched
    todo = Counter((s.variant.name, s.clients, s.rep) for s in schedule(plan))
    todo.subtract(Counter((s.variant, s.clients, s.rep) for s in data.steps if s.status == "completed"))
    todo = +todo
    if not todo:
        raise UserError(f"every step of run {run.run_id} completed: there is nothing to resume",
                        f"pgknee run --extend {run.run_id} runs more client counts")
    return plan, Reopening(run.run_id, stored, stored, sum(s.status == "completed" for s in data.steps)), todo


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


def plan_file_env(source: PlanFile) -> dict[str, str]:
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
