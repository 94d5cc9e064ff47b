"""The server's memory picture when it runs on this machine: the machine's free and
available memory and page cache (/proc/meminfo), and what the server's processes use,
counted as proportional set size (/proc/PID/smaps_rollup): shared buffers, mapped by
every backend, are divided among them instead of being counted once per backend."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path

from pgknee import keys
from pgknee.collect.osproc import read_meminfo


def pss_kb(pid: int) -> int | None:
    """A process's proportional set size in kB, or None if it is gone or unreadable."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def process_tree(root: int) -> list[int]:
    """root and its direct children (a postmaster and its backends and workers)."""
    out = [root]
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == root:
            out.append(int(entry.name))
    return out


def memory_picture(server_pid: int | None, idle_pids: Iterable[int] = (), prefix: str = "") -> dict[str, float]:
    """Facts for the store: mem.* from /proc/meminfo (kB); with a local server, pss.* (kB):
    the server's processes in all, their count, and the mean of the idle sessions' backends."""
    mem = read_meminfo()
    out: dict[str, float] = {keys.memory_fact(prefix, key): float(mem[field])
                             for field, key in _MEMINFO.items() if field in mem}
    if server_pid is None:
        return out
    sizes = [s for pid in process_tree(server_pid) if (s := pss_kb(pid)) is not None]
    if sizes:
        out[keys.memory_fact(prefix, keys.PSS_SERVER)] = float(sum(sizes))
        out[keys.memory_fact(prefix, keys.PSS_SERVER_PROCESSES)] = float(len(sizes))
    idle = [s for pid in idle_pids if (s := pss_kb(pid)) is not None]
    if idle:
        out[keys.memory_fact(prefix, keys.PSS_IDLE_MEAN)] = statistics.fmean(idle)
        out[keys.memory_fact(prefix, keys.PSS_IDLE_BACKENDS)] = float(len(idle))
    return out


_MEMINFO = {"MemAvailable": keys.MEM_AVAILABLE, "MemFree": keys.MEM_FREE, "Cached": keys.MEM_CACHED,
            "Shmem": keys.MEM_SHMEM}
