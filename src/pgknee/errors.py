"""One exception tree. Everything a user can cause or meet ends up here and is
turned into one line and an exit code by the CLI, and nowhere else."""

from __future__ import annotations


class PgkneeError(Exception):
    """Base class: `message` says what is wrong, `hint` how to fix it."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def one_line(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class UserError(PgkneeError):
    """Bad input: flags, values, files."""

    exit_code = 2


class TargetError(PgkneeError):
    """The PostgreSQL server: unreachable, refused, missing binaries, too small."""

    exit_code = 3


class DriverError(PgkneeError):
    """The load generator (pgbench): missing, failed, unparseable output."""

    exit_code = 4


class StoreError(PgkneeError):
    """The collector database: unwritable, newer format, unknown run."""

    exit_code = 5


class PoolerError(PgkneeError):
    """The connection pooler (pgbouncer)."""

    exit_code = 6


class Interrupted(PgkneeError):
    """Ctrl-C or SIGTERM: stop cleanly, keep what was measured."""

    exit_code = 130
