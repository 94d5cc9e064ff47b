"""The server's machine for the run: what the user told (--server-cpus, --server-memory), what
its /proc says (over ssh, else through SQL), or this machine for a server pgknee runs here; and
the sampler of its OS for the steps, when its /proc can be read."""

from __future__ import annotations

import contextlib
from typing import Any

import psycopg

from pgknee.collect.servermachine import ServerMachine, Told, server_machine
from pgknee.collect.serveros import ServerOsSampler, SqlFiles
from pgknee.collect.sshproc import SshFiles
from pgknee.model.keys import Env
from pgknee.plan import Plan
from pgknee.targets import Target


def read_machine(conn: psycopg.Connection[Any], plan: Plan, target: Target,
                 ssh_files: tuple[dict[str, str], str] | None = None) -> ServerMachine:
    t = plan.target
    told = Told(cpus=t.server_cpus, mem_gb=t.server_memory_gb, embedded=target.server_pid() is not None)
    return server_machine(conn, told, ssh_files)


def open_machine(stack: contextlib.ExitStack, plan: Plan, target: Target,
                 conn: psycopg.Connection[Any]) -> tuple[ServerOsSampler | None, dict[str, str]]:
    """The server's machine (its facts, for the run's environment) and its OS sampler (its reader
    stopped when `stack` closes); None when pgknee runs the server here (this machine's OS
    samples are the server's), or cannot read its /proc (the environment says why)."""
    interval = plan.os_interval_s or 1.0
    ssh, ssh_files = None, None
    if plan.target.server_ssh and target.server_pid() is None:
        ssh = SshFiles(plan.target.server_ssh, interval, plan.target.server_ssh_config)
        files, why = ssh.start()
        ssh_files = (files, ssh.label) if files else ({}, why)
        if files:
            stack.callback(ssh.close)
        else:
            ssh = None
    machine = read_machine(conn, plan, target, ssh_files)
    env = machine.environment()
    sampler: ServerOsSampler | None = None
    if target.server_pid() is not None:
        env[Env.SERVER_OS] = "this machine's OS samples (the System table)"
    elif machine.proc is None:
        env[Env.SERVER_OS] = f"not sampled: {machine.proc_why}"
    elif not plan.os_interval_s:
        env[Env.SERVER_OS] = "not sampled: --os-interval 0"
    else:
        read = ssh if ssh is not None else SqlFiles(target.endpoint)
        if isinstance(read, SqlFiles):
            stack.callback(read.close)
        sampler = ServerOsSampler(read, plan.os_interval_s, machine.proc)  # started as the run's collectors take it
        env[Env.SERVER_OS] = f"{machine.proc} every {plan.os_interval_s:g} s"
    return sampler, {str(k): v for k, v in env.items()}
