"""The articles' experiments as ready plans (TOML files beside this module)."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from pgknee.base.errors import UserError

SMALL_MACHINE_CPUS = 8  # below this, a scenario's [small_machine] values apply


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    article: str
    path: Path
    small_note: str | None


def all_scenarios() -> list[Scenario]:
    out = []
    for entry in sorted(resources.files(__package__).iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            data = tomllib.loads(entry.read_text())
            small = data.get("small_machine", {})
            out.append(Scenario(entry.name.removesuffix(".toml"), str(data.get("description", "")),
                                str(data.get("article", "")), Path(str(entry)),
                                str(small.get("note")) if small.get("note") else None))
    return out


def find(name: str) -> Scenario:
    for s in all_scenarios():
        if s.name == name:
            return s
    names = ", ".join(s.name for s in all_scenarios())
    raise UserError(f"unknown scenario {name!r}", f"list them with 'pgknee scenarios': {names}")
