"""The verdict corpus: real sweeps kept as the analysis reads them (a RunData, one variant or
more, as JSON in tests/data/verdicts/), each with the verdict a DBA would give and why. The tests
(test_verdicts.py) load them with no server and no store and pin pgknee's answer to the DBA's.

Adding a real run to it (from the store the run went to):

    .venv/bin/python tests/unit/corpus.py add STORE RUN NAME --variant V [--variant V2] \\
        --why "what a DBA reads in it" --command "the pgknee run line" --dba V=levels-off:8-16 ...

writes tests/data/verdicts/NAME.json with the run's figures and the verdicts pgknee gives now,
to be read, checked against the DBA's reading and kept (a change of answer then shows in a diff);
`corpus.py docs` prints the section of docs/reading-the-answer.md that shows them."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import types
import typing
from pathlib import Path
from typing import Any

from pgknee.types import RunData

DIR = Path(__file__).resolve().parent.parent / "data" / "verdicts"
LEFT_OUT = ("commands", "progress", "statement_mix")  # nothing the recommendation reads
ROWS = "__rows__"


def encode(obj: Any) -> Any:
    """A RunData (or any of its parts) as JSON values: records as objects, a list of records as
    columns and rows (a step's OS samples are most of a run), tuples as lists, floats to seven
    significant digits (far below any measurement's noise), epochs to the millisecond. Records the
    store keeps as name/value rows (step facts, pg_stat_database, pooler facts) are those rows."""
    if hasattr(obj, "of_items") and not isinstance(obj, type):
        return {k: encode(v) for k, v in obj.items()}
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: encode(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): encode(v) for k, v in obj.items()}
    if isinstance(obj, list) and obj and all(dataclasses.is_dataclass(x) for x in obj):
        names = [f.name for f in dataclasses.fields(obj[0])]
        return {ROWS: names, "values": [[encode(getattr(x, n)) for n in names] for x in obj]}
    if isinstance(obj, list | tuple):
        return [encode(v) for v in obj]
    if isinstance(obj, float):  # an epoch keeps its milliseconds
        return float(f"{obj:.13g}") if abs(obj) >= 1e6 else float(f"{obj:.7g}")
    return obj


def decode(hint: Any, value: Any) -> Any:
    """The value of a JSON document as the type `hint` says (the inverse of encode)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if value is None or hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        return decode(next(a for a in args if a is not type(None)), value)
    if hasattr(hint, "of_items"):  # kept as its name/value rows
        return hint.of_items(value)
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return hint(**{k: decode(hints[k], v) for k, v in value.items() if k in hints})
    if origin in (dict, list, tuple):
        return _decode_collection(origin, args, value)
    if hint in (int, float, str, bool):
        return hint(value)
    return value


def _decode_collection(origin: Any, args: tuple[Any, ...], value: Any) -> Any:
    if origin is dict:
        return {decode(args[0], k): decode(args[1], v) for k, v in value.items()}
    if origin is list and isinstance(value, dict):
        return [decode(args[0], dict(zip(value[ROWS], row, strict=True))) for row in value["values"]]
    if origin is list:
        return [decode(args[0], v) for v in value]
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(decode(args[0], v) for v in value)
    return tuple(decode(a, v) for a, v in zip(args, value, strict=True))


def run_data(doc: dict[str, Any]) -> RunData:
    hints = typing.get_type_hints(RunData)
    fields = {k: decode(hints[k], v) for k, v in doc.items() if k in hints}
    return RunData(**{"commands": [], **fields})


def load(name: str) -> tuple[dict[str, Any], RunData]:
    """A corpus entry: its description (name, command, source, why, expected verdicts) and its run."""
    doc = json.loads((DIR / f"{name}.json").read_text())
    return doc, run_data(doc["run"])


def names() -> list[str]:
    return sorted(p.stem for p in DIR.glob("*.json"))


def _only(data: RunData, variants: list[str]) -> RunData:
    """The run's steps of these variants, and the rows of those steps only."""
    steps = [s for s in data.steps if s.variant in variants]
    ids = {s.step_id for s in steps}
    out = {f.name: getattr(data, f.name) for f in dataclasses.fields(data)}
    for k, v in out.items():
        if isinstance(v, dict) and all(isinstance(x, int) for x in v):
            out[k] = {i: x for i, x in v.items() if i in ids}
    out["steps"] = steps
    return RunData(**out)


def add(store: str, run: str, name: str, variants: list[str], why: str, command: str,
        dba: dict[str, dict[str, Any]]) -> Path:
    from pgknee.analyze.recommend import recommend
    from pgknee.analyze.run import build
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    data = _only(load_run(Store(store, create=False), run), variants)
    view = build(data)
    expect = {}
    for v in variants:
        r = recommend(view, v)
        expect[v] = {"verdict": r.verdict, "connections": r.connections,
                     "counts_interval": list(r.counts_interval) if r.counts_interval else None,
                     "headline": r.headline()}
    run_doc = {k: v for k, v in encode(data).items() if k not in LEFT_OUT}
    doc = {"name": name, "source": f"run {data.run.run_id} ({data.run.created_at[:10]}, this project's 2-CPU machine)",
           "command": command, "why": why, "dba": dba, "expect": expect, "run": run_doc}
    DIR.mkdir(parents=True, exist_ok=True)
    path = DIR / f"{name}.json"
    path.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path


def markdown() -> str:
    """The real sweeps' section of docs/reading-the-answer.md: each entry's command, what a DBA reads
    in it, and pgknee's headline for each variant (the tests check that the page has each)."""
    out = []
    for name in names():
        doc, _ = load(name)
        out += [f"### {name}", "", f"`{doc['command']}` — {doc['source']}.", ""]
        for e in doc["expect"].values():
            out += [f"> {e['headline']}", ""]
        dba = "; ".join(f"{v}: {d['verdict'].replace('|', ' or ')}"
                        + (" {}..{}".format(*d["counts"]) if d.get("counts") else "") for v, d in doc["dba"].items())
        out += [f"*A DBA's reading*: {doc['why']} ({dba})", ""]
    return "\n".join(out)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add", help="add a stored run's variants to the corpus")
    a.add_argument("store")
    a.add_argument("run")
    a.add_argument("name")
    a.add_argument("--variant", action="append", required=True)
    a.add_argument("--why", required=True)
    a.add_argument("--command", required=True)
    a.add_argument("--dba", action="append", required=True, metavar="VARIANT=VERDICT[:LO-HI]",
                   help="the verdict a DBA gives each variant, and the counts they would accept")
    sub.add_parser("docs", help="print the real sweeps' section of docs/reading-the-answer.md")
    args = p.parse_args(argv)
    if args.cmd == "docs":
        print(markdown())
        return 0
    dba: dict[str, dict[str, Any]] = {}
    for item in args.dba:
        variant, _, rest = item.rpartition("=")  # a variant may hold "=", a verdict never
        verdict, _, span = rest.partition(":")
        dba[variant] = {"verdict": verdict, "counts": [int(x) for x in span.split("-")] if span else None}
    path = add(args.store, args.run, args.name, args.variant, args.why, args.command, dba)
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
