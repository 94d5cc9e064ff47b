"""DSNs as text: parse, take the secrets out, and scrub a password from any text. Pure: libpq's
own parser through psycopg, loaded only when a DSN is parsed. The resolution of a DSN against a
server, and what its clients get, is targets/conninfo.py."""

from __future__ import annotations

import re

from pgknee.base.errors import UserError, first_line

_SECRET_KEYS = ("password", "sslpassword")


def parse_dsn(dsn: str) -> dict[str, str]:
    import psycopg.conninfo  # libpq's parser; imported here so that scrubbing text loads no driver

    try:
        return {k: str(v) for k, v in psycopg.conninfo.conninfo_to_dict(dsn).items()}
    except psycopg.ProgrammingError as e:
        # libpq's message may quote parts of the DSN (a password included): keep only its
        # unquoted words
        reason = re.sub(r'"[^"]*"?', "", first_line(e)).strip(" :")
        for secret in re.findall(r"[:=]([^@\s]+)@", dsn) + re.findall(r"password\s*=\s*(\S+)", dsn):
            reason = reason.replace(secret, "***")
        raise UserError(f"the DSN cannot be parsed: {reason}",
                        "use postgresql://user@host:port/dbname or 'host=... dbname=...', with special "
                        "characters percent-encoded") from None


def redact_dsn(dsn: str) -> str:
    """The DSN as it may be shown and stored: every secret removed."""
    import psycopg.conninfo

    params = {k: v for k, v in parse_dsn(dsn).items() if k not in _SECRET_KEYS}
    return psycopg.conninfo.make_conninfo(**params)


def split_secret(params: dict[str, str]) -> tuple[dict[str, str], str | None]:
    clean = {k: v for k, v in params.items() if k not in _SECRET_KEYS}
    return clean, params.get("password")


_URI_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s:/@]*:)[^\s@/]+@", re.IGNORECASE)
_KEY_PASSWORD = re.compile(r"(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s'\"]+)", re.IGNORECASE)


def scrub_secrets(text: str) -> str:
    """Any password in free text (a URI's user:password@, a password=... keyword) replaced by
    ***: the last guard before a command line or a plan file is stored or shown."""
    return _KEY_PASSWORD.sub(r"\1***", _URI_PASSWORD.sub(r"\1***@", text))


TARGETS = ("embedded", "env")
_NOT_FROM_ENV = (*_SECRET_KEYS, "passfile")  # libpq still reads them from the environment itself


def option_text(field: bytes | None) -> str | None:
    """A field of a libpq option as PQconndefaults lists it (NULL or empty: unset) as text."""
    return field.decode() if field else None


def environment_dsn(environ: dict[str, str]) -> str:
    """`--target env`: the server libpq's own environment variables name (PGHOST, PGSERVICE,
    PGPORT, PGUSER, PGDATABASE, PGSSLMODE, ...), as a DSN without secrets. The variables are the
    ones libpq lists (PQconndefaults), not a hand-kept map; the password stays where libpq reads it."""
    import psycopg.conninfo
    from psycopg import pq

    params = {}
    for o in pq.Conninfo.get_defaults():
        var = option_text(o.envvar)
        key = o.keyword.decode()
        if var and environ.get(var) and key not in _NOT_FROM_ENV:
            params[key] = environ[var]
    if not any(k in params for k in ("host", "hostaddr", "service")):
        raise UserError("--target env: the environment names no server (neither PGHOST, PGHOSTADDR nor PGSERVICE "
                        "is set)", "set PGHOST (with PGPORT, PGUSER, PGDATABASE as needed) or PGSERVICE, or give --dsn")
    return psycopg.conninfo.make_conninfo(**params)
