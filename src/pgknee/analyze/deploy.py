"""The recommendation in the form people deploy (pgknee recommend --app-instances): the database
concurrency N split into per-instance pools, the server's max_connections checked, a pgbouncer
snippet, and the settings of common application pools; every figure with its arithmetic. Pure.

Two shapes. Apps straight to the database: each of I instances gets ceil(N / I) connections,
so the database sees I x ceil(N / I) (N or a little more). Apps through one pgbouncer: the
database side stays N (default_pool_size) plus a small reserve; the apps' pools may be larger,
their extra clients queue in pgbouncer instead of the database."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from pgknee.analyze.recommend import Recommendation, concurrency_of
from pgknee.analyze.view import RunView
from pgknee.base.errors import NoAnswer, UserError
from pgknee.model.keys import setting

APP_POOLS = ("hikari", "sqlalchemy", "pgx")
APP_QUEUE_FACTOR = 2  # through pgbouncer: each app's pool is this many times its share of N
CLIENT_MARGIN = 1.25  # max_client_conn: the apps' pools with a quarter more (restarts, deploys overlapping)


@dataclass(frozen=True)
class Deployment:
    variant: str
    n: int  # the database-side concurrency recommended
    interval: tuple[int, int] | None  # the recommendation's 95% interval
    instances: int
    per_instance: int  # apps straight to the database
    direct_total: int
    max_connections: int | None  # the server's, as stored with the run
    reserved: int  # superuser_reserved_connections
    other: int  # connections others need (monitoring, admin, migrations)
    pgbouncer: dict[str, str | int] = field(default_factory=dict)  # empty unless asked for
    app_side: int = 0  # each app's pool through pgbouncer
    app_pools: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)  # name -> shape -> settings
    lines: tuple[str, ...] = ()  # the arithmetic, line by line

    def fits(self, database_side: int) -> bool | None:
        if self.max_connections is None:
            return None
        return database_side + self.reserved + self.other <= self.max_connections


def app_pool_names(text: str) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(x.strip().lower() for x in text.split(",") if x.strip()))
    bad = [x for x in names if x not in APP_POOLS]
    if bad or not names:
        raise UserError(f"--app-pool {text!r}: unknown pool {', '.join(bad) or text!r}",
                        f"choose from {', '.join(APP_POOLS)} (several with commas)")
    return names


def database_n(view: RunView, r: Recommendation) -> int:
    """The database-side concurrency of the recommended count (a pooled variant's: its pool)."""
    if not r.answered or r.connections is None:
        raise NoAnswer(f"variant {r.variant}: no recommended connection count to deploy ({r.verdict}: "
                        f"{r.headline().split(': ', 1)[-1][:160]})", "extend the sweep as the recommendation says, "
                        "then ask again")
    g = next(g for g in view.groups if g.variant == r.variant and g.clients == r.connections)
    return concurrency_of(g)


def _int_setting(view: RunView, name: str) -> int | None:
    text = view.data.env.get(setting(name), "").split(" ")[0]
    return int(text) if text.isdigit() else None


def deployment(view: RunView, r: Recommendation, instances: int, *, other: int = 5, pgbouncer: bool = False,
               app_pools: Sequence[str] = ()) -> Deployment:
    if instances < 1:
        raise UserError(f"--app-instances {instances}: an application has at least one instance",
                        "give the number of application processes (pods, servers) that connect")
    n = database_n(view, r)
    per = math.ceil(n / instances)
    d = Deployment(r.variant, n, r.counts_interval, instances, per, per * instances,
                   _int_setting(view, "max_connections"),
                   _int_setting(view, "superuser_reserved_connections") or 0, other)
    lines = [f"database concurrency N = {n}" + (" (the pool size of the recommended count)"
                                                if r.concurrency == "pool size" else " (the recommended count)")
             + (f"; {r.span_text()}" if r.counts_interval else ""),
             f"apps straight to the database: per instance ceil({n} / {instances}) = {per} (rounded up), "
             f"so {instances} x {per} = {per * instances} connections"
             + (f", {per * instances - n} more than N (rounded down: {instances} x {n // instances} = "
                f"{instances * (n // instances)})" if per * instances > n else ""),
             _fits_line(d, d.direct_total, "apps straight to the database")]
    if per * instances > 2 * n:
        lines.append(f"  {instances} instances with at least one connection each are {per * instances} connections, "
                     f"over twice N: put pgbouncer between them (--pgbouncer)")
    if pgbouncer:
        d, more = _with_pgbouncer(d, view, r)
        lines += more
    pools = {name: _app_pool(name, d, pgbouncer) for name in app_pools}
    return dataclasses.replace(d, app_pools=pools, lines=tuple(lines))


def _fits_line(d: Deployment, database_side: int, shape: str) -> str:
    need = f"{database_side} + {d.reserved} superuser_reserved_connections + {d.other} for others (monitoring, " \
           f"admin, migrations) = {database_side + d.reserved + d.other}"
    if d.max_connections is None:
        return f"{shape}: max_connections must hold {need} (the run stored no max_connections)"
    fits = d.fits(database_side)
    return (f"{shape}: max_connections must hold {need}; the server had {d.max_connections}: "
            + ("it fits" if fits else f"it does NOT fit: raise max_connections to "
                                      f"{database_side + d.reserved + d.other} or more, or pool"))


def _with_pgbouncer(d: Deployment, view: RunView, r: Recommendation) -> tuple[Deployment, list[str]]:
    n = d.n
    modes = {s.pool_mode for g in view.groups if g.variant == r.variant for s in g.steps
             if s.pool_mode and s.pooler_kind == "managed"}  # pgbouncer's own mode, not pgpool-II's sessions
    mode = sorted(modes)[0] if len(modes) == 1 else "transaction"
    upper = r.counts_interval[1] if r.counts_interval else n
    low, high = math.ceil(0.1 * n), math.ceil(0.2 * n)  # at least 1: ceil of a positive N
    reserve = min(max(upper - n, low), high)
    app_side = APP_QUEUE_FACTOR * d.per_instance
    clients = math.ceil(CLIENT_MARGIN * d.instances * app_side)
    snippet: dict[str, str | int] = {"pool_mode": mode, "default_pool_size": n, "reserve_pool_size": reserve,
                                     "reserve_pool_timeout": 5, "max_db_connections": n + reserve,
                                     "max_client_conn": clients}
    lines = [f"pgbouncer pool_mode = {mode}" + (" (as the run's pooled variant)" if modes else
                                                 " (the mode that lets N connections serve many clients; session "
                                                 "mode would pin one server connection per app connection)"),
             f"pgbouncer default_pool_size = N = {n} (per database/user pair: one application user on one "
             "database gets one pool; more pairs, more pools, bounded together by max_db_connections)",
             f"pgbouncer reserve_pool_size = the 95% interval's upper bound less N, kept between ceil(10% "
             f"of N) and ceil(20% of N): min(max({upper} - {n}, {low}), {high}) = {reserve} (opened only after a "
             "client waited reserve_pool_timeout)",
             f"pgbouncer max_db_connections = N + reserve = {n} + {reserve} = {n + reserve} (the most the "
             "database ever sees from pgbouncer)",
             f"apps through pgbouncer: each app's pool = {APP_QUEUE_FACTOR} x its share ceil({n} / {d.instances}) = "
             f"{app_side} (their extra clients queue in pgbouncer, not in the database)",
             f"pgbouncer max_client_conn = ceil({CLIENT_MARGIN:g} x {d.instances} instances x {app_side}) = {clients} "
             "(a quarter more for overlapping deploys; pgbouncer needs as many file descriptors)",
             _fits_line(d, n + reserve, "through pgbouncer")]
    if mode == "transaction" and any(s.protocol == "prepared" for g in view.groups for s in g.steps):
        lines.append("the run used prepared statements: through transaction pooling they need pgbouncer 1.21 or "
                     "later with max_prepared_statements > 0 (older ones break them)")
    return dataclasses.replace(d, pgbouncer=snippet, app_side=app_side), lines


def _app_pool(name: str, d: Deployment, pgbouncer: bool) -> dict[str, dict[str, int]]:
    """An application pool's settings per shape: 'direct' (straight to the database) and, with
    pgbouncer, 'pgbouncer'."""
    sizes = {"direct": d.per_instance, **({"pgbouncer": d.app_side} if pgbouncer else {})}
    if name == "hikari":  # a fixed-size pool, as HikariCP advises: minimumIdle = maximumPoolSize
        return {shape: {"maximumPoolSize": k, "minimumIdle": k} for shape, k in sizes.items()}
    if name == "sqlalchemy":  # behind a cap, no overflow: the cap is pool_size
        return {shape: {"pool_size": k, "max_overflow": 0} for shape, k in sizes.items()}
    return {shape: {"MaxConns": k} for shape, k in sizes.items()}  # pgx: pgxpool.Config.MaxConns
