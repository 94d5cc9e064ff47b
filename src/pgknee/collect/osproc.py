"""OS samples from /proc, once a second: CPU breakdown, load average, context
switches, runnable processes, memory, and the load generator's own CPU."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass

from pgknee.collect.periodic import PeriodicSampler
from pgknee.collect.proctext import parse_meminfo, parse_stat
from pgknee.model.samples import OsSample, OsSamples

CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class _Raw:
    t: float
    cpu: tuple[int, ...]  # user nice system idle iowait irq softirq steal
    ctxt: int
    client_ticks: int | None
    pooler_ticks: tuple[int | None, ...] = ()
    pooler_pids: tuple[int, ...] = ()


def _read_stat() -> tuple[tuple[int, ...], int, int, int]:
    with open("/proc/stat") as f:
        st = parse_stat(f.read())
    if st is None:
        return (0,) * 8, 0, 0, 0
    return st.cpu, st.ctxt, st.running, st.blocked


def read_meminfo() -> dict[str, int]:
    with open("/proc/meminfo") as f:
        return parse_meminfo(f.read())


def process_ticks(pid: int) -> int | None:
    """utime + stime of a process (all its threads), in clock ticks."""
    ticks = process_cpu_ticks(pid)
    return sum(ticks) if ticks else None


def process_runq_wait_ns(pid: int) -> int | None:
    """Nanoseconds the process's threads have waited on a run queue for a CPU (/proc/PID/schedstat,
    its second field: scheduler statistics the kernel keeps for every task)."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[1])
    except (OSError, IndexError, ValueError):
        return None


def process_cpu_ticks(pid: int) -> tuple[int, int] | None:
    """(utime, stime) of a process (all its threads), in clock ticks; None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            data = f.read()
    except OSError:
        return None
    fields = data.rsplit(")", 1)[1].split()
    return int(fields[11]), int(fields[12])


def listen_queue(port: int) -> int | None:
    """Connections in 127.0.0.1:port's accept queue (/proc/net/tcp's rx_queue of a listening
    socket): pgpool's clients that no child has taken yet."""
    want = f"0100007F:{port:04X}"
    try:
        with open("/proc/net/tcp") as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                if fields[1] == want and fields[3] == "0A":
                    return int(fields[4].split(":")[1], 16)
    except (OSError, IndexError, ValueError):
        pass
    return None


def orphaned_shm(creators: set[int]) -> list[int]:
    """The ids of SysV shared memory segments one of `creators` made and nothing holds any more
    (/proc/sysvipc/shm: key shmid perms size cpid lpid nattch ...)."""
    out: list[int] = []
    with contextlib.suppress(OSError), open("/proc/sysvipc/shm") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            with contextlib.suppress(IndexError, ValueError):
                if int(fields[4]) in creators and int(fields[6]) == 0:
                    out.append(int(fields[1]))
    return out


def _live_processes() -> list[tuple[int, int, int]]:
    """(pid, parent pid, process group) of every live process, from /proc (zombies left out)."""
    out: list[tuple[int, int, int]] = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                with open(f"/proc/{d}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if fields[0] not in ("Z", "X"):
                    out.append((int(d), int(fields[1]), int(fields[2])))
    return out


def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid` (reparented ones included)."""
    return [pid for pid, _, group in _live_processes() if group == pgid]


def descendants(pid: int) -> list[int]:
    """`pid` and every live process below it."""
    children: dict[int, list[int]] = {}
    for child, parent, _ in _live_processes():
        children.setdefault(parent, []).append(child)
    out = [pid]
    for p in out:  # grows as it goes: breadth first
        out.extend(children.get(p, ()))
    return out


def cpu_percentages(a: tuple[int, ...], b: tuple[int, ...]) -> dict[str, float]:
    d = [y - x for x, y in zip(a, b, strict=True)]
    total = sum(d) or 1
    user, nice, system, idle, iowait, irq, softirq, steal = d
    return {"cpu_user": 100 * user / total, "cpu_nice": 100 * nice / total, "cpu_system": 100 * system / total,
            "cpu_iowait": 100 * iowait / total, "cpu_irq": 100 * (irq + softirq) / total,
            "cpu_steal": 100 * steal / total, "cpu_idle": 100 * idle / total}


class OsSampler(PeriodicSampler[_Raw, OsSample]):
    """This machine's /proc (the server's too for the embedded server), pgbench's and a managed
    pgbouncer's CPU."""

    def __init__(self, interval_s: float = 1.0) -> None:
        super().__init__(interval_s, "pgknee-os")

    def _record(self, rows: tuple[OsSample, ...]) -> OsSamples:
        return OsSamples(rows)

    def _raw(self) -> tuple[_Raw, int, int]:
        cpu, ctxt, running, blocked = _read_stat()
        # pgbench's, and a managed pooler's processes: each single-threaded, so the busiest one's CPU is watched
        pid, pooler = self.step.client, self.step.pooler
        return _Raw(time.time(), cpu, ctxt, process_ticks(pid) if pid else None,
                    tuple(process_ticks(p) for p in pooler), pooler), running, blocked

    def _sample_once(self) -> None:
        raw, running, blocked = self._raw()
        prev, self._prev = self._prev, raw
        if prev is None:
            return
        dt = raw.t - prev.t
        if dt <= 0:
            return
        pct = cpu_percentages(prev.cpu, raw.cpu)
        with open("/proc/loadavg") as f:
            load1 = float(f.read().split()[0])
        mem = read_meminfo()
        client = None
        if raw.client_ticks is not None and prev.client_ticks is not None:
            client = 100.0 * (raw.client_ticks - prev.client_ticks) / CLK_TCK / dt
        # only the same processes at both ends (pgpool started again, a pgbouncer process gone: not)
        pairs = zip(prev.pooler_ticks, raw.pooler_ticks, strict=True) if prev.pooler_pids == raw.pooler_pids else ()
        busy = [100.0 * (b - a) / CLK_TCK / dt for a, b in pairs if a is not None and b is not None]
        pooler = max(busy) if busy else None
        row = OsSample(self.phase, raw.t, pct["cpu_user"], pct["cpu_nice"], pct["cpu_system"],
               pct["cpu_iowait"], pct["cpu_irq"], pct["cpu_steal"], pct["cpu_idle"], load1,
               (raw.ctxt - prev.ctxt) / dt, running, blocked, mem.get("MemTotal", 0), mem.get("MemAvailable", 0),
               mem.get("MemFree", 0), mem.get("Cached", 0), client, pooler)
        self._keep(row)


