"""Files that cannot be turned against pgknee.

Two rules, one module:
- Private directories. Everything pgknee writes for its children (server and pgbouncer
  configuration, passfiles, scripts) goes into a directory pgknee made itself (mkdtemp,
  owned by pgknee's user, writable by nobody else), created with O_EXCL|O_NOFOLLOW, and
  handed to the unprivileged user pgknee runs its children as with fchown on the open
  descriptor: never a write or chown by path inside a directory another user can write.
  What that user writes itself (pgbench's logs) is read with O_NOFOLLOW and checked to be
  a plain file of that user's, so a planted symlink or hard link cannot make root read
  another file.
- Outputs. A file the user names (--json, --report, -o) is written to a temporary name in
  the same directory and renamed over the target, so a reader never sees half a file; a
  target that is not a regular file is refused (a FIFO would hang, a device or directory
  would be replaced), except a character device or pgknee's own standard output, which
  are written in place; '-' is standard output.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pgknee.base.errors import UserError
from pgknee.system import registry
from pgknee.system.proc import RunAs  # who a child runs as when pgknee is root; None: as pgknee itself

STDOUT = "-"


def private_dir(prefix: str, *, base: str | None = None, reachable_by: RunAs | None = None,
                record: bool = True) -> Path:
    """A new directory of pgknee's own (0700). When `reachable_by` is given (pgknee is root and
    that user must reach files inside by name), it is 0711: traversable, not listable, and
    writable by pgknee alone. Recorded in the registry (unless inside one that is), so that it
    is removed even if pgknee dies."""
    d = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    os.chmod(d, 0o711 if reachable_by is not None else 0o700)
    if record:
        registry.current().directory(d)
    return d


def remove_private_dir(path: Path) -> None:
    """Remove one of pgknee's directories (fd-based: links inside are not followed) and its record."""
    shutil.rmtree(path, ignore_errors=True)
    registry.current().forget_directory(path)


def _open_new(path: Path, mode: int) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)


def create_file(path: Path, data: bytes = b"", *, mode: int = 0o600, owner: RunAs | None = None) -> None:
    """A new file in one of pgknee's private directories: never an existing one, never through a
    link; given to `owner` on its descriptor."""
    fd = _open_new(path, mode)
    try:
        if owner is not None:
            os.fchown(fd, owner.uid, owner.gid)
        os.fchmod(fd, mode)  # the umask does not get a say
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes, *, mode: int = 0o600, owner: RunAs | None = None) -> None:
    """Write a private file anew: a fresh file beside it, renamed over it."""
    tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}")
    create_file(tmp, data, mode=mode, owner=owner)
    os.replace(tmp, path)


def open_log(path: Path) -> int:
    """A new log file of pgknee's own for a child's output: the child writes through the
    inherited descriptor, so it need not own or even reach the file."""
    return _open_new(path, 0o600)


def make_dir(path: Path, *, owner: RunAs | None = None, mode: int = 0o700) -> Path:
    """A subdirectory of a private directory, handed to `owner` through its descriptor."""
    os.mkdir(path, mode)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if owner is not None:
            os.fchown(fd, owner.uid, owner.gid)
        os.fchmod(fd, mode)
    finally:
        os.close(fd)
    return path


def open_child_file(path: Path, owner: RunAs | None) -> int:
    """Open for reading a file a child wrote in a directory it owns: not a link, one link
    only, and the child's own (or pgknee's, when the child runs as pgknee)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    st = os.fstat(fd)
    uid = owner.uid if owner is not None else os.geteuid()
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1 or st.st_uid != uid:
        os.close(fd)
        raise OSError(f"{path} is not a plain file written by the process pgknee started")
    return fd


def child_files(directory: Path, pattern: str) -> Iterator[Path]:
    """Names in a child's directory matching `pattern`, links left out."""
    for p in sorted(directory.glob(pattern)):
        if not p.is_symlink():
            yield p


def read_child_text(path: Path, owner: RunAs | None, limit: int = 1 << 20) -> str:
    """The last `limit` bytes of a file a child wrote (see open_child_file)."""
    fd = open_child_file(path, owner)
    with os.fdopen(fd, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        f.seek(max(0, size - limit))
        return f.read().decode(errors="replace")


# ---- outputs the user names -------------------------------------------------------------------------
def writable_by_others(directory: Path) -> bool:
    """Can a user other than root change what a name in `directory` points at?"""
    try:
        st = os.stat(directory)
    except OSError:
        return False
    return st.st_uid != 0 or bool(st.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _is_own_stdout(st: os.stat_result) -> bool:
    try:
        out = os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (st.st_dev, st.st_ino) == (out.st_dev, out.st_ino)


def output_kind(path: str) -> str:
    """'stdout', 'device' (write in place), 'file' (write beside, then rename); or UserError."""
    if path == STDOUT:
        return "stdout"
    p = Path(path)
    try:
        lst = os.lstat(p)
    except FileNotFoundError:
        lst = None
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}", "choose a writable path for the output") from None
    if lst is not None and stat.S_ISLNK(lst.st_mode) and os.geteuid() == 0 \
            and writable_by_others(p.parent) and not _is_own_stdout(os.stat(p)):
        raise UserError(f"{path} is a symbolic link in {p.parent}, which other users can write: as root, "
                        "pgknee does not follow it", "give the path it points to, or a path in a directory of root's")
    try:
        st = os.stat(p)
    except FileNotFoundError:
        return "file"
    except OSError as e:
        raise UserError(f"cannot write {path}: {e.strerror}", "choose a writable path for the output") from None
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISCHR(st.st_mode) or _is_own_stdout(st):
        return "device"
    what = _NOT_REPLACED.get(stat.S_IFMT(st.st_mode), "not a regular file")
    raise UserError(f"cannot write {path}: it is {what}, which pgknee does not replace",
                    "give the name of a file ('-' writes to standard output)")


# what output_kind says of a path that is neither a file nor a device, by its file type
_NOT_REPLACED = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}


def write_output(path: str, data: bytes) -> None:
    """All or nothing: '-' and character devices written in place, a file through a temporary
    name in its own directory (mkstemp: never an existing name, never through a link)."""
    kind = output_kind(path)
    if kind == "stdout":
        sys.stdout.flush()
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    if kind == "device":
        with open(path, "wb") as f:
            f.write(data)
        return
    target = Path(os.path.realpath(path))  # a link to a file: the file is written, the link stays
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(os.stat(target).st_mode))
        else:
            os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, target)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        raise UserError(f"cannot write {path}: {e.strerror}", "choose a writable path") from None


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
