"""Workloads: what a step runs. A workload installs its schema (or finds it),
renders its pgbench scripts with weights, and checks itself after the run."""

from __future__ import annotations

from pgknee.base.errors import UserError
from pgknee.plan import WorkloadSpec
from pgknee.workloads.base import Script, Workload


def get_workload(spec: WorkloadSpec) -> Workload:
    if spec.name == "ewallet":
        from pgknee.workloads.ewallet import EWallet

        return EWallet(spec)
    if spec.name in ("tpcb", "select-only", "read-heavy"):
        from pgknee.workloads.pgbench_builtin import PgbenchBuiltin

        return PgbenchBuiltin(spec)
    if spec.name == "custom":
        from pgknee.workloads.custom import Custom

        return Custom(spec)
    if spec.name == "captured":
        from pgknee.workloads.captured import Captured

        return Captured(spec)
    raise UserError(f"unknown workload {spec.name!r}", "choose: ewallet, tpcb, select-only, read-heavy, custom")


__all__ = ["Script", "Workload", "get_workload"]
