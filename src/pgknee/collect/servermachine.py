"""The server's machine, read once at the start of a run: its CPUs and memory, and where each
figure came from (the user's flag, the server's own /proc read through SQL or over ssh, this
machine for the embedded server, or unknown and why); and whether it is a managed service,
which keeps its OS figures to itself, and where the user finds them."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import psycopg

from pgknee.base.errors import first_line
from pgknee.collect import queries
from pgknee.collect.proctext import (
    allowed_cpus,
    parse_cpu_max,
    parse_meminfo,
    parse_memory_max,
    parse_stat,
    usable_cpus,
)
from pgknee.model.keys import Env

# the files pgknee reads from a server's /proc (and its cgroup), by the name its samples give them
PROC_FILES = {"stat": "/proc/stat", "meminfo": "/proc/meminfo", "loadavg": "/proc/loadavg",
              "diskstats": "/proc/diskstats", "net_dev": "/proc/net/dev"}
FACT_FILES = {"stat": "/proc/stat", "meminfo": "/proc/meminfo", "status": "/proc/self/status",
              "cpu_max": "/sys/fs/cgroup/cpu.max", "memory_max": "/sys/fs/cgroup/memory.max",
              # cgroup v1
              "cfs_quota": "/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "cfs_period": "/sys/fs/cgroup/cpu/cpu.cfs_period_us",
              "memory_limit": "/sys/fs/cgroup/memory/memory.limit_in_bytes"}


@dataclass(frozen=True)
class Managed:
    service: str
    hidden: str  # what it keeps to itself
    where: str  # where the user finds it


_HIDDEN = "the host's CPU, memory, disk and network figures"
SERVICES = {
    "aurora": Managed("Amazon Aurora PostgreSQL", _HIDDEN,
                      "CloudWatch (CPUUtilization, FreeableMemory), Enhanced Monitoring and Performance Insights"),
    "rds": Managed("Amazon RDS for PostgreSQL", _HIDDEN,
                   "CloudWatch (CPUUtilization, FreeableMemory, ReadIOPS), Enhanced Monitoring and Performance "
                   "Insights"),
    "cloudsql": Managed("Google Cloud SQL for PostgreSQL", _HIDDEN,
                        "Cloud Monitoring (database/cpu/utilization, database/memory/usage) and Query Insights"),
    "azure": Managed("Azure Database for PostgreSQL", _HIDDEN,
                     "Azure Monitor metrics (cpu_percent, memory_percent, disk_iops_consumed_percentage)"),
    "neon": Managed("Neon", _HIDDEN, "the Neon console's Monitoring page (CPU, RAM, connections)"),
}
# what SQL shows of each: roles, settings' prefixes; Aurora by its function
_ROLES = {"rds_superuser": "rds", "rdsadmin": "rds", "cloudsqlsuperuser": "cloudsql", "azure_pg_admin": "azure",
          "azuresu": "azure", "neon_superuser": "neon"}
_PREFIXES = {"rds": "rds", "cloudsql": "cloudsql", "azure": "azure", "neon": "neon"}
# settings of theirs by name too: pg_settings does not list a placeholder (a prefix no library
# of this server defines), current_setting(name, true) finds it
_SETTINGS = ("rds.extensions", "rds.force_ssl", "cloudsql.iam_authentication", "cloudsql.enable_pgaudit",
             "azure.extensions", "azure.accepted_password_auth_method", "neon.tenant_id", "neon.timeline_id")
_ORDER = ("aurora", "rds", "cloudsql", "azure", "neon")


def classify(roles: list[str], aurora: bool, prefixes: list[str]) -> Managed | None:
    """The managed service these signs point to, if any."""
    signs = {_ROLES[r] for r in roles if r in _ROLES} | {_PREFIXES[p] for p in prefixes if p in _PREFIXES}
    if aurora:
        signs.add("aurora")
    return next((SERVICES[k] for k in _ORDER if k in signs), None)


def read_managed(conn: psycopg.Connection[Any]) -> Managed | None:
    row = queries.one_row(conn, "managed", (list(_ROLES), list(_PREFIXES), list(_SETTINGS)))
    return classify(list(row[0]), bool(row[1]), [*row[2], *row[3]])


def read_files_sql(conn: psycopg.Connection[Any], files: Mapping[str, str]) -> tuple[dict[str, str], str]:
    """The server's own files through pg_read_file: those it has, and why none could be read
    ('' when they could)."""
    out: dict[str, str] = {}
    for name, path in files.items():
        try:
            text = conn.execute(queries.text("read_file"), (path,)).fetchone()
        except psycopg.errors.InsufficientPrivilege:
            return {}, ("pg_read_file is not allowed to this role: it needs superuser, or pg_read_server_files "
                        "and EXECUTE on pg_read_file")
        except psycopg.Error as e:
            if name != "stat":
                continue  # a limit's file it cannot read (a directory, a kernel without it): no limit known
            return {}, f"pg_read_file failed: {first_line(e)}"
        if text is not None and text[0] is not None:
            out[name] = str(text[0])
    if "stat" not in out:
        return {}, "the server has no /proc/stat (not Linux?)"
    return out, ""


@dataclass(frozen=True)
class ServerMachine:
    cpus: int | None
    cpus_source: str  # where the figure came from; when None, why it is unknown
    mem_kb: int | None
    mem_source: str
    managed: Managed | None = None
    limited: str = ""  # what narrowed the CPUs (a cpuset, a cgroup quota)
    proc: str | None = None  # how the server's /proc was read ('pg_read_file /proc', 'ssh HOST'); None: it was not
    proc_why: str = ""  # why not

    def environment(self) -> dict[str, str]:
        env = {Env.SERVER_CPUS_SOURCE: self.cpus_source, Env.SERVER_MEM_SOURCE: self.mem_source}
        if self.cpus is not None:
            env[Env.SERVER_CPUS] = str(self.cpus)
        if self.mem_kb is not None:
            env[Env.SERVER_MEM_GB] = f"{self.mem_kb / 2**20:.1f}"
        if self.limited:
            env[Env.SERVER_CPUS_LIMITED] = self.limited
        if self.managed is not None:
            env.update({Env.SERVER_MANAGED: self.managed.service,
                        Env.SERVER_MANAGED_HIDDEN: f"keeps {self.managed.hidden} to itself: see {self.managed.where}"})
        return {str(k): v for k, v in env.items()}


def from_files(files: Mapping[str, str], source: str) -> ServerMachine:
    """The machine from its own files (/proc/stat, /proc/meminfo, a process's status, cpu.max)."""
    st = parse_stat(files.get("stat", ""))
    mem = parse_meminfo(files.get("meminfo", "")).get("MemTotal")
    mem_source = source if mem else "unknown"
    if st is None or st.cpus == 0:
        return ServerMachine(None, f"unknown: {source} gave no CPU count", mem, mem_source)
    quota = parse_cpu_max(files.get("cpu_max", "")) or parse_cpu_max(
        f"{files.get('cfs_quota', '').strip()} {files.get('cfs_period', '').strip()}")
    n, limited = usable_cpus(st.cpus, allowed_cpus(files.get("status", "")), quota)
    cap = parse_memory_max(files.get("memory_max", "")) or parse_memory_max(files.get("memory_limit", ""))
    if cap is not None and mem is not None and cap < mem:
        mem, mem_source = cap, f"{source}; cgroup memory.max"
    return ServerMachine(n, source, mem, mem_source, limited=limited, proc=source)


@dataclass(frozen=True)
class Told:
    """What the user said of the server's machine (--server-cpus, --server-memory), and
    whether pgknee runs the server itself on this machine."""

    cpus: int | None = None
    mem_gb: float | None = None
    embedded: bool = False


def this_machine() -> ServerMachine:
    from pgknee.collect.osproc import read_meminfo

    mem = read_meminfo().get("MemTotal")
    where = "this machine: the embedded server"
    return ServerMachine(os.cpu_count() or 1, where, mem, where)


def server_machine(conn: psycopg.Connection[Any], told: Told,
                   ssh_files: tuple[dict[str, str], str] | None = None) -> ServerMachine:
    """The machine as well as pgknee can know it: what the user told wins, then the server's
    own /proc (over ssh, else through SQL), then this machine for the embedded server."""
    managed = read_managed(conn)
    if told.embedded:
        found = this_machine()
    elif ssh_files is not None and ssh_files[0]:
        found = from_files(ssh_files[0], ssh_files[1])
    else:
        files, why = read_files_sql(conn, FACT_FILES)
        if ssh_files is not None:
            why = f"{ssh_files[1]}; {why}"
        found = from_files(files, "pg_read_file /proc") if files else \
            ServerMachine(None, f"unknown: {why}", None, f"unknown: {why}", proc_why=why)
    cpus, cpus_source, limited = found.cpus, found.cpus_source, found.limited
    if told.cpus is not None:
        cpus, cpus_source, limited = told.cpus, "--server-cpus", ""
    mem, mem_source = found.mem_kb, found.mem_source
    if told.mem_gb is not None:
        mem, mem_source = round(told.mem_gb * 2**20), "--server-memory"
    return ServerMachine(cpus, cpus_source, mem, mem_source, managed, limited, found.proc, found.proc_why)
