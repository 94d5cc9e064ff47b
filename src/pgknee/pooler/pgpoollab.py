"""A pgpool-II in a run: the binary found and its version checked once, one started per step
(and once to check a login through it before the first step), and what its console shows in the
pooler tables' terms."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from pgknee.plan import PoolerSpec
from pgknee.pooler.pgpool import ManagedPgpool, PgpoolSettings, PgpoolSnapshot, pgpool_version
from pgknee.system import proc
from pgknee.targets.base import Endpoint


class PgpoolLab:
    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.version_text, self.version = pgpool_version(binary)

    @contextlib.contextmanager
    def started(self, pooler: PoolerSpec, server: Endpoint, run_as: proc.RunAs | None, max_clients: int,
                server_cpus: frozenset[int] | None, client_cpus: frozenset[int] | None) -> Iterator[ManagedPgpool]:
        cpus = {"server": server_cpus, "client": client_cpus}.get(pooler.placement)
        pgp = ManagedPgpool(self.binary, self.version, server, PgpoolSettings(pooler.pool_size, max_clients),
                            run_as=run_as, cpus=cpus)
        try:
            pgp.start()
            yield pgp
        finally:
            pgp.close()


def pgpool_counts(s: PgpoolSnapshot) -> tuple[int, ...]:
    """A snapshot as SHOW POOLS' counts (collect.pooler.POOL_COLUMNS): clients with a child
    (cl_active), clients in the listen queue waiting for one (cl_waiting), server connections in a
    transaction now (sv_active) and cached ones outside one (sv_idle); pgpool has no login or
    'used' state, nor a wait clock."""
    in_xact = s.executing + s.idle_in_transaction
    return s.busy, s.waiting or 0, in_xact, max(0, s.server_connections - in_xact), 0, 0, 0


def pgpool_totals(pgp: ManagedPgpool) -> dict[str, float]:
    """What grows: the client sessions its children ended, and the CPU all its processes used."""
    out = {"clients_served": float(pgp.snapshot().clients_served)}
    cpu = pgp.cpu_seconds()
    if cpu is not None:
        out["cpu_seconds"] = cpu
    return out
