"""run.preflight.check_capacity, the refusal before any step: a step that needs more server
connections than the server has room for. Its words and its kind are what a DBA acts on: a pool
the variant asks for that no server of that max_connections can hold is the variant's fault
(exit 2, lower pool= or processes=); clients the server cannot take are the server's (exit 3,
with the max_connections that would). One end-to-end refusal after a real server's start stays in
tests/integration (test_targets_and_faults: nothing left, no store)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pgknee.base.errors import TargetError, UserError
from pgknee.collect.serverfacts import ServerFacts
from pgknee.plan import Plan, parse_variant
from pgknee.run.preflight import check_capacity

# max_connections 100, 3 reserved for superusers, pgknee's own first session in use: 96 free for a
# role that is not a superuser, 95 once pgknee's sampler takes its own
SERVER = ServerFacts(version="15.18", version_num=150018, is_superuser=False, max_connections=100,
                     superuser_reserved=3, reserved=0, connections_in_use=1, settings={})


def _refusal(variant: str, clients: int, embedded: bool = True) -> Any:
    plan = Plan(clients=(2, clients), variants=(parse_variant(variant, "extended"),))
    with pytest.raises((UserError, TargetError)) as e:
        check_capacity(plan, SimpleNamespace(created_by_pgknee=embedded), SERVER)  # type: ignore[arg-type]
    return e.value


def test_a_pool_no_server_of_that_size_holds_is_the_variants_fault() -> None:
    e = _refusal("pooled:pool=500", 600)
    assert isinstance(e, UserError) and e.message == (
        "variant pooled:pool=500: a pool of 500 can open 500 server connections but the server has room for 95 "
        "(max_connections=100)")
    assert e.hint == "lower pool= or processes=, or add --set max_connections=515"  # 500 + 100 - 95 + 10
    two = _refusal("pooled:transaction:pool=60:processes=2", 200)
    assert isinstance(two, UserError) and "2 pgbouncer processes, each with a pool of 60 can open 120 server " \
        "connections but the server has room for 95" in two.message
    pgpool = _refusal("pgpool:pool=120", 120, embedded=False)
    assert isinstance(pgpool, UserError) and "pgpool-II with 120 children and one for pgknee's console can open " \
        "121 server connections" in pgpool.message and pgpool.hint.endswith("or raise max_connections on the server")


def test_clients_the_server_cannot_take_are_the_servers_and_say_what_would() -> None:
    e = _refusal("direct", 120)
    assert isinstance(e, TargetError) and e.message == (
        "the largest step needs 120 connections but the server has room for 95 (max_connections=100, 3 reserved, "
        "1 in use, 1 for pgknee's sampler)")
    assert e.hint.startswith("add --set max_connections=135")  # 120 + 100 - 95 + 10
    assert _refusal("direct", 120, embedded=False).hint == "raise max_connections on the server or lower --clients"
    # a pool that fits, in front of more clients than the server could take: no refusal
    check_capacity(Plan(clients=(2, 500), variants=(parse_variant("pooled:pool=20", "extended"),)),
                   SimpleNamespace(created_by_pgknee=True), SERVER)  # type: ignore[arg-type]
