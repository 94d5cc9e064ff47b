"""The statements that write run data, one file each (the writer runs them, nothing else)."""

from __future__ import annotations

from functools import cache
from importlib import resources


@cache
def load(name: str) -> str:
    return (resources.files(__package__) / f"{name}.sql").read_text()
