"""How the JSON writes a figure over repetitions (analyze.view.Spread), and a record's fields
with such figures among them."""

from __future__ import annotations

import dataclasses
from typing import Any

from pgknee.analyze.view import Spread


def plain(v: object) -> Any:
    """A Spread as {"median", "min", "max", "n"}; any other value (None too) as it is."""
    return {"median": v.value, "min": v.lo, "max": v.hi, "n": v.n} if isinstance(v, Spread) else v


def fields_json(row: Any) -> dict[str, Any]:
    """A record's fields (a dataclass), its Spreads as plain() writes them."""
    return {f.name: plain(getattr(row, f.name)) for f in dataclasses.fields(row)}
