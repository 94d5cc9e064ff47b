"""pgknee --version: the package's version, and the commit when pgknee runs from a checkout (read
from the repository's own files: no git process, nothing else started)."""

from __future__ import annotations

from pathlib import Path

from pgknee import __version__


def describe(package_dir: Path | None = None) -> str:
    """'pgknee 0.1.0', or 'pgknee 0.1.0 (checkout abc1234 on main)' from a git work tree."""
    commit = _commit((package_dir or Path(__file__).resolve().parent.parent).parent.parent)
    return f"pgknee {__version__}" + (f" (checkout {commit})" if commit else "")


def _commit(root: Path) -> str | None:
    """The checked-out commit of the repository at `root` (its .git directory, a loose or a packed
    ref, or a detached HEAD), short, with its branch; None when `root` is not a checkout."""
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if not head.startswith("ref: "):
            return head[:7] if head else None
        ref = head[5:]
        loose = git / ref
        sha = loose.read_text().strip() if loose.is_file() else _packed(git / "packed-refs", ref)
    except OSError:
        return None
    branch = ref.removeprefix("refs/heads/")
    return f"{sha[:7]} on {branch}" if sha else None


def _packed(path: Path, ref: str) -> str | None:
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1] == ref and not line.startswith("#"):
            return parts[0]
    return None
