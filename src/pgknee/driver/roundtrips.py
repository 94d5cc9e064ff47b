"""How many client-server round trips a pgbench transaction waits for, counted from its script:
each SQL command is one under the simple, extended and prepared protocols alike (pgbench sends
a command's messages with their Sync at once and waits for the answer; a prepared command's
one-off Parse per connection is left out); a pipeline (\\startpipeline ... \\endpipeline) is one
whatever it holds; meta-commands (\\set, \\sleep, \\shell) none. A compound command (a\\; b) is
one. This is what a network hop multiplies, and what pipeline mode removes."""

from __future__ import annotations

import re
from collections.abc import Sequence

_META_RE = re.compile(r"^\s*\\([a-z]+)", re.IGNORECASE)
_SQL_END_RE = re.compile(r"(?<!\\);")
_GSET_RE = re.compile(r"\\[ga]set\b")


def _strip(line: str) -> str:
    """A line without its -- comment and its quoted strings (where a ; does not end a command)."""
    out, quote = [], ""
    i = 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif line.startswith("--", i):
            break
        else:
            out.append(c)
        i += 1
    return "".join(out)


def round_trips(text: str) -> int:
    """The round trips of one run of a pgbench script."""
    counter = _Counter()
    for raw in text.splitlines():
        m = _META_RE.match(raw)
        if m:
            counter.end_command()
            counter.meta(m.group(1).lower())
            continue
        line = _strip(raw)
        parts = _SQL_END_RE.split(line)
        for i, part in enumerate(parts):
            if part.strip():
                counter.pending = True
            if i < len(parts) - 1 or _GSET_RE.search(part):
                counter.end_command()
    counter.end_command()
    return counter.n


class _Counter:
    def __init__(self) -> None:
        self.n = 0
        self.pending = False  # a SQL command begun, not yet ended
        self.in_pipeline = False

    def end_command(self) -> None:
        if self.pending and not self.in_pipeline:
            self.n += 1
        self.pending = False

    def meta(self, cmd: str) -> None:
        if cmd == "startpipeline":
            self.in_pipeline = True
        elif cmd == "endpipeline":
            self.in_pipeline = False
            self.n += 1


def per_transaction(scripts: Sequence[tuple[str, int]]) -> float:
    """The round trips of a transaction: each script's (text, weight), weighted as pgbench picks
    them."""
    total = sum(w for _, w in scripts)
    if total <= 0:
        return 0.0
    return sum(round_trips(t) * w for t, w in scripts) / total
