"""The server's machine without a server: /proc texts parsed (real ones in tests/data/proc, and
a larger machine's written out), the managed-service classifier, where a CPU count comes from, and
every CPU-based line withheld when the server's CPUs are unknown."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import psycopg
import pytest
from builders import make_run_data, renew
from test_recommend import _sweep

from pgknee.analyze.cpus import machine_of, server_cpus, server_line
from pgknee.analyze.recommend import recommend
from pgknee.analyze.run import build
from pgknee.analyze.sizing import sizing
from pgknee.analyze.usl import next_counts
from pgknee.collect.proctext import (
    allowed_cpus,
    parse_cpu_list,
    parse_cpu_max,
    parse_diskstats,
    parse_loadavg,
    parse_meminfo,
    parse_memory_max,
    parse_net_dev,
    parse_stat,
    usable_cpus,
)
from pgknee.collect.servermachine import SERVICES, Told, classify, from_files, server_machine
from pgknee.model.facts import Measured, StepFacts
from pgknee.model.results import RunData
from pgknee.report.terminal import rule_of_thumb, sizing_text

PROC = Path(__file__).resolve().parent.parent / "data" / "proc"

BIG_STAT = """cpu  100 1 50 1000 7 0 3 2 0 0
cpu0 10 0 5 100 1 0 0 0 0 0
cpu1 10 0 5 100 1 0 0 0 0 0
cpu2 10 0 5 100 1 0 0 0 0 0
cpu3 10 0 5 100 1 0 0 0 0 0
cpu4 10 0 5 100 1 0 0 0 0 0
cpu5 10 0 5 100 1 0 0 0 0 0
cpu6 10 0 5 100 1 0 0 0 0 0
cpu7 10 0 5 100 1 0 0 0 0 0
intr 123 0 0
ctxt 987654
btime 1700000000
processes 4242
procs_running 9
procs_blocked 2
softirq 1 2 3
"""
DISKS = """   8       0 sda 100 0 2000 0 50 0 4000 0 0 0 0 0 0 0 0 0 0
   8       1 sda1 100 0 2000 0 50 0 4000 0 0 0 0 0 0 0 0 0 0
 259       0 nvme0n1 10 0 30 0 10 0 10 0 0 0 0 0 0 0 0 0 0
 259       1 nvme0n1p1 10 0 30 0 10 0 10 0 0 0 0 0 0 0 0 0 0
   7       0 loop0 9 0 999 0 0 0 0 0 0 0 0 0 0 0 0 0 0
 253       0 dm-0 9 0 999 0 9 0 999 0 0 0 0 0 0 0 0 0 0
"""


def test_the_real_samples_of_this_machine_parse() -> None:
    st = parse_stat((PROC / "stat").read_text())
    assert st is not None and st.cpus == 2 and len(st.cpu) == 8 and st.ctxt > 0 and st.running >= 1
    mem = parse_meminfo((PROC / "meminfo").read_text())
    assert mem["MemTotal"] == 24684092 and mem["MemAvailable"] <= mem["MemTotal"] and "HugePages_Total" in mem
    assert parse_loadavg((PROC / "loadavg").read_text()) is not None
    read, written = parse_diskstats((PROC / "diskstats").read_text())
    assert (read, written) == (2792698 * 512, 7755904 * 512)  # vda only: not zram, not loop
    rx, tx = parse_net_dev((PROC / "net_dev").read_text())
    assert (rx, tx) == (634952573, 759530)  # eth0 (and the idle ifb's), not lo
    assert allowed_cpus((PROC / "self_status").read_text()) == 2


def test_a_larger_machine_and_its_limits() -> None:
    st = parse_stat(BIG_STAT)
    assert st is not None and (st.cpus, st.ctxt, st.running, st.blocked) == (8, 987654, 9, 2)
    assert st.cpu == (100, 1, 50, 1000, 7, 0, 3, 2)
    assert parse_diskstats(DISKS) == ((2000 + 30) * 512, (4000 + 10) * 512)  # whole disks only
    assert parse_cpu_max("max 100000\n") is None and parse_cpu_max("150000 100000\n") == 1.5
    assert parse_cpu_list("0-3,8,10-11") == 7 and parse_cpu_list("x") is None
    assert usable_cpus(8, None, None) == (8, "")
    assert usable_cpus(8, 4, None) == (4, "cpuset 4 of 8")
    assert usable_cpus(8, 4, 1.5) == (2, "cpuset 4 of 8, cgroup CPU quota 1.5")
    m = from_files({"stat": BIG_STAT, "meminfo": "MemTotal: 33554432 kB\n", "cpu_max": "200000 100000"}, "ssh db1")
    assert (m.cpus, m.cpus_source, m.limited, m.mem_kb) == (2, "ssh db1", "cgroup CPU quota 2", 33554432)
    assert parse_memory_max("max\n") is None and parse_memory_max("4294967296\n") == 4 * 2**20
    capped = from_files({"stat": BIG_STAT, "meminfo": "MemTotal: 33554432 kB\n", "memory_max": "4294967296\n"},
                        "pg_read_file /proc")
    assert (capped.mem_kb, capped.mem_source) == (4 * 2**20, "pg_read_file /proc; cgroup memory.max")
    v1 = from_files({"stat": BIG_STAT, "meminfo": "MemTotal: 33554432 kB\n", "cfs_quota": "300000\n",
                     "cfs_period": "100000\n", "memory_limit": "9223372036854771712\n"}, "pg_read_file /proc")
    assert (v1.cpus, v1.limited, v1.mem_kb) == (3, "cgroup CPU quota 3", 33554432)  # cgroup v1: no memory cap
    unlimited = from_files({"stat": BIG_STAT, "cfs_quota": "-1\n", "cfs_period": "100000\n"}, "pg_read_file /proc")
    assert (unlimited.cpus, unlimited.limited) == (8, "")
    env = m.environment()
    assert env["server.machine.cpus"] == "2" and env["server.machine.mem_gb"] == "32.0"


@pytest.mark.parametrize("text", ["", "garbage", "cpu 1 2\n"])
def test_what_is_not_linux_gives_nothing(text: str) -> None:
    assert parse_stat(text) is None
    assert from_files({"stat": text}, "pg_read_file /proc").cpus is None


@pytest.mark.parametrize(("roles", "aurora", "prefixes", "service"), [
    (["rds_superuser"], False, [], "Amazon RDS for PostgreSQL"),
    (["rdsadmin", "rds_superuser"], True, ["rds"], "Amazon Aurora PostgreSQL"),
    ([], False, ["cloudsql"], "Google Cloud SQL for PostgreSQL"),
    (["azure_pg_admin"], False, [], "Azure Database for PostgreSQL"),
    ([], False, ["neon"], "Neon"),
    ([], False, [], None),
    (["postgres"], False, ["pg_stat_statements"], None),
])
def test_managed_services_by_their_signs(roles: list[str], aurora: bool, prefixes: list[str],
                                         service: str | None) -> None:
    m = classify(roles, aurora, prefixes)
    assert (m.service if m else None) == service


class _PlainServer:
    """A connection to a server that is no managed service and whose files this role may not read."""

    def execute(self, query: str, params: object = None) -> Any:
        if "pg_read_file" in query:
            raise psycopg.errors.InsufficientPrivilege("permission denied for function pg_read_file")
        return _Rows([([], False, [], [])])


@dataclasses.dataclass
class _Rows:
    rows: list[tuple[Any, ...]]

    def fetchone(self) -> tuple[Any, ...]:
        return self.rows[0]


def test_what_the_user_told_wins_and_managed_services_say_where_to_look() -> None:
    conn: Any = _PlainServer()
    m = server_machine(conn, Told(cpus=16, mem_gb=64.0))
    assert (m.cpus, m.cpus_source, m.mem_kb, m.mem_source) == (16, "--server-cpus", 64 * 2**20, "--server-memory")
    unknown = server_machine(conn, Told(), ssh_files=({}, "ssh db1: Permission denied (publickey)"))
    assert unknown.cpus is None and unknown.cpus_source.startswith("unknown: ssh db1: Permission denied")
    assert all(s.where and s.hidden for s in SERVICES.values())
    assert "CloudWatch" in SERVICES["rds"].where and "Azure Monitor" in SERVICES["azure"].where


def test_old_stores_embedded_is_this_machine_remote_is_unknown() -> None:
    assert server_cpus({"host.cpus": "4", "target.kind": "embedded"}).n == 4
    assert server_cpus({"host.cpus": "4"}, "embedded").source == "this machine: the embedded server"
    old_remote = server_cpus({"host.cpus": "4", "target.kind": "remote"})
    assert old_remote.n is None and "stored before pgknee read the server's machine" in old_remote.source
    read = server_cpus({"host.cpus": "2", "target.kind": "remote", "server.machine.cpus": "8",
                        "server.machine.cpus_source": "pg_read_file /proc"})
    assert read.label() == "8 CPUs (pg_read_file /proc)"
    assert server_line({"server.machine.cpus": "8", "server.machine.cpus_source": "pg_read_file /proc",
                        "server.machine.mem_gb": "31.4", "server.machine.mem_source": "pg_read_file /proc"}) \
        == "server: 8 CPUs (pg_read_file /proc), 31.4 GB"
    m = machine_of({"host.cpus": "2", "target.kind": "remote", "target.local": "false"})
    assert (m.server.n, m.client, m.local) == (None, 2, False)


def _remote(**env: str) -> dict[str, str]:
    return {"host.cpus": "2", "target.kind": "remote", "target.local": "false", **env}


def test_every_cpu_line_uses_the_servers_cpus_or_is_withheld() -> None:
    data = _sweep([1, 2, 4, 8])  # peak not reached: the counts to run next
    known = build(dataclasses.replace(data, env={**data.env, **_remote(**{
        "server.machine.cpus": "16", "server.machine.cpus_source": "--server-cpus"})}))
    r = recommend(known)
    assert (r.cores, r.heuristic, r.cores_source) == (16, 32, "--server-cpus")
    assert rule_of_thumb(r) == "32 (16 server cores: --server-cpus; 0 spindles)"
    assert r.verdict == "not-identified" and r.next_counts[-1] == 128  # 8 x the server's 16, not the client's 2
    unknown = build(dataclasses.replace(data, env={**data.env, **_remote(**{
        "server.machine.cpus_source": "unknown: pg_read_file is not allowed to this role"})}))
    u = recommend(unknown)
    assert (u.cores, u.heuristic) == (None, None)
    assert rule_of_thumb(u) == ("withheld: server CPUs unknown (pg_read_file is not allowed to this role): "
                                "give --server-cpus N")
    assert 8 * 2 not in u.next_counts[4:]  # no "8 x the CPUs" from the client's CPUs
    # no line counts the client's CPUs as the server's; one says they are unknown and why it matters
    assert not any("cores" in x or "CPUs" in x for x in u.reasons if "CPUs are unknown" not in x)
    assert (u.server_unseen or "").startswith("its CPUs are unknown (pg_read_file is not allowed to this role)")
    assert "--server-cpus N" in u.headline()
    assert next_counts([4, 8], None) == [16, 32, 64, 128]


def test_size_names_where_its_cores_came_from() -> None:
    assert "(4 x 2) + 0 = 8 connections doing work at once (cores: --cores)" in \
        sizing_text(sizing(100, 0.01, 4, 0), None, "--cores").plain


def test_until_answer_ranges_over_the_servers_cpus() -> None:
    import argparse

    from pgknee.base.errors import UserError
    from pgknee.cli.run import _answer_range
    from pgknee.plan import NO_FILE, Plan, TargetSpec

    args = argparse.Namespace(clients=None)
    remote = TargetSpec(dsn="postgresql://app@db1/app")
    told = _answer_range(args, Plan(target=dataclasses.replace(remote, server_cpus=3), until_answer=True), NO_FILE)
    assert told.clients[-1] == 12
    with pytest.raises(UserError, match="a remote server's are not known before pgknee connects"):
        _answer_range(args, Plan(target=remote, until_answer=True), NO_FILE)


@pytest.mark.parametrize(("flags", "message"), [
    (["--server-cpus", "0"], "--server-cpus must be a whole number from 1 to 100000, got 0"),
    (["--server-memory", "lots"], "--server-memory 'lots' is not an amount of memory"),
    (["--server-ssh", "-oProxyCommand=touch /tmp/x"], "is not an ssh destination"),
    (["--server-ssh", "db1; rm -rf /"], "is not an ssh destination"),
])
def test_bad_server_machine_flags_are_refused(flags: list[str], message: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from pgknee import cli

    code = cli.main(["run", "--dry-run", "--store", str(tmp_path / "s.db"), *flags])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err and not (tmp_path / "s.db").exists()


def _with_server_figures() -> RunData:
    from pgknee.model.samples import ServerOsSample

    data = make_run_data()

    def sample(t: float, idle: float, mem_kb: int) -> ServerOsSample:
        return ServerOsSample(epoch=t, phase="bench", cpu_user=60.0, cpu_nice=0.0, cpu_system=100.0 - 60.0 - idle,
                              cpu_iowait=0.0, cpu_irq=0.0, cpu_steal=0.0, cpu_idle=idle, load1=3.5, ctx_per_s=5000.0,
                              procs_running=4, procs_blocked=0, mem_total_kb=8 * 2**20, mem_available_kb=mem_kb,
                              disk_read_bps=2**20, disk_write_bps=3 * 2**20, net_rx_bps=0.0, net_tx_bps=2**19)

    server_os = {s.step_id: [sample(1001.0, 30.0, 4 * 2**20), sample(1002.0, 5.0, 3 * 2**20)]
                 for s in data.steps if s.clients == 8}
    facts = {s.step_id: StepFacts.of_items({"kcache.user_s": 12.0, "kcache.system_s": 4.0, "bench.seconds": 10.0,
                                            "log.sampling_rate": 1.0}) for s in data.steps}
    env = _remote(**{"server.machine.cpus": "4", "server.machine.cpus_source": "ssh db1",
                     "server.os": "ssh db1 every 1 s", "server.pg_stat_kcache": "2.2.1"})
    return renew(data, server_os=server_os, facts=facts, env={**data.env, **env})


def test_the_servers_own_figures_per_client_count() -> None:
    from pgknee.analyze.cpus import kcache_cpu, server_row
    from pgknee.report.server import server_table
    from pgknee.report.terminal import render

    view = build(_with_server_figures())
    c2, c8 = view.groups
    assert server_row(view.data, c2) is None
    r = server_row(view.data, c8)
    assert r is not None and r.samples == 4 and r.peak_cpu == 95.0 and r.mean_cpu == 82.5
    assert r.mem_available_mb == 3 * 1024 and r.disk_write_mbps == 3.0 and r.run_queue == 4
    assert kcache_cpu(view.data, c8) == (1.6, 25.0)  # 16 CPU seconds in 10 s; 4 of them system
    text = render([server_table(view, "base")])
    assert "System — the server: 4 CPUs (ssh db1); its own /proc, ssh db1 every 1 s; pg_stat_kcache 2.2.1" in text
    assert "Queries' CPU, cores busy (kcache)" in text and "40.0" in text  # 1.6 of the server's 4 CPUs
    reasons = recommend(view).reasons
    assert any(x.startswith("the server's CPU was saturated from 8 clients (its own /proc: peak 95%") and
               "on its 4 CPUs (ssh db1)" in x for x in reasons), reasons


def test_a_comparison_says_when_the_servers_cpus_differ(tmp_path: Path) -> None:
    from pgknee.analyze.compare import metadata_differences
    from pgknee.plan import load_plan_file, plan_from_values

    a = _remote(**{"server.machine.cpus": "4", "server.machine.cpus_source": "--server-cpus"})
    assert "server CPUs: 4 vs 8" in metadata_differences(a, {**a, "server.machine.cpus": "8"})
    assert not [d for d in metadata_differences(a, _remote()) if d.startswith("server CPUs")]  # one unknown
    f = tmp_path / "plan.toml"
    f.write_text('[target]\ndsn = "postgresql://app@db1/app"\nserver_cpus = 16\nserver_memory = "64GB"\n'
                 'server_ssh = "app@db1"\n')
    t = plan_from_values({}, load_plan_file(str(f))).target
    assert (t.server_cpus, t.server_memory_gb, t.server_ssh) == (16, 64.0, "app@db1")


def test_the_report_of_a_remote_run_whose_server_cpus_are_unknown() -> None:
    from pgknee.report import document as doc
    from pgknee.report import html

    data = _with_server_figures()
    env = {k: v for k, v in data.env.items() if k != "server.machine.cpus"}
    env["server.machine.cpus_source"] = "unknown: pg_read_file is not allowed to this role"
    text = html.render(doc.build([build(dataclasses.replace(data, env=env))]))
    assert "server: CPUs unknown (pg_read_file is not allowed to this role), memory unknown" in text
    assert "withheld: server CPUs unknown (pg_read_file is not allowed to this role): give --server-cpus N" in text
    assert "System — the server: CPUs unknown" in text and "cores × 2" not in text
    known = html.render(doc.build([build(_with_server_figures())]))
    assert "server: 4 CPUs (ssh db1)" in known and "System — the server: 4 CPUs (ssh db1)" in known
    assert 'data-chart="server-cpu"' in known and "The server&#x27;s CPU and run queue per step" in known
    assert "server CPUs: 4" in known  # the run queue's line, the server's CPUs
    assert 'data-chart="server-cpu"' not in html.render(doc.build([build(make_run_data())]))  # embedded: none


def test_as_root_no_ssh_configuration_another_user_can_change(tmp_path: Path) -> None:
    import os

    from pgknee.base.errors import UserError
    from pgknee.collect.sshproc import check_config, ssh_argv

    assert ssh_argv("app@db1", 0.5, "/etc/cfg")[:4] == ["ssh", "-F", "/etc/cfg", "-o"]
    assert ssh_argv("app@db1", 0.5)[-5:] == ["--", "app@db1", "python3", "-", "0.5"]  # never taken for an option
    with pytest.raises(UserError, match="is not a file"):
        check_config(str(tmp_path))
    with pytest.raises(UserError, match="No such file"):
        check_config(str(tmp_path / "none"))
    if os.geteuid() != 0:
        pytest.skip("the refusals below are root's")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    (shared / "cfg").write_text("Host x\n")
    with pytest.raises(UserError, match="as root, pgknee gives ssh no configuration file another user can change"):
        check_config(str(shared / "cfg"))
    mine = tmp_path / "cfg"
    mine.write_text("Host x\n")
    mine.chmod(0o666)
    with pytest.raises(UserError, match="another user can change"):
        check_config(str(mine))
    mine.chmod(0o600)
    check_config(str(mine))


def test_the_json_carries_the_servers_figures() -> None:
    from pgknee.report.jsonout import run_json

    summary = run_json(build(_with_server_figures()))["summary"]
    c2, c8 = summary
    assert c2["server"]["os"] is None and c2["server"]["kcache"] == {"cores_busy": 1.6, "system_pct": 25.0}
    assert c8["server"]["os"]["peak_cpu"] == 95.0 and c8["server"]["os"]["samples"] == 4
    assert run_json(build(make_run_data()))["summary"][0]["server"] is None


def test_kcache_from_its_records_as_from_the_facts_of_older_runs() -> None:
    """Since format 16 pg_stat_kcache's figures are records (model.server.KcacheStep); a run before
    kept them as step facts: both read the same."""
    from pgknee.analyze.cpus import kcache_cpu
    from pgknee.model.server import KcacheStep

    old = _with_server_figures()
    new = renew(
        old, facts={i: StepFacts((Measured(10.0, 1.0),)) for i in old.facts},
        server={s.step_id: (KcacheStep(user_s=12.0, system_s=4.0, read_bytes=0.0, write_bytes=8192.0),)
                for s in old.steps})
    for data in (old, new):
        c8 = build(data).groups[1]
        assert kcache_cpu(data, c8) == (1.6, 25.0)
