"""Finding a pooler's binary and reading its version, one shape for pgbouncer and pgpool-II: the
path a flag gave (checked, never searched around), else PATH and the packages' usual places; the
version from `BINARY --version`. Every failure is one PoolerError with what to do."""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from pgknee.base.errors import PoolerError
from pgknee.system import proc


@dataclass(frozen=True)
class PoolerBinary:
    name: str  # the executable's name: "pgbouncer"
    product: str  # as its --version says it: "PgBouncer"
    flag: str  # the flag that gives its path: "--pgbouncer"
    what: str  # how to find the real one, when the flag's path is not an executable
    needed_by: str  # "a pooled variant"
    install: str  # how to install it
    version_prefix: str  # what precedes the version in --version's output: r"PgBouncer "

    def find(self, explicit: str | None = None) -> str:
        if explicit:
            path = Path(explicit)
            if not (path.is_file() and os.access(path, os.X_OK)):
                raise PoolerError(f"{self.flag} {explicit} is not an executable file", self.what)
            return str(path)
        for candidate in (shutil.which(self.name), f"/usr/sbin/{self.name}", f"/usr/local/bin/{self.name}"):
            if candidate and os.access(candidate, os.X_OK):
                return candidate
        raise PoolerError(f"{self.product} is not installed, and {self.needed_by} needs it",
                          f"{self.install}, or pass {self.flag} PATH")

    def version(self, binary: str) -> tuple[str, tuple[int, int, int]]:
        """The version as text and as numbers (a missing patch level reads as 0)."""
        try:
            r = proc.run([binary, "--version"], timeout=10)
        except OSError as e:
            raise PoolerError(f"cannot run {binary}: {e.strerror}") from None
        m = re.search(self.version_prefix + r"(\d+)\.(\d+)(?:\.(\d+))?", r.stdout + r.stderr)
        if not m:
            raise PoolerError(f"{binary} --version did not say which {self.product} it is",
                              f"pass the real {self.name} binary with {self.flag}")
        ver = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
        return f"{ver[0]}.{ver[1]}.{ver[2]}", ver


PGBOUNCER = PoolerBinary(
    "pgbouncer", "pgbouncer", "--pgbouncer", "give the path of the pgbouncer binary", "a pooled variant",
    "install the pgbouncer package (apt-get install pgbouncer, dnf install pgbouncer, brew install pgbouncer; "
    "from a checkout, make setup)", r"PgBouncer ")
PGPOOL = PoolerBinary(
    "pgpool", "pgpool-II", "--pgpool", "give the path of the pgpool binary (pgpool-II's, /usr/sbin/pgpool on Debian)",
    "a pgpool variant", "install the pgpool2 package (apt-get install pgpool2, dnf install pgpool-II; from a "
    "checkout, make setup)", r"pgpool-II version ")
