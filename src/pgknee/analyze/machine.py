"""Whose CPUs a line counts. The rule of thumb, AAS against the CPUs, the CPU line of the wait
chart: the SERVER's, as the run found them (with where that number came from), withheld when
unknown. pgbench's threads and the System table's samples: the CLIENT machine's. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pgknee.analyze.records import Group
from pgknee.keys import Env

UNKNOWN_HINT = "give --server-cpus N"
EMBEDDED = "this machine (the embedded server)"


@dataclass(frozen=True)
class Cpus:
    n: int | None
    source: str  # where n came from; when n is None, why it is unknown

    def label(self) -> str:
        """'8 CPUs (pg_read_file /proc)', or 'CPUs unknown (why)'."""
        return f"{self.n} CPUs ({self.source})" if self.n is not None else f"CPUs unknown ({self.source})"

    def withheld(self) -> str:
        """Why a line that needs the server's CPUs is not shown."""
        return f"server CPUs unknown ({self.source}): {UNKNOWN_HINT}"


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def server_cpus(env: Mapping[str, str], target_kind: str | None = None) -> Cpus:
    """The server's CPUs as stored with the run. A store from before pgknee read them: the
    embedded server's are this machine's, a remote one's are unknown. `target_kind`: the run's
    (its row's), when the environment does not say."""
    n = _int(env.get(Env.SERVER_CPUS))
    source = env.get(Env.SERVER_CPUS_SOURCE)
    if n is not None and n > 0:
        limited = env.get(Env.SERVER_CPUS_LIMITED)
        return Cpus(n, f"{source or '?'}{'; ' + limited if limited else ''}")
    if source is not None:
        why = source.removeprefix("unknown: ")
        managed = env.get(Env.SERVER_MANAGED)
        return Cpus(None, f"{managed} keeps them to itself" if managed else why)
    if env.get(Env.TARGET_KIND, target_kind) == "embedded" and _int(env.get(Env.HOST_CPUS)):
        return Cpus(_int(env.get(Env.HOST_CPUS)), EMBEDDED)
    return Cpus(None, "the run was stored before pgknee read the server's machine")


def client_cpus(env: Mapping[str, str]) -> int | None:
    """The client machine's CPUs (pgbench's, and the OS samples')."""
    return _int(env.get(Env.HOST_CPUS))


def server_line(env: Mapping[str, str], target_kind: str | None = None) -> str:
    """'server: 8 CPUs (pg_read_file /proc), 31.4 GB'."""
    cpus = server_cpus(env, target_kind)
    mem = env.get(Env.SERVER_MEM_GB)
    mem_source = env.get(Env.SERVER_MEM_SOURCE, "")
    if mem is None and env.get(Env.TARGET_KIND, target_kind) == "embedded":
        mem, mem_source = env.get(Env.HOST_MEM_GB), EMBEDDED
    if mem is not None:
        memory = f"{mem} GB" + (f" ({mem_source})" if mem_source != cpus.source else "")
    else:
        memory = "memory unknown (give --server-memory GB)"
    return f"server: {cpus.label()}, {memory}"


def managed_note(env: Mapping[str, str]) -> str | None:
    """'Amazon RDS for PostgreSQL keeps the host's CPU, ... to itself: see CloudWatch ...'."""
    managed = env.get(Env.SERVER_MANAGED)
    return f"{managed} {env.get(Env.SERVER_MANAGED_HIDDEN, '')}" if managed else None


@dataclass(frozen=True)
class Machine:
    """Both machines of a run: the server's CPUs, the client's, and whether they are one."""

    server: Cpus
    client: int | None
    local: bool  # the OS samples are the server's machine's too


def machine_of(env: Mapping[str, str], target_kind: str | None = None) -> Machine:
    local = env.get(Env.TARGET_LOCAL) == "true" or env.get(Env.TARGET_KIND, target_kind) == "embedded"
    return Machine(server_cpus(env, target_kind), client_cpus(env), local)


def system_reasons(groups: Sequence[Group], m: Machine) -> list[str]:
    """The OS samples' evidence, said of the machine they were taken on."""
    sat = [g for g in groups if g.system.peak_cpu is not None and g.system.peak_cpu >= 90]
    if not sat:
        return []
    g = sat[0]
    whose = "this machine's (server and client)" if m.local else "the client machine's"
    return [f"{whose} CPU was saturated from {g.clients} clients (peak {g.system.peak_cpu:.0f}%, "
            f"system {g.system.peak_system or 0:.0f}%, load {g.system.peak_load1 or 0:.1f} on "
            f"{m.client if m.client is not None else '?'} cores, {g.system.ctx_per_s or 0:,.0f} context switches/s)"]
