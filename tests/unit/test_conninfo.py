from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pgknee.base.dsn import environment_dsn, parse_dsn, redact_dsn, split_secret
from pgknee.base.errors import UserError
from pgknee.targets.conninfo import child_env, env_neutral, write_passfile

PW = "s3cr:et\\Zq9"  # ':' and '\' must be escaped in a passfile


@pytest.fixture(autouse=True)
def _no_pg_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(os.environ):
        if k.startswith("PG"):
            monkeypatch.delenv(k)


# ---- redact_dsn -----------------------------------------------------------------------------------


def test_redact_url() -> None:
    dsn = "postgresql://alice:Sup3rS3cret@db.example.com:5433/shop?sslmode=require&application_name=knee"
    red = redact_dsn(dsn)
    assert "Sup3rS3cret" not in red and "password" not in red
    assert parse_dsn(red) == {"user": "alice", "host": "db.example.com", "port": "5433", "dbname": "shop",
                              "sslmode": "require", "application_name": "knee"}


def test_redact_key_value() -> None:
    dsn = "host=h1 port=6432 user=bob password='p w d' dbname=bench sslpassword=keypass connect_timeout=5"
    red = redact_dsn(dsn)
    assert "p w d" not in red and "keypass" not in red and "password" not in red
    assert parse_dsn(red) == {"host": "h1", "port": "6432", "user": "bob", "dbname": "bench", "connect_timeout": "5"}


def test_redact_without_secret_keeps_everything() -> None:
    assert parse_dsn(redact_dsn("host=/tmp port=5432 dbname=x")) == {"host": "/tmp", "port": "5432", "dbname": "x"}


def test_split_secret() -> None:
    clean, pw = split_secret({"host": "h", "password": PW, "sslpassword": "k"})
    assert clean == {"host": "h"} and pw == PW
    assert split_secret({"host": "h"}) == ({"host": "h"}, None)


@pytest.mark.parametrize("dsn", [
    "host=h password=Sup3rS3cret dbname",
    "host=h password='Sup3rS3cret",
    "host=h password=Sup3rS3cret bogus=1",
    "postgresql://u:Sup3rS3cret@h/db?nosuchparam=1",
])
def test_unparseable_dsn_message_has_no_password(dsn: str) -> None:
    with pytest.raises(UserError) as ei:
        parse_dsn(dsn)
    assert "cannot be parsed" in ei.value.message
    assert "Sup3rS3cret" not in ei.value.one_line()
    assert ei.value.__cause__ is None and ei.value.__suppress_context__


@pytest.mark.parametrize("dsn", ["postgresql://u:Sup3rS3cret%zz@h/db", "postgresql://u:Sup3rS3cret@[::1/db"])
def test_unparseable_url_message_has_no_password(dsn: str) -> None:
    with pytest.raises(UserError) as ei:
        parse_dsn(dsn)
    assert "Sup3rS3cret" not in ei.value.one_line()


# ---- child_env ------------------------------------------------------------------------------------


def _unescape(field: str) -> str:
    out, esc = [], False
    for ch in field:
        if esc:
            out.append(ch)
            esc = False
        elif ch == "\\":
            esc = True
        else:
            out.append(ch)
    return "".join(out)


def test_child_env_passfile(tmp_path: Path) -> None:
    params = {"host": "db.example.com", "port": "5433", "user": "alice", "dbname": "shop", "sslmode": "require"}
    passfile = write_passfile(tmp_path, PW, owner=None)
    env = child_env(params, passfile)
    assert Path(env["PGPASSFILE"]) == passfile == tmp_path / "pgpass"
    assert stat.S_IMODE(passfile.stat().st_mode) == 0o600
    text = passfile.read_text()
    assert text == "*:*:*:*:s3cr\\:et\\\\Zq9\n"
    assert _unescape(text.rstrip("\n").split(":", 4)[-1]) == PW  # libpq reads back the same password
    assert parse_dsn(env["PGDATABASE"]) == params  # one conninfo string, which pgbench's libpq expands
    assert (env["PGHOST"], env["PGPORT"], env["PGUSER"], env["PGSSLMODE"]) == ("db.example.com", "5433", "alice",
                                                                               "require")  # and the variables
    assert "PGPASSWORD" not in env
    assert not any(PW in v for v in env.values())
    assert not any("s3cr" in v for v in env.values())
    with pytest.raises(FileExistsError):  # never over an existing file (or through a link)
        write_passfile(tmp_path, PW, owner=None)


def test_child_env_is_built_not_inherited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing of pgknee's own environment reaches a child but PATH: not the user's PG*
    variables, not a PGKNEE_*_DSN, not a CI runner's secrets."""
    for var, value in (("PGHOST", "elsewhere"), ("PGOPTIONS", "-c work_mem=1GB"), ("PGPASSWORD", "fromenv"),
                       ("PGKNEE_DSN", "postgresql://u:pw@h/db"), ("CI_SECRET_TOKEN", "t0ken"),
                       ("PGPASSFILE", "/home/u/.pgpass-custom")):
        monkeypatch.setenv(var, value)
    env = child_env({"host": "h"}, tmp_path / "none")
    assert env == {"PATH": env["PATH"], "LC_ALL": "C", "PGHOST": "h", "PGDATABASE": "host=h",
                   "PGPASSFILE": str(tmp_path / "none")}


def test_child_env_carries_every_keyword_in_one_conninfo(tmp_path: Path) -> None:
    """Keywords with and without a PG* variable (keepalives_idle, tcp_user_timeout) alike, quoted
    as libpq quotes them; `options` in PGOPTIONS, where initialisation adds its search_path."""
    params = {"host": "h", "dbname": "shop db", "sslrootcert": "/r.crt", "channel_binding": "require",
              "keepalives_idle": "7", "tcp_user_timeout": "9000", "require_auth": "scram-sha-256"}
    env = child_env({**params, "options": "-c work_mem=8MB"}, tmp_path / "none")
    assert parse_dsn(env["PGDATABASE"]) == params
    assert env["PGOPTIONS"] == "-c work_mem=8MB" and env["PGREQUIREAUTH"] == "scram-sha-256"


def test_child_env_refuses_what_a_child_cannot_be_given(tmp_path: Path) -> None:
    # what libpq marks secret ('*') or a debugging option ('D'): never handed on
    for key in ("sslpassword", "replication"):
        with pytest.raises(UserError, match=f"'{key}'"):
            child_env({"host": "h", key: "x"}, tmp_path / "none")


# ---- --target env ------------------------------------------------------------------------------


def test_environment_dsn_follows_libpqs_variables() -> None:
    env = {"PGHOST": "db1,db2", "PGPORT": "5433,5434", "PGUSER": "u", "PGDATABASE": "d", "PGSSLSNI": "0",
           "PGTARGETSESSIONATTRS": "read-write", "PGPASSWORD": "Sup3rS3cret", "PGPASSFILE": "/p", "HOME": "/h"}
    dsn = environment_dsn(env)
    assert parse_dsn(dsn) == {"host": "db1,db2", "port": "5433,5434", "user": "u", "dbname": "d", "sslsni": "0",
                              "target_session_attrs": "read-write"}
    assert parse_dsn(environment_dsn({"PGSERVICE": "mysvc"})) == {"service": "mysvc"}


def test_environment_dsn_without_a_server_is_one_clear_refusal() -> None:
    with pytest.raises(UserError) as ei:
        environment_dsn({"PGUSER": "u", "PGPORT": "5432", "PGHOST": ""})
    assert "names no server" in ei.value.message and "PGHOST" in (ei.value.hint or "")


def test_a_service_in_pgknees_environment_does_not_reach_its_own_connections(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PGSERVICE cannot be unset for a connection, but what its service sets can be: libpq's
    defaults (PQconndefaults, which applies the service) say which, and they are set back."""
    services = tmp_path / "services.conf"
    services.write_text("[tlssvc]\nsslmode=require\nkeepalives_idle=3\n")
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    monkeypatch.setenv("PGSERVICE", "tlssvc")
    neutral = env_neutral({"host": "/tmp", "port": "5432", "user": "u", "dbname": "d"})
    assert neutral == {"sslmode": "prefer", "keepalives_idle": ""}
    assert env_neutral({"host": "h", "user": "u", "dbname": "d", "sslmode": "require", "keepalives_idle": "3"}) == {}
