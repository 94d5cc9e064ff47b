"""The server's machine for the run: what the user told (--server-cpus, --server-memory), what
its /proc says (over ssh, else through SQL), or this machine for a server pgknee runs here."""

from __future__ import annotations

from typing import Any

import psycopg

from pgknee.collect.servermachine import ServerMachine, Told, server_machine
from pgknee.plan import Plan
from pgknee.targets import Target


def read_machine(conn: psycopg.Connection[Any], plan: Plan, target: Target,
                 ssh_files: tuple[dict[str, str], str] | None = None) -> ServerMachine:
    t = plan.target
    told = Told(cpus=t.server_cpus, mem_gb=t.server_memory_gb, embedded=target.server_pid() is not None)
    return server_machine(conn, told, ssh_files)
