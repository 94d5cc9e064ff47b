"""Side files: what the store could not take when writing it failed (its disk full, read-only,
locked past the timeout, damaged), kept as JSON so that nothing measured is lost: a step's
StepResult (with the step's row as begin_step wrote it) and, when even the run's end could not
be written, how the run ended. `pgknee store import FILE` loads one back (store/writer.py).

Where: beside the store (`STORE.RUN_ID.step-SEQ.json`), unless the store's disk is full (the same
disk); then $PGKNEE_SIDE_DIR if set, then pgknee's state directory (registry.state_dir()/side),
then the system's temporary directory: the first that takes the whole file. Private (0600, as the
store: it holds query texts), written whole (a temporary name, then a rename)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pgknee.base.errors import UserError
from pgknee.model import kinds as records
from pgknee.model.facts import StepFacts
from pgknee.model.results import (
    AgentShare,
    LatencyStats,
    PgbenchSummary,
    ProgressPoint,
    ScriptResult,
    StepMeasurement,
    StepResult,
)
from pgknee.model.samples import (
    ActivitySamples,
    OsSample,
    OsSamples,
    PoolerFacts,
    PoolerSample,
    PoolerSamples,
    ServerOsSample,
    ServerOsSamples,
    SessionRow,
    SnapshotRow,
    WaitSampling,
)
from pgknee.model.server import BY_TABLE, DatabaseStep, from_row

KIND = "pgknee-side-file"
VERSION = 2  # 2: each collector's record with its kind (pgknee.model.kinds)


# ---- a StepResult as JSON and back ---------------------------------------------------------------------
def result_to_json(r: StepResult) -> dict[str, Any]:
    """Every field, nested records as objects, tuples as lists; each collector's record with its
    kind (pgknee.model.kinds), the step's facts as the store keeps them (name and value)."""
    def plain(obj: Any) -> Any:
        if hasattr(obj, "__dataclass_fields__"):
            return {f: plain(getattr(obj, f)) for f in obj.__dataclass_fields__}
        if isinstance(obj, tuple | list):
            return [plain(x) for x in obj]
        return obj

    out: dict[str, Any] = {f: plain(getattr(r, f)) for f in r.__dataclass_fields__ if f not in ("records", "facts")}
    out["records"] = [records.to_json(rec) for rec in r.records]
    out["facts"] = dict(r.facts.items())
    return out


def _latency(d: dict[str, Any] | None) -> LatencyStats | None:
    return LatencyStats(**d) if d is not None else None


def _measurement(d: dict[str, Any] | None) -> StepMeasurement | None:
    if d is None:
        return None
    scripts = tuple(ScriptResult(**{**s, "latency": _latency(s["latency"])}) for s in d["scripts"])
    return StepMeasurement(**{**d, "latency": _latency(d["latency"]), "lag": _latency(d["lag"]), "scripts": scripts})


def result_from_json(d: dict[str, Any]) -> StepResult:
    """The step's result back; a side file of format 1 (before each record carried its kind) too."""
    try:
        kept = tuple(records.from_json(x) for x in d["records"]) if "records" in d else _records_v1(d)
        return StepResult(
            step_id=int(d["step_id"]), status=d["status"], reason=d["reason"], pgbench_exit=d["pgbench_exit"],
            bench_start=d["bench_start"], bench_end=d["bench_end"], summary=PgbenchSummary(**d["summary"]),
            measurement=_measurement(d["measurement"]), tps_db=d["tps_db"],
            progress=tuple(ProgressPoint(**p) for p in d["progress"]), facts=StepFacts.of_items(d["facts"]),
            records=kept, agents=tuple(AgentShare(**a) for a in d.get("agents", [])))  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"the side file's step is not one pgknee wrote ({type(e).__name__}: {e})",
                        "import the file as pgknee wrote it") from None


def _records_v1(d: dict[str, Any]) -> tuple[object, ...]:
    """Format 1 kept each kind of record in a field of its own."""
    def rows(kind: type[Any], xs: list[Any]) -> tuple[Any, ...]:
        return tuple(kind(*x) for x in xs)

    out: list[object] = [DatabaseStep.of_items(d["pg_delta"])] if d.get("pg_delta") else []
    if (act := d.get("activity")) is not None:  # (before format 15 a snapshot had no hidden count)
        snaps = [(*r[:7], None, r[7]) if len(r) == 8 else r for r in act["snapshots"]]
        out.append(ActivitySamples(rows(SnapshotRow, snaps), rows(SessionRow, act["rows"]), tuple(act["errors"]),
                                   int(act.get("ticks_lost", 0)), int(act.get("reconnects", 0)),
                                   float(act.get("interval_s", 0.0)), int(act.get("ticks_late", 0))))
    def timed(kind: type[Any], xs: list[Any]) -> tuple[Any, ...]:  # their time as text first: the epoch has it
        return rows(kind, [x[1:] for x in xs])

    out.append(OsSamples(timed(OsSample, d.get("os_rows", []))))
    out.append(ServerOsSamples(timed(ServerOsSample, d.get("server_os_rows", []))))
    if (pooler := d.get("pooler")) is not None:
        out += [PoolerSamples(timed(PoolerSample, pooler["samples"])), PoolerFacts.of_items(pooler["facts"])]
    if (w := d.get("wait_sampling")) is not None:
        out.append(WaitSampling(int(w["probes"]), bool(w["probes_counted"]), float(w["window_s"]), int(w["backends"]),
                                tuple((str(t), str(e), int(n)) for t, e, n in w["counts"])))
    return (*out, *(from_row(BY_TABLE[x["table"]], x) for x in d.get("server", [])))


# ---- writing and reading side files ----------------------------------------------------------------------
def directories(store: Path | None, *, disk_full: bool) -> Iterator[Path]:
    """Where a side file may go, in order (see the module's docstring); a PostgreSQL store
    (`store` None) has no directory of its own."""
    from pgknee.system.registry import state_dir

    if not disk_full and store is not None:
        yield store.absolute().parent
    if os.environ.get("PGKNEE_SIDE_DIR"):
        yield Path(os.environ["PGKNEE_SIDE_DIR"])
    with contextlib.suppress(OSError):
        side = state_dir() / "side"
        side.mkdir(mode=0o700, exist_ok=True)
        yield side
    yield Path(tempfile.gettempdir())


def write(doc: dict[str, Any], store: Path | None, name: str, *, disk_full: bool,
          replace: Path | None = None) -> tuple[Path | None, list[str]]:
    """Write `doc` to the first directory that takes it whole: (its path, or None, and why each
    directory did not take it). `replace`: a side file to write anew (same name, same place)."""
    data = json.dumps({"kind": KIND, "version": VERSION, **doc}, default=str).encode()
    tried: list[str] = []
    places, name = (([replace.parent], replace.name) if replace is not None
                    else (list(directories(store, disk_full=disk_full)), name))
    for d in places:
        try:
            return _write_whole(d, name, data, replace is not None), tried
        except OSError as e:
            tried.append(f"{d}: {e.strerror or e}")
    return None, tried


def _write_whole(directory: Path, name: str, data: bytes, overwrite: bool) -> Path:
    fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        target = directory / name
        n = 1
        while not overwrite and target.exists():
            n += 1
            target = directory / f"{Path(name).stem}-{n}.json"
        os.replace(tmp, target)
        return target
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read(path: str | Path) -> dict[str, Any]:
    """A side file, checked to be one."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"cannot read the side file {path}: {e.strerror}", "check the path") from None
    except (UnicodeDecodeError, ValueError):
        raise UserError(f"{path} is not a pgknee side file: it is not JSON",
                        "give the file an error line named") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND:
        raise UserError(f"{path} is not a pgknee side file", "give the file an error line named")
    if doc.get("version") not in (1, VERSION):  # 1: read as it was written (result_from_json)
        raise UserError(f"{path} is a side file of another pgknee (version {doc.get('version')})",
                        "import it with the pgknee that wrote it")
    return doc
