"""Connection strings: parse, redact, resolve once, and hand to children.

One connection truth: the DSN is resolved once, by libpq itself (a first connection through
psycopg, which applies libpq's defaults, the PG* environment, a service file and the
passfile), and every client pgknee starts (pgbench, the samplers, the idle sessions, a managed
pgbouncer) is given the parameters that connection really used: the host and address it
reached, the user, the database, the TLS settings. Children get them as one conninfo string in
PGDATABASE (libpq's keywords, read from PQconndefaults, not a hand-kept map; pgbench's own libpq
checks them) and the password in a 0600 passfile of pgknee's, never in argv or PGPASSWORD.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import psycopg.conninfo
from psycopg import pq

from pgknee.base.dsn import option_text
from pgknee.base.errors import UserError
from pgknee.system import safefs
from pgknee.system.proc import RunAs, base_env

# parameters that name files a child must read: copied for a child that runs as another user
TLS_FILE_KEYS = ("sslrootcert", "sslcert", "sslkey", "sslcrl")
# set per client, or resolved away: one host reached, its passfile read
_NOT_PASSED = ("password", "passfile", "service", "application_name", "fallback_application_name",
               "target_session_attrs", "load_balance_hosts", "connect_timeout")
# what libpq reports for a parameter left at its default, where PQconndefaults lists none
_IMPLICIT_DEFAULTS = {"sslcertmode": "allow"}


@cache
def _libpq_options() -> dict[str, tuple[str | None, str | None]]:
    """keyword -> (environment variable, default value), as libpq itself lists them."""
    out = {}
    for o in pq.Conninfo.get_defaults():
        out[o.keyword.decode()] = (option_text(o.envvar), option_text(o.val))
    return out


@cache
def _never_passed() -> frozenset[str]:
    """What libpq marks as a secret ('*': sslpassword, a client secret) or a debugging option
    ('D': replication, ...): never handed to a child."""
    return frozenset(o.keyword.decode() for o in pq.Conninfo.get_defaults() if o.dispchar in (b"*", b"D"))


def effective_params(conn: psycopg.Connection[Any]) -> tuple[dict[str, str], str | None]:
    """What a connection really used, without the password (returned apart): the host and
    address it reached (one of several, if the DSN listed several), the user and database,
    and every other parameter that differs from libpq's default."""
    defaults = _libpq_options()
    params: dict[str, str] = {}
    for o in conn.pgconn.info:
        key = o.keyword.decode()
        if o.val is None or key in _NOT_PASSED:
            continue
        val = o.val.decode()
        if val != (defaults.get(key, (None, None))[1] or _IMPLICIT_DEFAULTS.get(key, "")):
            params[key] = val
    info = conn.info
    params.update(host=info.host, port=str(info.port), user=info.user, dbname=info.dbname)
    if info.hostaddr:
        params["hostaddr"] = info.hostaddr
    else:
        params.pop("hostaddr", None)
    _default_tls_files(params)
    return params, info.password or None


def _default_tls_files(params: dict[str, str]) -> None:
    """The files libpq reads by default from ~/.postgresql, named: a child running as another
    user would look in its own home."""
    home = Path(os.path.expanduser("~")) / ".postgresql"
    if params.get("sslmode") in ("verify-ca", "verify-full") and "sslrootcert" not in params \
            and (home / "root.crt").is_file():
        params["sslrootcert"] = str(home / "root.crt")
    if "sslcert" not in params and (home / "postgresql.crt").is_file() and (home / "postgresql.key").is_file():
        params["sslcert"] = str(home / "postgresql.crt")
        params.setdefault("sslkey", str(home / "postgresql.key"))


def env_neutral(params: Mapping[str, str]) -> dict[str, str]:
    """libpq's built-in defaults for every parameter that `params` does not give and that pgknee's
    own environment would set: its variable is set, or a service (PGSERVICE) gives it, as
    PQconndefaults reports. A connection made inside pgknee then depends on `params` alone, as
    a child's does. (PGSERVICE itself cannot be neutralised: libpq looks an empty service up; what
    the service sets is, here.)"""
    out = {}
    for o in pq.Conninfo.get_defaults():
        key = o.keyword.decode()
        if key in params or key in ("password", "passfile", "service"):
            continue
        compiled = o.compiled.decode() if o.compiled else ""
        from_env = o.envvar is not None and os.environ.get(o.envvar.decode()) is not None
        if from_env or (o.val is not None and o.val.decode() != compiled and key not in ("user", "dbname")):
            out[key] = compiled
    return out


def child_env(params: Mapping[str, str], passfile: Path) -> dict[str, str]:
    """The environment a libpq child (pgbench) needs to log in, and nothing else: the
    connection as one conninfo string in PGDATABASE (pgbench takes it as its database name, and
    its libpq expands it, checking every keyword: one that pgbench's libpq does not know fails
    there, loudly, instead of a PG* variable it would ignore; the string wins over the variables,
    which are set too), `options` in PGOPTIONS only (to which a workload's initialisation adds
    its search_path), the passfile, a PATH and the C locale."""
    env = base_env()
    options = _libpq_options()
    conninfo: dict[str, str] = {}
    for key, value in params.items():
        if key in _NOT_PASSED or key in _never_passed() or key not in options:
            raise UserError(f"connection parameter {key!r} cannot be passed to pgbench",
                            "remove it from the DSN, or set it where libpq reads it for every client "
                            "(a service file, PGSERVICEFILE)")
        var = options[key][0]
        if var is not None:  # also as its variable: what Debian's pg_wrapper reads to choose a pgbench
            env[var] = value
        if key != "options":
            conninfo[key] = value
    if conninfo:
        env["PGDATABASE"] = psycopg.conninfo.make_conninfo(**conninfo)
    env["PGPASSFILE"] = str(passfile)  # pgknee's: a child never reads a passfile of its own finding
    return env


def write_passfile(directory: Path, password: str, *, owner: RunAs | None, name: str = "pgpass") -> Path:
    """A passfile for every host, port, database and user (0600, in one of pgknee's private
    directories, given to the child's user)."""
    path = directory / name
    safefs.create_file(path, f"*:*:*:*:{passfile_escape(password)}\n".encode(), owner=owner)
    return path


def passfile_escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace(":", "\\:")


def localize_files(params: Mapping[str, str], directory: Path, owner: RunAs | None) -> dict[str, str]:
    """The TLS files a child must read, copied into `directory` for a child running as `owner`
    (who cannot read the user's own, 0600 in their home); unchanged when the child runs as
    pgknee's own user."""
    out = dict(params)
    if owner is None:
        return out
    for key in TLS_FILE_KEYS:
        src = params.get(key)
        if not src or src == "system":
            continue
        try:
            data = Path(src).read_bytes()
        except OSError as e:
            raise UserError(f"cannot read the {key} file {src}: {e.strerror}", "check the path in the DSN") from None
        dst = directory / f"{key}{Path(src).suffix}"
        safefs.create_file(dst, data, owner=owner)
        out[key] = str(dst)
    if params.get("sslcrldir"):
        raise UserError("sslcrldir cannot be handed to pgbench running as another user",
                        "use sslcrl (one file), or run pgknee as an unprivileged user")
    return out
