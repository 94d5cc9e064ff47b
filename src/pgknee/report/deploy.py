"""The deployment advice (pgknee recommend --app-instances) as the terminal shows it and as JSON:
the arithmetic line by line, a pgbouncer.ini snippet, the application pools' settings."""

from __future__ import annotations

from typing import Any

from rich.console import RenderableType
from rich.text import Text

from pgknee.analyze.deploy import Deployment

POOL_NOTES = {"hikari": "HikariCP (Java)", "sqlalchemy": "SQLAlchemy create_engine(...)",
              "pgx": "pgx pgxpool.Config (Go; or pool_max_conns= in the connection string)"}
SHAPES = {"direct": "straight to the database", "pgbouncer": "through pgbouncer"}


def deployment_items(d: Deployment) -> list[RenderableType]:
    items: list[RenderableType] = [
        Text(f"Deployment for {d.variant}: {d.instances} application instance(s)", style="bold"),
        Text("\n".join(f"  {line}" for line in d.lines))]
    if d.pgbouncer:
        items.append(Text("pgbouncer.ini:\n[pgbouncer]\n" + "\n".join(f"{k} = {v}" for k, v in d.pgbouncer.items())))
    for name, shapes in d.app_pools.items():
        items.append(Text(f"{POOL_NOTES[name]}, per instance:\n" + "\n".join(
            f"  {SHAPES[shape]}: " + ", ".join(f"{k} = {v}" for k, v in settings.items())
            for shape, settings in shapes.items())))
    return items


def deployment_json(d: Deployment) -> dict[str, Any]:
    return {"variant": d.variant, "database_connections": d.n, "interval": list(d.interval) if d.interval else None,
            "app_instances": d.instances,
            "direct": {"per_instance": d.per_instance, "total": d.direct_total, "fits": d.fits(d.direct_total)},
            "max_connections": d.max_connections, "superuser_reserved_connections": d.reserved,
            "other_connections": d.other,
            "pgbouncer": dict(d.pgbouncer) or None,
            "through_pgbouncer": ({"app_pool_per_instance": d.app_side,
                                   "fits": d.fits(int(d.pgbouncer["max_db_connections"]))} if d.pgbouncer else None),
            "app_pools": d.app_pools, "arithmetic": list(d.lines)}
