"""The server's /proc over ssh (--server-ssh): `ssh -o BatchMode=yes DEST python3 -` with a small
stdlib script streamed on its stdin, which prints the files' texts as one JSON line per
interval. Keys or an agent only (BatchMode: never a password prompt); host keys checked as the
user's ssh configuration says. ssh starts through proc.spawn: registered, and gone with pgknee."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import threading
from collections import deque
from pathlib import Path
from typing import IO, Any

from pgknee.base.errors import UserError
from pgknee.collect.servermachine import PROC_FILES
from pgknee.system import proc, safefs

# runs on the server's machine, with its python3 and nothing else; ends when pgknee stops reading
SCRIPT = """
import json, sys, time
FILES = %s
interval = float(sys.argv[1])
while True:
    out = {"t": time.time()}
    for name, path in FILES.items():
        try:
            with open(path) as f:
                out[name] = f.read()
        except OSError:
            pass
    try:
        sys.stdout.write(json.dumps(out) + "\\n")
        sys.stdout.flush()
    except (BrokenPipeError, OSError):
        break
    time.sleep(max(0.0, interval - (time.time() - out["t"])))
""" % repr(dict(PROC_FILES))  # noqa: UP031 - the script's braces stay as they are

FIRST_LINE_S = 15.0  # ssh's connection, its authentication and python3's start


def ssh_argv(destination: str, interval_s: float, config: str | None = None) -> list[str]:
    """`destination` is checked (plan.model.check_server_machine): never one of ssh's options."""
    return ["ssh", *(["-F", config] if config else []), "-o", "BatchMode=yes", "-o", "ConnectTimeout=10",
            "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3", "-T", "--", destination,
            "python3", "-", f"{interval_s:g}"]


def check_config(path: str | None) -> None:
    """An ssh configuration file can run commands (ProxyCommand, LocalCommand): as root, pgknee
    hands ssh none that another user could change or replace."""
    if path is None:
        return
    try:
        st = os.stat(path)
    except OSError as e:
        raise UserError(f"--server-ssh-config {path}: {e.strerror or e}", "give your ssh configuration file") from None
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"--server-ssh-config {path} is not a file", "give your ssh configuration file")
    real = Path(path).resolve()
    if os.geteuid() == 0 and (st.st_uid != 0 or st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
                              or safefs.writable_by_others(Path(path).absolute().parent)
                              or safefs.writable_by_others(real.parent)):
        raise UserError(f"as root, pgknee gives ssh no configuration file another user can change ({path}): "
                        "one can make ssh run commands",
                        "keep it owned by root, not writable by others, in a directory only root can write")


def ssh_env() -> dict[str, str]:
    """proc.base_env and the user's agent, if one runs: ssh finds its keys, config and known
    hosts from the user's home directory, not from the environment."""
    env = proc.base_env()
    if os.environ.get("SSH_AUTH_SOCK"):
        env["SSH_AUTH_SOCK"] = os.environ["SSH_AUTH_SOCK"]
    return env


class SshFiles:
    """The ssh reader: started once for the run; `__call__` gives the latest files it sent."""

    def __init__(self, destination: str, interval_s: float, config: str | None = None) -> None:
        self.destination = destination
        self.label = f"ssh {destination}"
        self.argv = ssh_argv(destination, interval_s, config)
        self.p: subprocess.Popen[bytes] | None = None
        self.latest: dict[str, Any] = {}  # none yet (each line it takes has the time 't')
        self.first = threading.Event()
        self.stderr: deque[str] = deque(maxlen=5)
        self.queries_run = 0  # none on the database

    def start(self) -> tuple[dict[str, str], str]:
        """Start ssh (from the main thread) and wait for the first line: the files, and ''; or
        nothing, and why."""
        try:
            self.p = proc.spawn(self.argv, env=ssh_env(), stdin=subprocess.PIPE)
        except OSError as e:
            return {}, f"{self.label}: cannot start ssh: {e.strerror or e}"
        assert self.p.stdin is not None and self.p.stdout is not None and self.p.stderr is not None
        readers = [threading.Thread(target=target, args=(stream,), name="pgknee-ssh", daemon=True)
                   for target, stream in ((self._read_out, self.p.stdout), (self._read_err, self.p.stderr))]
        for t in readers:
            t.start()
        with contextlib.suppress(OSError):
            self.p.stdin.write(SCRIPT.encode())
            self.p.stdin.close()
        proc.wait_until(lambda: self.first.is_set() or (self.p is not None and self.p.poll() is not None),
                        timeout=FIRST_LINE_S)
        if self.latest:
            return {k: v for k, v in self.latest.items() if isinstance(v, str)}, ""
        if self.p.poll() is not None:  # ssh ended: its last words (the reason) are read to the end first
            readers[1].join(timeout=2.0)
        why = self.stderr[-1] if self.stderr else (
            f"exit {self.p.returncode}" if self.p.poll() is not None else f"no answer in {FIRST_LINE_S:g} s")
        self.close()
        return {}, f"{self.label}: {why}"

    def _read_out(self, stream: IO[bytes]) -> None:
        with stream:  # closed at ssh's end
            for line in stream:
                try:
                    files = json.loads(line)
                except ValueError:
                    continue
                if isinstance(files, dict) and isinstance(files.get("t"), int | float):
                    self.latest = files
                    self.first.set()

    def _read_err(self, stream: IO[bytes]) -> None:
        with stream:
            for line in stream:
                text = line.decode(errors="replace").strip()
                if text:
                    self.stderr.append(text)

    def __call__(self) -> dict[str, Any]:
        return self.latest

    def close(self) -> None:
        if self.p is not None:
            proc.stop(self.p, grace=2.0)
            self.p = None
