"""A step's records: what each collector hands back when a step ends (collect.protocol), all kept
the same way. A record says where it goes (`stored`: its statements in store/sql, each with its
rows, which the writer puts after the run's and the step's ids), travels through a side file by
its kind's name (`to_json`, `from_json`), and says how it comes back (`stored_in`: the tables and
columns it is read from; `loaded`: the step's records from those rows, given only for a step with
rows in at least one of them), which store.db.Store.records does for every kind alike and RunData.of
hands to the analysis. A new kind of record needs `@kind`,
its own `stored`, `stored_in` and `loaded`; the writer, the side files, the store's reads, the loader
and the step that carries it stay as they are."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

StoredRow = Sequence[Any] | Mapping[str, Any]  # positional (after run_id, step_id) or named (:step_id, :run_id)
Rows = list[tuple[Any, ...]]  # a step's rows of one table, the columns a Read names


class Read(NamedTuple):
    """A table a kind is read back from: the columns `loaded` takes, in that order, and whether
    only the bench phase's rows are read (a table of samples keeps every phase)."""

    table: str
    columns: tuple[str, ...]
    bench_only: bool = False


def stored_value(v: Any) -> Any:
    """A value as the store keeps it: a bool as 0 or 1 (SQLite's integers, the PostgreSQL store's bigint)."""
    return int(v) if isinstance(v, bool) else v


def columns_of(fields: Iterable[str]) -> tuple[str, ...]:
    """A sample's fields as its table's columns: its phase is the table's _phase."""
    return tuple("_phase" if f == "phase" else f for f in fields)


class StepRecord(Protocol):
    """A frozen record of one step, from one collector."""

    def stored(self) -> Iterable[tuple[str, Iterable[StoredRow]]]:
        """(statement in store/sql, its rows) for each table it goes into."""
        ...


KINDS: dict[str, type[Any]] = {}
C = TypeVar("C", bound=type[Any])
R = TypeVar("R")


def kind(cls: C) -> C:
    """A dataclass that is a step's record, known to side files by its class's name."""
    KINDS[cls.__name__] = cls
    return cls


def _plain(obj: Any) -> Any:
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: _plain(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, tuple | list):
        return [_plain(x) for x in obj]
    return obj


def _tuples(v: Any) -> Any:
    return tuple(_tuples(x) for x in v) if isinstance(v, list) else v


def to_json(record: object) -> dict[str, Any]:
    """The record's kind and its fields as JSON values (lists for tuples)."""
    return {"kind": type(record).__name__, "fields": _plain(record)}


def _typed(hint: Any, v: Any) -> Any:
    """A field's JSON value as its annotation says: rows of a NamedTuple as that NamedTuple."""
    args = typing.get_args(hint)
    if isinstance(v, list) and typing.get_origin(hint) is tuple and len(args) == 2 and args[1] is Ellipsis \
            and hasattr(args[0], "_fields"):
        # a side file written before a sample had one shape holds its time as text first: the epoch has it
        return tuple(args[0](*row[len(row) - len(args[0]._fields):]) for row in v)
    return _tuples(v)


def from_json(d: Mapping[str, Any]) -> object:
    """A record back from to_json: its fields, lists as tuples (rows as their NamedTuple). An
    unknown kind raises KeyError."""
    cls = KINDS[str(d["kind"])]
    values, hints = d["fields"], typing.get_type_hints(cls)
    return cls(**{f.name: _typed(hints.get(f.name), values[f.name]) for f in dataclasses.fields(cls)
                  if f.name in values})


def first_of(records: Iterable[object], cls: type[R]) -> R | None:
    return next((r for r in records if isinstance(r, cls)), None)


def readable() -> list[type[Any]]:
    """Every kind that says how it is read back (`stored_in`, `loaded`)."""
    return [k for k in KINDS.values() if hasattr(k, "stored_in") and hasattr(k, "loaded")]
