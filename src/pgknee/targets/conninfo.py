"""Connection strings without secrets: parse, redact, and hand to children via
the environment and a private passfile (never argv)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import psycopg.conninfo

from pgknee.errors import UserError

# libpq keyword -> environment variable (for children such as pgbench)
_ENV_OF = {
    "host": "PGHOST", "hostaddr": "PGHOSTADDR", "port": "PGPORT", "dbname": "PGDATABASE",
    "user": "PGUSER", "options": "PGOPTIONS", "sslmode": "PGSSLMODE", "sslcert": "PGSSLCERT",
    "sslkey": "PGSSLKEY", "sslrootcert": "PGSSLROOTCERT", "sslcrl": "PGSSLCRL",
    "sslnegotiation": "PGSSLNEGOTIATION", "requiressl": "PGREQUIRESSL", "gssencmode": "PGGSSENCMODE",
    "krbsrvname": "PGKRBSRVNAME", "connect_timeout": "PGCONNECT_TIMEOUT",
    "target_session_attrs": "PGTARGETSESSIONATTRS", "channel_binding": "PGCHANNELBINDING",
    "service": "PGSERVICE", "passfile": "PGPASSFILE", "client_encoding": "PGCLIENTENCODING",
    "load_balance_hosts": "PGLOADBALANCEHOSTS", "require_auth": "PGREQUIREAUTH",
}
_SECRET_KEYS = ("password", "sslpassword")


def parse_dsn(dsn: str) -> dict[str, str]:
    try:
        return {k: str(v) for k, v in psycopg.conninfo.conninfo_to_dict(dsn).items()}
    except psycopg.ProgrammingError as e:
        # libpq's message may quote parts of the DSN (a password included): keep only its
        # unquoted words
        reason = re.sub(r'"[^"]*"?', "", str(e).strip().splitlines()[0]).strip(" :")
        for secret in re.findall(r"[:=]([^@\s]+)@", dsn) + re.findall(r"password\s*=\s*(\S+)", dsn):
            reason = reason.replace(secret, "***")
        raise UserError(f"the DSN cannot be parsed: {reason}",
                        "use postgresql://user@host:port/dbname or 'host=... dbname=...', with special "
                        "characters percent-encoded") from None


def redact_dsn(dsn: str) -> str:
    """The DSN as it may be shown and stored: every secret removed."""
    params = {k: v for k, v in parse_dsn(dsn).items() if k not in _SECRET_KEYS}
    return psycopg.conninfo.make_conninfo(**params)


def split_secret(params: dict[str, str]) -> tuple[dict[str, str], str | None]:
    clean = {k: v for k, v in params.items() if k not in _SECRET_KEYS}
    return clean, params.get("password")


def child_env(params: dict[str, str], password: str | None, private_dir: Path) -> dict[str, str]:
    """Environment for a libpq child: parameters as PG* variables, the password in a
    0600 passfile inside `private_dir` (never in argv, never in PGPASSWORD)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PG")}
    for key, value in params.items():
        var = _ENV_OF.get(key)
        if var is None:
            if key in ("application_name", "fallback_application_name"):
                continue
            raise UserError(f"connection parameter {key!r} cannot be passed to pgbench safely",
                            "remove it from the DSN or set it in a service file (PGSERVICEFILE)")
        env[var] = value
    pw = password if password is not None else os.environ.get("PGPASSWORD")
    if pw is not None:
        passfile = private_dir / "pgpass"
        fd = os.open(passfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            esc = pw.replace("\\", "\\\\").replace(":", "\\:")
            f.write(f"*:*:*:*:{esc}\n")
        env["PGPASSFILE"] = str(passfile)
    else:
        for var in ("PGPASSFILE", "PGSERVICEFILE", "PGSYSCONFDIR", "PGSSLCERT", "PGSSLKEY"):
            if var in os.environ and var not in env:
                env[var] = os.environ[var]
    return env


_URI_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)[^\s@/]+@", re.IGNORECASE)
_KEY_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s'\"]+)", re.IGNORECASE)


def scrub_secrets(text: str) -> str:
    """Any password in free text (a URI's user:password@, a password=... keyword) replaced by
    ***: the last guard before a command line or a plan file is stored or shown."""
    return _KEY_PASSWORD.sub(r"\1***", _URI_PASSWORD.sub(r"\1***@", text))
