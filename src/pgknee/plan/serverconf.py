"""Server settings a user may give (--set, a plan file's [target.settings], a variant's
set.NAME=... or max_connections=...): what is accepted, and how it is written.

A setting is a name as PostgreSQL spells one (letters, digits and underscores, with one dot
for an extension's own) and a value without control characters, written quoted and
escaped the way postgresql.conf reads it. Settings that would make a value into
configuration or code on the server are refused, with the reason: those that name files or
directories, change where the server listens or who may log in, run a command, or load a
library (shared_preload_libraries only with the libraries pgknee itself works with)."""

from __future__ import annotations

import re

from pgknee.base.errors import UserError

NAME_RE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)?")
MAX_VALUE = 1024
# the libraries pgknee reads from (pg_stat_statements for captured workloads, pg_wait_sampling
# for a second wait profile, pg_stat_kcache for the queries' CPU time); nothing else is loaded into the
# server on a user's word
PRELOADABLE = frozenset({"pg_stat_statements", "pg_wait_sampling", "pg_stat_kcache"})

_REFUSED_EXACT: dict[str, str] = {
    "data_directory": "names the server's files",
    "config_file": "names the server's files",
    "port": "pgknee chooses the port it reaches the server on",
    "listen_addresses": "changes where the server listens",
    "primary_conninfo": "makes the server log in to another server",
    "ssl_passphrase_command": "runs a command",
    "event_source": "names a log destination",
    "db_user_namespace": "changes who may log in",
    "dynamic_library_path": "names where code is loaded from",
}
_REFUSED_PREFIX: tuple[tuple[str, str], ...] = (
    ("include", "includes other configuration files"),
    ("unix_socket_", "changes where the server listens"),
    ("krb_", "changes who may log in"),
)
_REFUSED_SUFFIX: tuple[tuple[str, str], ...] = (
    ("_file", "names a file"),
    ("_directory", "names a directory"),
    ("_directories", "names directories"),
    ("_dir", "names a directory"),
    ("_filename", "names a file"),
    ("_command", "runs a command"),
    ("_library", "loads a library"),
    ("_libraries", "loads libraries"),
    ("_provider", "loads a library"),
    ("_keyfile", "names a file"),
)


def refusal(name: str, value: str) -> str | None:
    """Why `name = value` may not be set on pgknee's say, or None."""
    if name == "shared_preload_libraries":
        libs = {x.strip().strip('"') for x in value.split(",") if x.strip()}
        extra = sorted(libs - PRELOADABLE)
        return (f"loads {', '.join(extra)}; pgknee preloads only {', '.join(sorted(PRELOADABLE))}"
                if extra else None)
    if name in _REFUSED_EXACT:
        return _REFUSED_EXACT[name]
    base = name.rsplit(".", 1)[-1]
    for prefix, why in _REFUSED_PREFIX:
        if base.startswith(prefix):
            return why
    for suffix, why in _REFUSED_SUFFIX:
        if base.endswith(suffix):
            return why
    return None


def check_setting(name: str, value: str, *, where: str = "") -> tuple[str, str]:
    """(name, value) if they may be set; else one UserError saying what and why."""
    if not isinstance(name, str) or not isinstance(value, str):
        raise UserError(f"{where}a server setting must be a name and a text value")
    if not NAME_RE.fullmatch(name):
        shown = name if name.isprintable() and len(name) <= 64 else repr(name[:64])
        raise UserError(f"{where}{shown!s} is not a PostgreSQL setting name",
                        "a setting name is letters, digits and underscores, e.g. --set max_connections=200")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise UserError(f"{where}the value of {name} holds a control character (a newline, a tab, ...)",
                        "give the value on one line, without control characters")
    if len(value) > MAX_VALUE:
        raise UserError(f"{where}the value of {name} is longer than {MAX_VALUE} characters")
    why = refusal(name, value)
    if why is not None:
        raise UserError(f"{where}pgknee does not set {name}: it {why}",
                        "pgknee sets only settings that change how the server runs, not where it reads, "
                        "listens or logs in; set such things on a server of your own and use --dsn")
    return name, value


def parse_setting(text: str) -> tuple[str, str]:
    """'NAME=VALUE' from --set or a variant's set.NAME=VALUE, checked."""
    if "=" not in text:
        raise UserError(f"server setting {text.splitlines()[0][:64]!r} must be NAME=VALUE",
                        "for example --set shared_buffers=256MB")
    name, value = text.split("=", 1)
    return check_setting(name.strip().lower(), value.strip())


def conf_line(name: str, value: str) -> str:
    """One postgresql.conf line: the value single-quoted, with quotes doubled and backslashes
    escaped (the configuration file's lexer reads backslash escapes inside quotes)."""
    check_setting(name, value)
    return f"{name} = '" + value.replace("\\", "\\\\").replace("'", "''") + "'\n"


def conf_path_line(name: str, path: str) -> str:
    """A line naming a path pgknee chose itself (its own directories), quoted the same way."""
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in path):
        raise UserError(f"the path {path!r} holds a control character", "set TMPDIR to a plain path")
    return f"{name} = '" + path.replace("\\", "\\\\").replace("'", "''") + "'\n"
