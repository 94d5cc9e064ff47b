"""Whose CPUs a line counts. The rule of thumb, AAS against the CPUs, the CPU line of the wait
chart: the SERVER's, as the run found them (with where that number came from), withheld when
unknown. pgbench's threads and the System table's samples: the CLIENT machine's. Pure."""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from pgknee.analyze.view import Group, RunView
from pgknee.analyze.words import clause
from pgknee.model.facts import KcacheBefore16, Measured, StepFacts
from pgknee.model.keys import Env
from pgknee.model.results import RunData
from pgknee.model.rules import cpu_saturated
from pgknee.model.samples import ServerOsSample
from pgknee.model.server import KcacheStep

UNKNOWN_HINT = "give --server-cpus N"
EMBEDDED = "this machine: the embedded server"


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


def with_server_cpus(data: RunData, n: int | None) -> RunData:
    """The run read again with the server's CPUs given (`pgknee recommend --server-cpus N`): a
    managed server keeps them to itself, its provider's console does not."""
    if n is None:
        return data
    env = {k: v for k, v in data.env.items() if k != Env.SERVER_CPUS_LIMITED}
    return dataclasses.replace(data, env={**env, Env.SERVER_CPUS: str(n), Env.SERVER_CPUS_SOURCE: "--server-cpus"})


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
        return Cpus(n, f"{source or '?'}{clause('; {}', limited)}")
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
    server_evidence: tuple[str, ...] = ()  # what the server's own OS samples showed (server_reasons)


def machine_of(env: Mapping[str, str], target_kind: str | None = None) -> Machine:
    local = env.get(Env.TARGET_LOCAL) == "true" or env.get(Env.TARGET_KIND, target_kind) == "embedded"
    return Machine(server_cpus(env, target_kind), client_cpus(env), local)


def system_reasons(groups: Sequence[Group], m: Machine) -> list[str]:
    """The OS samples' evidence, said of the machine they were taken on."""
    sat = [g for g in groups if cpu_saturated(g.system.peak_cpu, g.system.mean_cpu)]
    if not sat or (m.local and m.server_evidence):  # one machine: its own /proc said it already
        return list(m.server_evidence)
    g = sat[0]
    whose = "this machine's (server and client)" if m.local else "the client machine's"
    return [*m.server_evidence, f"{whose} CPU was saturated from {g.clients} clients (peak {g.system.peak_cpu:.0f}%, "
            f"system {g.system.peak_system or 0:.0f}%, load {g.system.peak_load1 or 0:.1f} on "
            f"{m.client if m.client is not None else '?'} cores, {g.system.ctx_per_s or 0:,.0f} context switches/s)"]


@dataclass(frozen=True)
class ServerRow:
    """The server's OS during one client count's bench phases (its repetitions' samples): CPU
    in % of all the server's CPUs, the busiest sample's and the means; rates per second."""

    samples: int
    peak_cpu: float
    mean_cpu: float
    mean_user: float
    mean_system: float
    mean_iowait: float
    mean_steal: float
    peak_load1: float | None
    run_queue: float  # mean runnable processes
    ctx_per_s: float
    mem_available_mb: float | None  # the lowest
    disk_read_mbps: float
    disk_write_mbps: float
    net_rx_mbps: float
    net_tx_mbps: float


def server_row(data: RunData, group: Group) -> ServerRow | None:
    samples = [x for s in group.done for x in data.server_os(s.step_id)]
    if not samples:
        return None

    def mean(get: Callable[[ServerOsSample], float]) -> float:
        return statistics.fmean(get(x) for x in samples)

    loads = [x.load1 for x in samples if x.load1 is not None]
    avail = [x.mem_available_kb for x in samples if x.mem_available_kb is not None]
    return ServerRow(
        samples=len(samples), peak_cpu=max(100.0 - x.cpu_idle for x in samples),
        mean_cpu=mean(lambda x: 100.0 - x.cpu_idle), mean_user=mean(lambda x: x.cpu_user + x.cpu_nice),
        mean_system=mean(lambda x: x.cpu_system), mean_iowait=mean(lambda x: x.cpu_iowait),
        mean_steal=mean(lambda x: x.cpu_steal), peak_load1=max(loads) if loads else None,
        run_queue=mean(lambda x: x.procs_running), ctx_per_s=mean(lambda x: x.ctx_per_s),
        mem_available_mb=min(avail) / 1024.0 if avail else None,
        disk_read_mbps=mean(lambda x: x.disk_read_bps) / 2**20,
        disk_write_mbps=mean(lambda x: x.disk_write_bps) / 2**20,
        net_rx_mbps=mean(lambda x: x.net_rx_bps) / 2**20, net_tx_mbps=mean(lambda x: x.net_tx_bps) / 2**20)


def server_reasons(view: RunView, groups: Sequence[Group], cpus: Cpus) -> list[str]:
    """The server's own OS samples' evidence, with its CPUs and where that count came from."""
    rows = [(g, r) for g in groups if (r := server_row(view.data, g)) is not None]
    sat = [(g, r) for g, r in rows if cpu_saturated(r.peak_cpu, r.mean_cpu)]
    if not sat:
        return []
    g, r = sat[0]
    on = f" on its {cpus.label()}" if cpus.n is not None else ""
    return [f"the server's CPU was saturated from {g.clients} clients (its own /proc: peak {r.peak_cpu:.0f}%, mean "
            f"system {r.mean_system:.0f}%, load {r.peak_load1 or 0:.1f}, run queue {r.run_queue:.1f}{on})"]


def kcache_cpu(data: RunData, group: Group) -> tuple[float, float] | None:
    """pg_stat_kcache's figure of the server's CPU for one client count (the mean of its
    repetitions): the cores its queries kept busy (user + system CPU seconds over the bench
    phase's length), and the system share of that, %."""
    busy, system = [], []
    for s in group.done:
        measured = data.facts.get(s.step_id, StepFacts()).of(Measured)
        seconds = (measured.bench_seconds if measured is not None else None) or s.duration_s
        cpu = _kcache_seconds(data, s.step_id)
        if cpu is None or not seconds:
            continue
        total = cpu[0] + cpu[1]
        busy.append(total / seconds)
        system.append(100.0 * cpu[1] / total if total else 0.0)
    return (statistics.fmean(busy), statistics.fmean(system)) if busy else None


def _kcache_seconds(data: RunData, step_id: int) -> tuple[float, float] | None:
    """A step's queries' (user, system) CPU seconds: its pg_stat_kcache record, or the step facts
    a run before format 16 kept them in."""
    rec = next((r for r in data.server(step_id) if isinstance(r, KcacheStep)), None)
    if rec is not None:
        return rec.user_s, rec.system_s
    old = data.facts.get(step_id, StepFacts()).of(KcacheBefore16)
    if old is None or old.user_s is None:
        return None
    return old.user_s, old.system_s or 0.0


def server_unseen(view: RunView, groups: Sequence[Group], m: Machine) -> str | None:
    """Why the server's saturation could not be seen, or None when it could: its CPU not sampled
    (neither its own /proc nor this machine's, shared with it: a managed server, say), and either
    its CPUs unknown (no wait class can be read against them) or no wait profile taken."""
    if m.local or any(server_row(view.data, g) is not None for g in groups):
        return None
    if m.server.n is None:
        return (f"its CPUs are unknown ({m.server.source}) and its CPU is not sampled; give them (pgknee "
                "recommend RUN --server-cpus N) so that its wait profile can tell")
    if not any(g.snapshots for g in groups):
        return ("its CPU is not sampled and no wait profile was taken (--sample-interval 0); run with "
                "sampling on")
    return None
