"""What the server and this machine are, read once at the start of a run: the server's version
and the settings that shape a sweep (from pg_settings, which hides what the user may not read
instead of failing), its connection limits and what is in use, and the client machine."""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass
from typing import Any

import psycopg

from pgknee.collect import queries
from pgknee.collect.osproc import read_meminfo
from pgknee.model.keys import Env

SERVER_SETTINGS = ("max_connections", "superuser_reserved_connections", "shared_buffers", "work_mem",
                   "effective_cache_size", "synchronous_commit", "fsync", "full_page_writes", "wal_level",
                   "wal_buffers", "max_wal_size", "checkpoint_timeout", "commit_delay", "huge_pages",
                   "track_io_timing", "compute_query_id", "shared_preload_libraries", "jit")


@dataclass(frozen=True)
class ServerFacts:
    version: str  # SHOW server_version
    version_num: int
    is_superuser: bool
    max_connections: int
    superuser_reserved: int
    reserved: int  # reserved_connections (PostgreSQL 16+): for pg_use_reserved_connections
    connections_in_use: int  # client backends now, pgknee's own first connection included
    settings: dict[str, str]  # SERVER_SETTINGS the user may read, with their units

    def room_for(self, max_connections: int | None = None) -> int:
        """Client connections the server accepts beyond those in use (for this user)."""
        reserved = self.superuser_reserved + (0 if self.is_superuser else self.reserved)
        return (max_connections or self.max_connections) - reserved - self.connections_in_use


def read_server(conn: psycopg.Connection[Any]) -> ServerFacts:
    rows = conn.execute(queries.text("settings"),
                        (["server_version_num", "reserved_connections", *SERVER_SETTINGS],)).fetchall()
    raw = {str(name): str(setting) for name, setting, _ in rows}
    shown = {str(name): str(with_unit) for name, _, with_unit in rows if name in SERVER_SETTINGS}
    show = queries.one_row(conn, "server_version")
    row = conn.execute(queries.text("is_superuser")).fetchone()
    in_use = queries.one_row(conn, "client_backends")
    return ServerFacts(version=str(show[0]), version_num=int(raw.get("server_version_num", "0")),
                       is_superuser=bool(row and row[0]), max_connections=int(raw.get("max_connections", "100")),
                       superuser_reserved=int(raw.get("superuser_reserved_connections", "3")),
                       reserved=int(raw.get("reserved_connections", "0")),
                       connections_in_use=int(in_use[0]), settings=shown)


def host_facts() -> dict[str, str]:
    """The client machine: name, OS, CPUs, memory, Python."""
    mem = read_meminfo()
    return {Env.HOST_NAME: platform.node(), Env.HOST_OS: platform.platform(), Env.HOST_CPUS: str(os.cpu_count() or 1),
            Env.HOST_MEM_GB: f"{mem.get('MemTotal', 0) / 2**20:.1f}", Env.HOST_PYTHON: platform.python_version()}
