"""The server's memory picture when it runs on this machine: the machine's free and
available memory and page cache (/proc/meminfo), and what the server's processes use,
counted as proportional set size (/proc/PID/smaps_rollup): shared buffers, mapped by
every backend, are divided among them instead of being counted once per backend."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

from pgknee.collect.osproc import read_meminfo
from pgknee.model.facts import MemoryPicture

M = TypeVar("M", bound=MemoryPicture)


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


def _pss(pids: Iterable[int]) -> list[int]:
    """The PSS (kB) of those of `pids` still there and readable."""
    return [s for pid in pids if (s := pss_kb(pid)) is not None]


def memory_picture(kind: type[M], server_pid: int | None, idle_pids: Iterable[int] = ()) -> M:
    """The machine's memory from /proc/meminfo (kB); with a local server, its processes' PSS (kB)
    in all, their count, and the mean of the idle sessions' backends."""
    mem = read_meminfo()
    server, idle = (_pss(process_tree(server_pid)), _pss(idle_pids)) if server_pid else ([], [])

    def kb(name: str) -> float | None:
        return float(mem[name]) if name in mem else None

    return kind(mem_available_kb=kb("MemAvailable"), mem_free_kb=kb("MemFree"), mem_cached_kb=kb("Cached"),
                mem_shmem_kb=kb("Shmem"), pss_server_kb=float(sum(server)) if server else None,
                pss_server_processes=len(server) or None,
                pss_idle_backend_mean_kb=statistics.fmean(idle) if idle else None,
                pss_idle_backends=len(idle) or None)
