"""The verdict corpus: real sweeps kept as the analysis reads them (a RunData, one variant or
more, as JSON in tests/data/verdicts/), each with the counts a DBA accepts, judged from the curve
by the rule of docs/reading-the-answer.md ("How the real sweeps are judged") and never from
pgknee's answer: `judge` below reads only the stored steps and OS samples, with none of pgknee's
analysis. The tests (test_verdicts.py) load them with no server and no store and assert that
pgknee's answer lies in the judged range.

Adding a real run to it (from the store the run went to):

    .venv/bin/python tests/unit/corpus.py add STORE RUN NAME --variant V [--variant V2] \\
        --why "what a DBA reads in it" --command "the pgknee run line"

writes tests/data/verdicts/NAME.json with the run's figures and the judged range of each variant;
`corpus.py judge` writes every entry's range again (after a change of the rule, never of pgknee);
`corpus.py docs` prints the section of docs/reading-the-answer.md that shows them, with pgknee's
headline of today beside each: a snapshot, checked to match the code, not the evidence."""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import math
import statistics
import sys
import types
import typing
from pathlib import Path
from typing import Any

import builders

from pgknee.model.results import PoolerRecord, RunData
from pgknee.model.samples import OsSample, ServerOsSample, WaitSampling
from pgknee.model.server import DatabaseStep, ServerRecord

DIR = Path(__file__).resolve().parent.parent / "data" / "verdicts"
LEFT_OUT = ("commands", "statement_mix", "records")  # nothing the recommendation reads; records: by MEASURED
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
    if isinstance(obj, list) and obj and all(_record(x) for x in obj):
        names = _names(obj[0])
        return {ROWS: names, "values": [[encode(getattr(x, n)) for n in names] for x in obj]}
    if isinstance(obj, list | tuple):
        return [encode(v) for v in obj]
    if isinstance(obj, float):  # an epoch keeps its milliseconds
        return float(f"{obj:.13g}") if abs(obj) >= 1e6 else float(f"{obj:.7g}")
    return obj


def _record(x: Any) -> bool:
    """A record: a dataclass, or a sample (a NamedTuple, pgknee.model.samples)."""
    return dataclasses.is_dataclass(x) and not isinstance(x, type) or hasattr(x, "_fields")


def _names(x: Any) -> list[str]:
    return list(x._fields) if hasattr(x, "_fields") else [f.name for f in dataclasses.fields(x)]


def decode(hint: Any, value: Any) -> Any:
    """The value of a JSON document as the type `hint` says (the inverse of encode)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if value is None or hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        return decode(_member(args, value), value)
    if hasattr(hint, "of_items"):  # kept as its name/value rows
        return hint.of_items(value)
    if dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return hint(**{k: decode(hints[k], v) for k, v in value.items() if k in hints})
    if hasattr(hint, "_fields"):  # a sample; one recorded before samples had one shape has no phase: the bench
        hints = typing.get_type_hints(hint)
        return hint(**{"phase": "bench", **{k: decode(hints[k], v) for k, v in value.items() if k in hints}})
    if origin in (dict, list, tuple):
        return _decode_collection(origin, args, value)
    if hint in (int, float, str, bool):
        return hint(value)
    return value


def _member(args: tuple[Any, ...], value: Any) -> Any:
    """The member of a union a JSON value is: the record whose fields are the object's keys (the
    server's records are of several kinds in one list), else the first that is not None."""
    kinds = [a for a in args if a is not type(None)]
    if isinstance(value, dict):
        for a in kinds:
            if dataclasses.is_dataclass(a) and {f.name for f in dataclasses.fields(a)} == set(value):
                return a
    return kinds[0]


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


# what each step measured, kept in the corpus by these names (builders.KINDS) and read back as the
# store's records
MEASURED: dict[str, Any] = {
    "pgdb": dict[int, DatabaseStep], "os": dict[int, list[OsSample]], "server_os": dict[int, list[ServerOsSample]],
    "pooler": dict[int, PoolerRecord], "server": dict[int, tuple[ServerRecord, ...]],
    "wait_sampling": dict[int, WaitSampling]}


def run_data(doc: dict[str, Any]) -> RunData:
    hints = {**typing.get_type_hints(RunData), **MEASURED}
    fields = {k: decode(hints[k], v) for k, v in doc.items() if k in hints and k != "records"}
    return builders.renew(RunData(**{"commands": [], **{k: v for k, v in fields.items()
                                                                 if k not in MEASURED}}),
                          **{k: v for k, v in fields.items() if k in MEASURED})


def _measured(data: RunData) -> dict[str, Any]:
    """The steps' records by the corpus's names (MEASURED)."""
    ids = [s.step_id for s in data.steps]
    return {"pgdb": {i: data.database(i) for i in ids}, "os": {i: list(data.client_os(i)) for i in ids},
            "server_os": {i: list(rows) for i in ids if (rows := data.server_os(i))},
            "pooler": {i: p for i in ids if (p := data.pooler(i)) is not None},
            "server": {i: rows for i in ids if (rows := data.server(i))},
            "wait_sampling": {i: w for i in ids if (w := data.of(i, WaitSampling)) is not None}}


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


def _rows(doc: dict[str, Any], key: str) -> list[dict[str, Any]]:
    table = doc["run"].get(key) or {ROWS: [], "values": []}
    return [dict(zip(table[ROWS], v, strict=True)) for v in table["values"]]


def judge(doc: dict[str, Any], variant: str) -> dict[str, Any]:
    """The counts a DBA accepts for one variant, by the rule of docs/reading-the-answer.md, from
    the stored steps alone: each count's median TPS (a managed pool caps the count at its size and
    reserve); still growing when the last doubling (from the best count at or below half the
    largest) gains more than 5.3%: no count, unless the CPU was saturated (mean busy 80% or more at
    some count), then the count for now, read against the best; else the smallest count reaching
    95% of the best median. The range: from the smallest count reaching (95% - d) of the best to
    the smallest reaching (95% + d), at most one measured count above the rule's, d the noise a
    DBA sees (5% with one repetition; half the median spread (max - min) / median of the counts'
    repetitions, at least 2.5%, with several)."""
    by: dict[int, list[float]] = {}
    reps: dict[int, list[float]] = {}  # the repetitions of each client count, for the noise a DBA sees
    for r in _rows(doc, "steps") if isinstance(doc["run"]["steps"], dict) else doc["run"]["steps"]:
        if r["variant"] == variant and r["status"] == "completed" and r["tps"]:
            n = r["clients"]
            reps.setdefault(n, []).append(r["tps"])
            if r.get("pooler_kind") == "managed" and r.get("pool_size"):
                n = min(n, r["pool_size"] + (r.get("pool_reserve") or 0))
            by.setdefault(n, []).append(r["tps"])
    counts = sorted(by)
    med = [statistics.median(by[n]) for n in counts]
    best = max(med)
    top = len(counts) - 1
    lower = [i for i in range(top) if counts[i] <= counts[top] / 2] or list(range(top))
    ref = max(lower, key=lambda i: med[i])
    growth = (med[top] / med[ref]) ** (1 / math.log2(counts[top] / counts[ref])) - 1
    spreads = [(max(x) - min(x)) / statistics.median(x) for x in reps.values() if len(x) > 1]
    d = max(statistics.median(spreads) / 2, 0.025) if spreads else 0.05
    busy = _cpu_saturated(doc, variant)
    if growth > 0.0526 and not busy:
        return {"counts": None, "how": f"still grows {100 * growth:+.1f}% a doubling and no CPU was saturated"}

    def first(f: float) -> int:
        return next(c for c, m in zip(counts, med, strict=True) if m >= min(f, 1.0) * best)

    rule = first(0.95)
    above = counts[min(counts.index(rule) + 1, top)]
    lo, hi = first(0.95 - d), max(min(first(0.95 + d), above), rule)
    why = (f"still grows {100 * growth:+.1f}% a doubling with the CPU saturated: for now, " if growth > 0.0526
           else f"{100 * growth:+.1f}% a doubling at the top: ")
    return {"counts": [lo, hi], "how": f"{why}95% of the best ({best:,.0f} TPS) is first reached at {rule}; the "
                                       f"noise a DBA sees, ±{100 * d:.1f}%, takes {lo}..{hi}"}


def _cpu_saturated(doc: dict[str, Any], variant: str) -> bool:
    """Some count's OS samples (this machine's, or the server's own) busy 80% or more on average."""
    steps = {r["step_id"] for r in _rows(doc, "steps") if r["variant"] == variant}
    for key in ("os", "server_os"):
        for step_id, samples in (doc["run"].get(key) or {}).items():
            if int(step_id) in steps and samples and isinstance(samples, dict):
                rows = [dict(zip(samples[ROWS], v, strict=True)) for v in samples["values"]]
                if rows and statistics.fmean(100.0 - x["cpu_idle"] for x in rows) >= 80.0:
                    return True
    return False


def add(store: str, run: str, name: str, variants: list[str], why: str, command: str) -> Path:
    from pgknee.store.db import Store
    from pgknee.store.load import load_run

    data = _only(load_run(Store(store, create=False), run), variants)
    run_doc = {k: v for k, v in {**encode(data), **encode(_measured(data))}.items() if k not in LEFT_OUT}
    doc = {"name": name, "source": f"run {data.run.run_id} ({data.run.created_at[:10]}, this project's 2-CPU machine)",
           "command": command, "why": why, "variants": variants, "run": run_doc}
    doc["dba"] = {v: judge(doc, v) for v in variants}
    DIR.mkdir(parents=True, exist_ok=True)
    path = DIR / f"{name}.json"
    path.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
    return path


def markdown() -> str:
    """The real sweeps' section of docs/reading-the-answer.md: each entry's command, what a DBA reads
    in it and the counts the rule accepts (the evidence), then pgknee's headline of today for each
    variant (a snapshot: the tests check it is what pgknee prints, and that its count is in range)."""
    out = []
    for name in names():
        doc, _ = load(name)
        out += [f"### {name}", "", f"`{doc['command']}` — {doc['source']}. {doc['why']}", ""]
        for v in doc["variants"]:
            dba = doc["dba"][v]
            accepted = "no count" if dba["counts"] is None else "{}..{}".format(*dba["counts"])
            out += [f"*The rule*, {v}: {accepted} ({dba['how']}).", "",
                    f"> {answer(name, v).headline()}", ""]
    return "\n".join(out)


@functools.cache
def answer(name: str, variant: str) -> Any:
    """pgknee's recommendation for one variant of a real sweep (made once: the tests read it twice)."""
    from pgknee.analyze.recommend import recommend
    from pgknee.analyze.run import build

    return recommend(build(load(name)[1]), variant)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("add", help="add a stored run's variants to the corpus, judged")
    a.add_argument("store")
    a.add_argument("run")
    a.add_argument("name")
    a.add_argument("--variant", action="append", required=True)
    a.add_argument("--why", required=True)
    a.add_argument("--command", required=True)
    sub.add_parser("judge", help="judge every entry again by the rule (after a change of the rule)")
    sub.add_parser("docs", help="print the real sweeps' section of docs/reading-the-answer.md")
    args = p.parse_args(argv)
    if args.cmd == "docs":
        print(markdown())
        return 0
    if args.cmd == "judge":
        for name in names():
            path = DIR / f"{name}.json"
            doc = json.loads(path.read_text())
            doc["dba"] = {v: judge(doc, v) for v in doc["variants"]}
            path.write_text(json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n")
        return 0
    path = add(args.store, args.run, args.name, args.variant, args.why, args.command)
    print(f"wrote {path} ({path.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
