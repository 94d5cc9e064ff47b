"""A run's plan as the store keeps it (JSON), back into a Plan: through every check a plan
from flags passes. The programs it names are never taken from it."""

from __future__ import annotations

import dataclasses
from typing import Any

from pgknee.base.errors import UserError
from pgknee.plan.model import Plan, PoolerSpec, TargetSpec, Variant, WorkloadSpec


def variant_from_dict(d: dict[str, Any]) -> Variant:
    """A variant as stored in a run's plan (JSON), back, through the same checks as a variant
    given on the command line; keys a newer pgknee added are ignored."""
    known = {f.name for f in dataclasses.fields(Variant)}
    fields = {k: v for k, v in d.items() if k in known}
    if fields.get("pooler"):
        pooler_known = {f.name for f in dataclasses.fields(PoolerSpec)}
        fields["pooler"] = PoolerSpec(**{k: v for k, v in fields["pooler"].items() if k in pooler_known})
    fields["settings"] = tuple(tuple(s) for s in fields.get("settings", ()))
    return Variant(**fields)


# a stored plan gives the sweep's shape; the programs it ran are found again (or given as flags),
# never taken from the store, where a path could have been changed to run something else
_STORED_SWEEP_KEYS = ("duration_s", "reps", "summary", "noise_pct", "warmup_s", "threads", "max_tries",
                      "sample_interval_s", "os_interval_s", "pre_s", "post_s", "settle_s", "idle_flush_s",
                      "server_wait_s", "log_sampling_rate", "steady_pct", "min_duration_s",
                      "pooler_dsn", "pooler_admin_dsn", "pooler_interval_s", "sample_all_databases",
                      "query_text")


def plan_from_stored(d: dict[str, Any], clients: tuple[int, ...], dsn: str | None = None,
                     binaries: dict[str, str | None] | None = None) -> Plan:
    """A run's stored plan (JSON) with other client counts: what pgknee run --extend runs. It
    passes every check a plan from flags passes. The stored DSN has no password; the
    environment or ~/.pgpass supplies it, or --dsn."""
    try:
        fields: dict[str, Any] = {k: d[k] for k in _STORED_SWEEP_KEYS if k in d}
        t = d.get("target") or {}
        fields["target"] = TargetSpec(dsn=dsn or t.get("dsn"), pg_bindir=(binaries or {}).get("pg_bindir"),
                                      settings=tuple(tuple(s) for s in t.get("settings", ())), keep=False,
                                      server_cpus=t.get("server_cpus"), server_memory_gb=t.get("server_memory_gb"),
                                      server_ssh=t.get("server_ssh"), server_ssh_config=t.get("server_ssh_config"))
        w = d.get("workload") or {}
        fields["workload"] = WorkloadSpec(name=w.get("name", "ewallet"), scale=w.get("scale", 1.0),
                                          schema=w.get("schema") or "", reinit=False,
                                          scripts=tuple((str(p), int(wt)) for p, wt in w.get("scripts", ())),
                                          path=str(w.get("path") or ""), allow_writes=bool(w.get("allow_writes")))
        if "variants" in d:
            fields["variants"] = tuple(variant_from_dict(v) for v in d["variants"])
        fields["clients"] = clients
        fields.update({k: v for k, v in (binaries or {}).items() if k in ("pgbench", "pgbouncer", "pgpool")})
        return Plan(**fields)
    except UserError as e:
        raise UserError(f"the stored plan does not pass pgknee's checks: {e.message}",
                        "pgknee runs a stored plan only as far as it would run the same flags") from None
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        raise UserError(f"the stored plan is not one pgknee wrote ({type(e).__name__})",
                        "extend only runs made by pgknee; start a new run instead") from None


# names a user can give alone: what each one changes from the base
