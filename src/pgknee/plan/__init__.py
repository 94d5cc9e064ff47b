"""The plan of a run: validated, frozen records (model), the small languages of their values
(parse), variant specs (variants), plans from flags and files (files), and from a stored run
(stored). Nothing here connects to anything or spawns anything."""

from pgknee.plan.files import DEFAULTS, NO_FILE, PLAN_FILE_KEYS, PlanFile, load_plan_file, plan_from_values
from pgknee.plan.model import (
    IDLE_KINDS,
    PGBENCH_WORKLOADS,
    POOL_MODES,
    PROTOCOLS,
    WORKLOADS,
    Plan,
    PoolerSpec,
    TargetSpec,
    Variant,
    WorkloadSpec,
    check_schema_name,
    default_schema,
)
from pgknee.plan.parse import DEFAULT_CLIENTS, clients_text, parse_clients, parse_script, parse_seconds
from pgknee.plan.stored import plan_from_stored, variant_from_dict
from pgknee.plan.variants import parse_variant, parse_variants

__all__ = [
    "DEFAULTS", "DEFAULT_CLIENTS", "IDLE_KINDS", "NO_FILE", "PGBENCH_WORKLOADS", "PLAN_FILE_KEYS", "POOL_MODES",
    "PROTOCOLS", "WORKLOADS", "Plan", "PlanFile", "PoolerSpec", "TargetSpec", "Variant", "WorkloadSpec",
    "check_schema_name", "clients_text", "default_schema", "load_plan_file", "parse_clients", "parse_script",
    "parse_seconds", "parse_variant", "parse_variants", "plan_from_stored", "plan_from_values", "variant_from_dict",
]
