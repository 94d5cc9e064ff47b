"""pg_stat_kcache on a real server (a cluster of the test's own, with the library preloaded and the
extension created): each step's queries' CPU time, a server figure that needs no /proc."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgknee.targets.local import EmbeddedCluster, find_bindir

from .conftest import QUICK, own_cluster, pgknee, sql, workload_tps_db


@pytest.fixture
def kcache_server() -> Iterator[EmbeddedCluster]:
    bindir = find_bindir()
    if not (Path(bindir).parent / "lib" / "pg_stat_kcache.so").exists():
        pytest.skip("pg_stat_kcache is not installed (postgresql-NN-pg-stat-kcache, scripts/setup-system.sh)")
    with own_cluster("kcache", {"shared_preload_libraries": "pg_stat_statements,pg_stat_kcache"}, bindir,
                     extensions=("pg_stat_statements", "pg_stat_kcache")) as c:
        yield c


def test_the_steps_queries_cpu_from_pg_stat_kcache(kcache_server: EmbeddedCluster, tmp_path: Path) -> None:
    store = tmp_path / "k.db"
    r = pgknee("run", "--dsn", f"postgresql://pgknee@127.0.0.1:{kcache_server.port}/pgknee", "--clients", "4",
               "--duration", "2s", "--scale", "0.1", "--quiet", "--no-waits", "--sample-interval", "0",
               "--os-interval", "0", "--store", str(store), *QUICK,
               env={"PGPASSWORD": kcache_server.password}, cwd=tmp_path)
    assert r.code == 0, r.err
    env = dict(sql(store, "SELECT key, value FROM run_environment WHERE key LIKE 'server.%'"))
    assert str(env["server.pg_stat_kcache"]).startswith("2.")
    assert env["server.os"] == "not sampled: --os-interval 0"
    on = dict(sql(store, "SELECT key, value FROM run_environment WHERE key = 'collect.server.pg_stat_kcache'"))
    assert on == {"collect.server.pg_stat_kcache": "on"}
    for (step_id,) in sql(store, "SELECT step_id FROM steps"):
        facts = dict(sql(store, "SELECT name, value FROM step_facts WHERE step_id = ?", step_id))
        ((user, system),) = sql(store, "SELECT user_s, system_s FROM step_kcache WHERE step_id = ?", step_id)
        busy = (float(user) + float(system)) / float(facts["bench.seconds"])
        assert 0.05 < busy <= len(os.sched_getaffinity(0)) * 1.1, (user, system)  # cores the queries kept busy
    assert "Queries' CPU, cores busy (kcache)" in r.out and "% of the server's CPUs" in r.out
    tps = sql(store, "SELECT step_id, tps FROM steps")
    assert all(abs(workload_tps_db(store, sid) / float(x) - 1) < 0.05 for sid, x in tps)  # type: ignore[arg-type]  # its reads left out of the step's commits
