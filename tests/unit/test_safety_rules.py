"""The rules that keep input from becoming configuration, and files from being redirected:
server settings, pgbouncer's configuration, pgknee's private files and the outputs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pgknee.base.errors import PoolerError, UserError
from pgknee.plan.serverconf import check_setting, conf_line, parse_setting, refusal
from pgknee.pooler.pgbouncer import PoolerSettings, server_tls
from pgknee.system import safefs

# ---- server settings ------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("shared_buffers=256MB", ("shared_buffers", "256MB")),
    (" work_mem = 4MB ", ("work_mem", "4MB")),
    ("Max_Connections=200", ("max_connections", "200")),  # PostgreSQL's names are case-insensitive
    ("auto_explain.log_min_duration=0", ("auto_explain.log_min_duration", "0")),
    ("search_path=a,b=c", ("search_path", "a,b=c")),  # only the first '=' splits
    ("application_name=", ("application_name", "")),
    ("shared_preload_libraries=pg_stat_statements, pg_wait_sampling", ("shared_preload_libraries",
                                                                       "pg_stat_statements, pg_wait_sampling")),
])
def test_settings_accepted(text: str, expected: tuple[str, str]) -> None:
    assert parse_setting(text) == expected


@pytest.mark.parametrize(("text", "fragment"), [
    ("badsetting", "NAME=VALUE"),
    ("=5", "not a PostgreSQL setting name"),
    ("1abc=5", "not a PostgreSQL setting name"),
    ("shared buffers=1", "not a PostgreSQL setting name"),
    ("x;drop=1", "not a PostgreSQL setting name"),
    ("a.b.c=1", "not a PostgreSQL setting name"),
    ("work_mem=4MB\nlisten_addresses='*'", "control character"),
    ("work_mem=4MB\rx", "control character"),
    ("cluster_name=a\tb", "control character"),
    ("work_mem=" + "9" * 2000, "longer than"),
    ("include=/etc/passwd", "includes other configuration files"),
    ("include_dir=/etc", "includes other configuration files"),
    ("include_if_exists=/x", "includes other configuration files"),
    ("hba_file=/tmp/hba", "names a file"),
    ("ident_file=/tmp/x", "names a file"),
    ("config_file=/tmp/x", "names the server's files"),
    ("data_directory=/", "names the server's files"),
    ("ssl_cert_file=/etc/passwd", "names a file"),
    ("ssl_crl_dir=/etc", "names a directory"),
    ("log_directory=/etc", "names a directory"),
    ("log_filename=x", "names a file"),
    ("external_pid_file=/etc/x", "names a file"),
    ("listen_addresses=*", "changes where the server listens"),
    ("port=5432", "chooses the port"),
    ("unix_socket_directories=/tmp", "changes where the server listens"),
    ("unix_socket_permissions=0777", "changes where the server listens"),
    ("krb_server_keyfile=/x", "who may log in"),
    ("archive_command=rm -rf /", "runs a command"),
    ("restore_command=x", "runs a command"),
    ("ssl_passphrase_command=x", "runs a command"),
    ("shared_preload_libraries=evil", "loads evil"),
    ("shared_preload_libraries=pg_stat_statements,evil", "loads evil"),
    ("local_preload_libraries=x", "loads libraries"),
    ("session_preload_libraries=x", "loads libraries"),
    ("dynamic_library_path=/tmp", "where code is loaded from"),
    ("jit_provider=evil", "loads a library"),
    ("archive_library=evil", "loads a library"),
    ("primary_conninfo=host=evil", "log in to another server"),
    ("myext.data_directory=/", "names a directory"),  # an extension's setting: the same rules
])
def test_settings_refused(text: str, fragment: str) -> None:
    with pytest.raises(UserError) as ei:
        parse_setting(text)
    assert fragment in ei.value.one_line()
    assert "\n" not in ei.value.one_line()  # one line, even when the value held a newline


def test_tuning_settings_are_not_caught_by_the_rules_for_files_and_code() -> None:
    tuning = ["max_connections", "shared_buffers", "work_mem", "synchronous_commit", "search_path", "fsync",
              "wal_buffers", "max_wal_size", "checkpoint_timeout", "jit", "track_io_timing", "log_min_messages",
              "log_connections", "cluster_name", "ssl", "password_encryption", "log_file_mode", "logging_collector"]
    assert [n for n in tuning if refusal(n, "x") is not None] == []


@pytest.mark.parametrize(("name", "value", "line"), [
    ("work_mem", "4MB", "work_mem = '4MB'\n"),
    ("cluster_name", "it's", "cluster_name = 'it''s'\n"),
    ("cluster_name", "a\\b", "cluster_name = 'a\\\\b'\n"),
    ("cluster_name", "x' # cluster_name = 'y", "cluster_name = 'x'' # cluster_name = ''y'\n"),
])
def test_conf_line_quotes_and_escapes(name: str, value: str, line: str) -> None:
    assert conf_line(name, value) == line


def test_conf_line_checks_again() -> None:
    with pytest.raises(UserError):
        conf_line("hba_file", "/x")
    with pytest.raises(UserError):
        check_setting("work_mem", "1\n2")


# ---- pgbouncer's configuration -------------------------------------------------------------------------
def _ini(server: dict[str, str], tls: dict[str, str] | None = None) -> str:
    s = PoolerSettings(mode="transaction", pool_size=4, reserve=0, max_clients=10, query_wait_timeout_s=60,
                       prepared_statements=False)
    return s.ini(server=server, listen_port=6432, private_dir=Path("/tmp/pgknee-pgbouncer-x"), version=(1, 18, 0),
                 tls=tls)


def test_pgbouncer_ini_quotes_what_comes_from_the_dsn() -> None:
    text = _ini({"host": "db.example.com", "port": "5432", "dbname": "my db", "user": "o'brien"})
    db_line = next(ln for ln in text.splitlines() if ln.startswith("pgknee = "))
    assert "dbname='my db'" in db_line and "user='o''brien'" in db_line
    assert "unix_socket_dir =" in text and "logfile" not in text and "pidfile" not in text


@pytest.mark.parametrize("field", ["host", "dbname", "user", "port"])
def test_pgbouncer_ini_refuses_a_newline_from_the_dsn(field: str) -> None:
    server = {"host": "h", "port": "5432", "dbname": "d", "user": "u"}
    server[field] = "x\nadmin_users = evil"
    with pytest.raises(PoolerError, match="control character"):
        _ini(server)


@pytest.mark.parametrize(("params", "tls_in_use", "expected"), [
    ({}, False, {"server_tls_sslmode": "disable"}),  # as the direct connection: plain
    ({}, True, {"server_tls_sslmode": "require"}),  # prefer, and TLS was used: never plaintext behind it
    ({"sslmode": "allow"}, True, {"server_tls_sslmode": "require"}),
    ({"sslmode": "require"}, True, {"server_tls_sslmode": "require"}),
    ({"sslmode": "verify-full", "sslrootcert": "/ca.crt"}, True,
     {"server_tls_sslmode": "verify-full", "server_tls_ca_file": "/ca.crt"}),
    ({"sslmode": "verify-ca", "sslrootcert": "/ca.crt", "sslcert": "/c.crt", "sslkey": "/c.key"}, True,
     {"server_tls_sslmode": "verify-ca", "server_tls_ca_file": "/ca.crt", "server_tls_cert_file": "/c.crt",
      "server_tls_key_file": "/c.key"}),
    ({"sslmode": "require", "ssl_min_protocol_version": "TLSv1.3"}, True,
     {"server_tls_sslmode": "require", "server_tls_protocols": "tlsv1.3"}),
])
def test_tls_is_carried_to_pgbouncers_server_side(params: dict[str, str], tls_in_use: bool,
                                                  expected: dict[str, str]) -> None:
    assert server_tls(params, tls_in_use) == expected
    ini = _ini({"host": "h", "port": "5432", "dbname": "d", "user": "u"}, server_tls(params, tls_in_use))
    assert f"server_tls_sslmode = {expected['server_tls_sslmode']}" in ini


@pytest.mark.parametrize("params", [{"sslcrl": "/crl.pem"}, {"sslcrldir": "/crl"}, {"sslpassword": "x"},
                                    {"channel_binding": "require"}, {"gssencmode": "require"},
                                    {"require_auth": "scram-sha-256"}, {"sslnegotiation": "direct"}])
def test_tls_settings_pgbouncer_cannot_carry_refuse_the_pooled_variant(params: dict[str, str]) -> None:
    with pytest.raises(PoolerError, match="cannot carry"):
        server_tls({"sslmode": "require", **params}, True)


# ---- pgknee's private files ---------------------------------------------------------------------------
def test_private_files_are_never_written_through_a_link(tmp_path: Path) -> None:
    d = safefs.private_dir("t-", base=str(tmp_path))
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    (d / "conf").symlink_to(victim)
    with pytest.raises(FileExistsError):
        safefs.create_file(d / "conf", b"written")
    safefs.replace_file(d / "conf", b"replaced", mode=0o644)  # the link itself is replaced, not followed
    assert victim.read_text() == "untouched"
    assert (d / "conf").read_bytes() == b"replaced" and not (d / "conf").is_symlink()
    assert stat.S_IMODE((d / "conf").stat().st_mode) == 0o644


def test_child_files_are_read_only_when_plain_and_the_childs_own(tmp_path: Path) -> None:
    own = tmp_path / "log.1"
    own.write_text("1 2 3")
    assert safefs.read_child_text(own, None) == "1 2 3"
    link = tmp_path / "log.2"
    link.symlink_to(own)
    with pytest.raises(OSError):
        safefs.open_child_file(link, None)
    hard = tmp_path / "log.3"
    os.link(own, hard)  # a second name for a file: what a hard link to root's file would look like
    with pytest.raises(OSError, match="not a plain file"):
        safefs.open_child_file(hard, None)
    assert [p.name for p in safefs.child_files(tmp_path, "log.*")] == ["log.1", "log.3"]


# ---- outputs ------------------------------------------------------------------------------------------
def test_output_kinds(tmp_path: Path) -> None:
    assert safefs.output_kind("-") == "stdout"
    assert safefs.output_kind(str(tmp_path / "new.json")) == "file"
    assert safefs.output_kind("/dev/null") == "device"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UserError, match="it is a FIFO"):
        safefs.output_kind(str(tmp_path / "fifo"))
    with pytest.raises(UserError, match="it is a directory"):
        safefs.output_kind(str(tmp_path))


def test_write_output_replaces_a_file_whole_and_keeps_a_link(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    target.chmod(0o640)
    safefs.write_output(str(target), b"new")
    assert target.read_text() == "new" and stat.S_IMODE(target.stat().st_mode) == 0o640
    link = tmp_path / "link.json"
    link.symlink_to(target)
    safefs.write_output(str(link), b"newer")
    assert link.is_symlink() and target.read_text() == "newer"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "out.json"]  # no temporary left
