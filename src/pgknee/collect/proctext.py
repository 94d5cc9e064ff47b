"""Linux /proc (and cgroup) texts, parsed: the same parsers for this machine's files, for a
server's read through SQL (pg_read_file) and for those an ssh reader sends. Pure: text in,
numbers out; a text that is not what Linux writes gives nothing rather than an error."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

# whole disks, not their partitions, loop devices, RAM disks or device-mapper volumes (whose
# I/O is their disks' too)
_DISK = re.compile(r"(sd[a-z]+|vd[a-z]+|xvd[a-z]+|hd[a-z]+|nvme\d+n\d+|mmcblk\d+)")
SECTOR = 512  # /proc/diskstats counts 512-byte sectors whatever the device's own


@dataclass(frozen=True)
class Stat:
    cpu: tuple[int, ...]  # the 'cpu ' line: user nice system idle iowait irq softirq steal
    cpus: int  # cpuN lines: the CPUs the kernel runs on
    ctxt: int
    running: int
    blocked: int


def parse_stat(text: str) -> Stat | None:
    cpu: tuple[int, ...] = ()
    cpus = ctxt = running = blocked = 0
    for line in text.splitlines():
        parts = line.split()
        if not parts:
            continue
        key = parts[0]
        if key == "cpu":
            cpu = tuple(int(x) for x in parts[1:9])
        elif key.startswith("cpu") and key[3:].isdigit():
            cpus += 1
        elif key == "ctxt":
            ctxt = int(parts[1])
        elif key == "procs_running":
            running = int(parts[1])
        elif key == "procs_blocked":
            blocked = int(parts[1])
    if len(cpu) < 8:
        return None
    return Stat(cpu, cpus, ctxt, running, blocked)


def parse_meminfo(text: str) -> dict[str, int]:
    """Each line's figure, in kB as the file gives it."""
    out = {}
    for line in text.splitlines():
        k, _, rest = line.partition(":")
        fields = rest.split()
        if fields and fields[0].isdigit():
            out[k.strip()] = int(fields[0])
    return out


def parse_loadavg(text: str) -> float | None:
    try:
        return float(text.split()[0])
    except (IndexError, ValueError):
        return None


def parse_diskstats(text: str) -> tuple[int, int]:
    """Bytes read and written by the whole disks, since boot."""
    read = written = 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 10 and _DISK.fullmatch(parts[2]):
            read += int(parts[5]) * SECTOR
            written += int(parts[9]) * SECTOR
    return read, written


def parse_net_dev(text: str) -> tuple[int, int]:
    """Bytes received and sent by every interface but loopback, since boot."""
    rx = tx = 0
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        fields = rest.split()
        if not sep or name.strip() == "lo" or len(fields) < 9 or not fields[0].isdigit():
            continue
        rx += int(fields[0])
        tx += int(fields[8])
    return rx, tx


def parse_cpu_max(text: str) -> float | None:
    """cgroup v2 cpu.max ('QUOTA PERIOD', or 'max PERIOD'): the CPUs the group may use; None
    when unlimited."""
    parts = text.split()
    if len(parts) != 2 or parts[0] == "max":
        return None
    try:
        quota, period = int(parts[0]), int(parts[1])
    except ValueError:
        return None
    return quota / period if quota > 0 and period > 0 else None


def parse_memory_max(text: str) -> int | None:
    """cgroup v2 memory.max (bytes, or 'max'), in kB; None when unlimited."""
    value = text.strip()
    return int(value) // 1024 if value.isdigit() and int(value) > 0 else None


def parse_cpu_list(text: str) -> int | None:
    """How many CPUs a list like '0-3,8,10-11' names."""
    n = 0
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        n += int(hi) - int(lo) + 1 if hi else 1
    return n or None


def allowed_cpus(status: str) -> int | None:
    """Cpus_allowed_list of a /proc/PID/status: the CPUs a process may run on (a container's
    cpuset)."""
    for line in status.splitlines():
        key, _, value = line.partition(":")
        if key == "Cpus_allowed_list":
            return parse_cpu_list(value)
    return None


def usable_cpus(online: int, allowed: int | None, quota: float | None) -> tuple[int, str]:
    """The CPUs a server can use: the machine's, narrowed by its cpuset and its cgroup quota
    (rounded up); and what narrowed it, in words ('' when nothing did)."""
    n, why = online, []
    if allowed is not None and allowed < n:
        n = allowed
        why.append(f"cpuset {allowed} of {online}")
    if quota is not None and math.ceil(quota) < n:
        n = math.ceil(quota)
        why.append(f"cgroup CPU quota {quota:g}")
    return n, ", ".join(why)
