"""pgknee recommend RUN --app-instances: the recommended database concurrency as per-instance pools,
a pgbouncer snippet and application pools, with the arithmetic; bad input in one line, exit 2."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from stored_runs import store_run

from pgknee import cli

RUN = "20270101-000000-usl0"


def _usl(n: int) -> float:
    return 1000 * n / (1 + 0.05 * (n - 1) + 0.002 * n * (n - 1))  # peak near 21.8


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # a line of arithmetic on one line


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("deploy") / "s.db"
    rnd = random.Random(1)
    store_run(path, RUN, {c: [_usl(c) * (1 + rnd.uniform(-0.02, 0.02)) for _ in range(3)]
                          for c in (1, 2, 4, 8, 12, 16, 24, 32, 48)})
    store_run(path, "20270101-000100-lin0", {1: [100.0, 101.0], 2: [200.0, 199.0], 4: [400.0, 402.0]})
    return path


def _recommend(db: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    rc = cli.main(["recommend", *argv, "--store", str(db)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_twelve_instances_direct_and_through_pgbouncer(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = _recommend(db, capsys, RUN, "--app-instances", "12", "--pgbouncer", "--app-pool",
                              "hikari,sqlalchemy,pgx", "--json", "-")
    assert rc == 0, err
    (d,) = json.loads(out)["deployments"]
    assert d["database_connections"] == 16  # the recommendation: the smallest count reaching 95% of the peak
    assert d["direct"] == {"per_instance": 2, "total": 24, "fits": True}  # ceil(16 / 12) = 2, 12 x 2
    assert d["max_connections"] == 100 and d["superuser_reserved_connections"] == 3
    # reserve: the 95% interval's upper bound (16) less 16 is below ceil(10% of 16) = 2
    assert d["pgbouncer"] == {"pool_mode": "transaction", "default_pool_size": 16, "reserve_pool_size": 2,
                              "reserve_pool_timeout": 5, "max_db_connections": 18, "max_client_conn": 60}
    assert d["through_pgbouncer"] == {"app_pool_per_instance": 4, "fits": True}  # 2 x ceil(16/12); 1.25 x 12 x 4
    assert d["app_pools"] == {
        "hikari": {"direct": {"maximumPoolSize": 2, "minimumIdle": 2},
                   "pgbouncer": {"maximumPoolSize": 4, "minimumIdle": 4}},
        "sqlalchemy": {"direct": {"pool_size": 2, "max_overflow": 0}, "pgbouncer": {"pool_size": 4, "max_overflow": 0}},
        "pgx": {"direct": {"MaxConns": 2}, "pgbouncer": {"MaxConns": 4}}}
    # the tables went to standard error, the arithmetic line by line with them
    assert "per instance ceil(16 / 12) = 2 (rounded up), so 12 x 2 = 24 connections, 8 more than N" in err
    assert "min(max(16 - 16, 2), 4) = 2" in err and "max_db_connections = N + reserve = 16 + 2 = 18" in err
    assert "[pgbouncer]\npool_mode = transaction\ndefault_pool_size = 16\n" in err
    assert "max_client_conn = ceil(1.25 x 12 instances x 4) = 60" in err


def test_max_connections_that_does_not_fit_is_said(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, _ = _recommend(db, capsys, RUN, "--app-instances", "60", "--other-connections", "50")
    assert rc == 0
    assert ("60 + 3 superuser_reserved_connections + 50 for others (monitoring, admin, migrations) = 113; the server "
            "had 100: it does NOT fit: raise max_connections to 113 or more, or pool") in out
    assert "60 connections, over twice N: put pgbouncer between them (--pgbouncer)" in out
    assert "[pgbouncer]" not in out and "HikariCP" not in out  # only what was asked for


@pytest.mark.parametrize(("argv", "line"), [
    ([RUN, "--app-instances", "0"], "argument --app-instances: 0 instances: an application has at least one"),
    ([RUN, "--app-instances", "x"], "argument --app-instances: 'x' is not a whole number"),
    ([RUN, "--pgbouncer"], "--pgbouncer and --app-pool size pools for the application's instances (add "
                           "--app-instances N)"),
    ([RUN, "--app-instances", "3", "--app-pool", "hikari,c3p0"], "--app-pool 'hikari,c3p0': unknown pool 'c3p0'"),
])
def test_bad_input_is_one_line_and_exit_2(db: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                          line: str) -> None:
    rc, out, err = _recommend(db, capsys, *argv)
    assert rc == 2 and len(err.splitlines()) == 1 and err.startswith("pgknee: error: ") and line in err, err
    assert "Deployment" not in out


def test_no_count_to_deploy_is_its_own_exit_code(db: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A sweep with no answer (still growing, nothing saturated) is not bad input: exit 10, one line
    saying why and what to run next."""
    rc, out, err = _recommend(db, capsys, "20270101-000100-lin0", "--app-instances", "3")
    assert rc == 10 and len(err.splitlines()) == 1 and err.startswith("pgknee: error: "), err
    assert "variant base: no recommended connection count to deploy (not-identified: peak not reached" in err
    assert "Deployment" not in out


def test_a_pooled_variant_deploys_its_pool_not_its_clients() -> None:
    """Through a managed pool of 10 (reserve 0), 16 clients held 10 server connections: N is 10,
    and the pool mode is the variant's own."""
    from builders import make_run_data, step

    from pgknee.analyze.deploy import deployment
    from pgknee.analyze.recommend import Recommendation
    from pgknee.analyze.run import build

    steps = [step(step_id=i, seq=i, variant="pooled", clients=c, rep=1, pooler_kind="managed", pool_mode="session",
                  pool_size=10, protocol="extended") for i, c in enumerate((4, 8, 16), start=1)]
    view = build(make_run_data(steps=steps, scripts={}, failures={}, pgdb={}, os={}, waits={}, waits_bg={},
                               snaps={}, env={"setting.max_connections": "20",
                                              "setting.superuser_reserved_connections": "3"}))
    r = Recommendation(variant="pooled", verdict="peaks", connections=16, counts_interval=(10, 13), fit=None,
                       knee=None, heuristic=4, cores=2, spindles=0, fraction=0.95, p99_target_ms=None,
                       concurrency="pool size")
    d = deployment(view, r, 4, pgbouncer=True, app_pools=("pgx",))
    assert (d.n, d.per_instance, d.direct_total) == (10, 3, 12)  # ceil(10 / 4) = 3
    # reserve: 13 - 10 = 3, kept between ceil(1.0) = 1 and ceil(2.0) = 2
    assert d.pgbouncer["pool_mode"] == "session" and d.pgbouncer["reserve_pool_size"] == 2
    assert d.pgbouncer["max_db_connections"] == 12 and d.pgbouncer["max_client_conn"] == 30  # 1.25 x 4 x 6
    assert d.fits(12) is True and d.fits(13) is False  # 12 + 3 + 5 = 20 of max_connections 20
    assert d.app_pools == {"pgx": {"direct": {"MaxConns": 3}, "pgbouncer": {"MaxConns": 6}}}
    assert d.lines[0].startswith("database concurrency N = 10 (the pool size of the recommended count)")
    assert "pool_mode = session (as the run's pooled variant)" in "\n".join(d.lines)
