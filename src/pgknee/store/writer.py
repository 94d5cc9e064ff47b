"""The one place that writes run data: a run's row, its environment and commands, and each
step from its frozen StepResult. The statements are SQL files (store/sql); a step is written in
one transaction, so a step is in the store whole or not at all.

When the store cannot take a step (its disk full, read-only, locked past the timeout, damaged),
the StepResult goes to a side file (store/sidefile.py) and the error line says where;
`pgknee store import FILE` loads it back (import_side_file). A run reopened by --extend or
--resume is claimed in a write transaction: a second pgknee is refused while the first is alive.
A failed --extend puts the run back as it was (end_run)."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from pgknee.base import errors
from pgknee.base.clock import now_iso
from pgknee.base.errors import PgkneeError, StoreBusy, StoreError, StoreFull, UserError, store_error
from pgknee.model import keys
from pgknee.model.kinds import StoredRow
from pgknee.model.results import ProgressPoint, Reopening, StepResult
from pgknee.model.samples import ActivitySamples, SessionRow, SnapshotRow
from pgknee.store import sidefile
from pgknee.store.claims import claim_refusal, owner, owner_alive
from pgknee.store.db import Store
from pgknee.store.migrate import split_sql
from pgknee.store.sql import load
from pgknee.store.steprows import script_rows, step_values
from pgknee.system.registry import is_alive, start_time

RESERVE_BYTES = 256 << 10  # room kept on the store's disk for how a run ends


@dataclass(frozen=True)
class _Before:
    """A run as it was when --extend reopened it, and what the extension asked for."""

    status: str
    reason: str | None
    finished_at: str | None
    plan_json: str
    steps_planned: int
    owner: str | None
    heartbeat_at: float | None
    env: dict[str, str]
    last_command: int
    last_step: int
    merged_plan: dict[str, Any]
    more_steps: int


# a step row from before the simulated network (an older side file, a caller that sets none): direct
NETWORK_DEFAULTS = {"rtt_ms": 0.0, "rtt_jitter_ms": 0.0, "pool_processes": 1}


class RunWriter:
    def __init__(self, store: Store, run_id: str) -> None:
        self.store = store
        self.db = store.db
        self.run_id = run_id
        self.recorded = False  # the run's row exists (created, or reopened for --extend)
        self._before: _Before | None = None  # an --extend's run as it was
        self._begun: dict[int, dict[str, Any]] = {}  # the steps' rows as begun (for side files)
        self._side_files: list[Path] = []
        self._threads_before = errors.thread_failure_count()
        self._reserve: Path | None = None

    @contextlib.contextmanager
    def _writing(self, doing: str) -> Iterator[None]:
        """An SQLite error while writing, as the store's one line."""
        try:
            yield
        except self.store.errors as e:
            raise store_error(e, self.store.label, doing, self.store.timeout_s) from None

    def _one(self, name: str, params: Mapping[str, Any]) -> Any:
        with self._writing(f"writing: {name.replace('_', ' ')}"):
            return self.db.execute(load(name), {"run_id": self.run_id, **params})

    def _many(self, name: str, rows: Iterable[Mapping[str, Any] | Sequence[Any]]) -> None:
        self.db.executemany(load(name), rows)

    def _each(self, name: str, params: Mapping[str, Any]) -> None:
        for stmt in split_sql(load(name)):
            self.db.execute(stmt, params)

    # ---- the run ----------------------------------------------------------------------------
    def create_run(self, *, workload: str, target_kind: str, target_label: str, plan: dict[str, Any],
                   steps_planned: int) -> None:
        self._one("create_run", {"created_at": now_iso(), "workload": workload, "target_kind": target_kind,
                                 "target_label": target_label, "plan_json": json.dumps(plan, sort_keys=True),
                                 "steps_planned": steps_planned, "owner": owner(), "heartbeat_at": time.time()})
        self.recorded = True
        self._keep_room()

    def replan(self, plan: dict[str, Any], steps_planned: int) -> None:
        """The plan and planned steps of a run whose client counts are chosen as it goes
        (--until-answer): what it has run and chose to run next, as a plan of those counts."""
        self._one("replan_run", {"plan_json": json.dumps(plan, sort_keys=True), "steps_planned": steps_planned})

    def extend_run(self, reopening: Reopening, *, more_steps: int) -> int:
        """Reopen the stored run for more steps (pgknee run --extend; --resume runs the steps it
        did not complete, more_steps 0); returns its last seq. The run is claimed in one write
        transaction: refused while another pgknee that is alive writes it, or if it changed since
        it was read (another pgknee extended or resumed it meanwhile) (StoreBusy)."""
        plan = reopening.plan
        with self._writing("reopening the run"), self.store.transaction():
            row = self.db.execute(load("run_state"), {"run_id": self.run_id}).fetchone()
            if row is None:
                raise StoreError(f"run {self.run_id} is no longer in {self.store.label}", "list the runs with "
                                 "'pgknee runs'")
            refusal = claim_refusal(self.run_id, row[0], row[5], resume=more_steps == 0,
                                    heartbeat_at=row[6]) or self._changed(reopening, row[3])
            if refusal is not None:
                raise refusal
            if more_steps:
                status, reason, finished_at, plan_json, planned, held_by, beat = row
                self._before = _Before(status, reason, finished_at, plan_json, planned, held_by, beat,
                                       env=self.store.environment(self.run_id),
                                       last_command=self._last("last_command"),
                                       last_step=self._last("last_step"), merged_plan=plan,
                                       more_steps=more_steps)
            self.db.execute(load("extend_run"), {"run_id": self.run_id, "owner": owner(), "more_steps": more_steps,
                                                 "plan_json": json.dumps(plan, sort_keys=True)})
            last = self.db.execute(load("last_seq"), {"run_id": self.run_id}).fetchone()
            self._beat()
        self.recorded = True
        self._keep_room()
        return int(last[0])

    def _changed(self, reopening: Reopening, plan_json: str | None) -> StoreBusy | None:
        """The run is no longer as pgknee read it: its plan or its completed steps changed."""
        completed = self.db.execute(load("completed_steps"), {"run_id": self.run_id}).fetchone()[0]
        if json.loads(plan_json or "{}") == reopening.read_plan and completed == reopening.read_completed:
            return None
        return StoreBusy(f"run {self.run_id} changed since pgknee read it: another pgknee extended or resumed it "
                         "meanwhile", "run the command again: it reads the run as it is now")

    def _keep_room(self) -> None:
        """Room on the store's disk for how the run ends: a file of RESERVE_BYTES beside the store
        (.NAME.pgknee-reserve.PID.START), removed just before the end is written (end_run), so
        that a disk the run filled still takes it. Those of pgknee processes that are gone are
        removed here; without room for it, the run goes without."""
        if self.store.path is None:
            return  # a PostgreSQL store: its server keeps its own room
        path = self.store.path.absolute()
        for old in path.parent.glob(f".{path.name}.pgknee-reserve.*"):
            _, pid, start = old.name.rsplit(".", 2)
            if pid.isdigit() and not is_alive(int(pid), start):
                with contextlib.suppress(OSError):  # another user's, in a shared directory: theirs to remove
                    old.unlink()
        me = os.getpid()
        reserve = path.with_name(f".{path.name}.pgknee-reserve.{me}.{start_time(me)}")
        try:
            fd = os.open(reserve, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError:
            return
        self._reserve = reserve
        weakref.finalize(self, reserve.unlink, missing_ok=True)
        try:
            os.write(fd, bytes(RESERVE_BYTES))
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)

    def _free_room(self) -> None:
        if self._reserve is not None:
            self._reserve.unlink(missing_ok=True)
            self._reserve = None

    def _last(self, name: str) -> int:
        return int(self.db.execute(load(name), {"run_id": self.run_id}).fetchone()[0])

    def finish_run(self, status: str, reason: str | None) -> None:
        """How the run ended; steps it left running are marked too (interrupted, or failed)."""
        with self._writing("writing how the run ended"), self.store.transaction():
            self._finish(status, reason, now_iso())

    def _finish(self, status: str, reason: str | None, at: str) -> None:
        steps = "interrupted" if status == "interrupted" else "failed"
        self.db.execute(load("end_unfinished_steps"), {"run_id": self.run_id, "reason": reason, "status": steps})
        self.db.execute(load("finish_run"), {"run_id": self.run_id, "status": status, "reason": reason,
                                             "finished_at": at})

    def end_run(self, status: str, reason: str | None) -> None:
        """How the run ended, written by the orchestrator's finally (the one place a run's end is
        written). The exception in flight there (sys.exc_info), if any, is what the run ends with:
        its reason when none was given, and the error the user sees, should writing the end fail
        too (the end then goes to a side file). A thread's exception recorded during a run that
        would have completed fails it, with that reason. A failed --extend puts the run back as
        it was (_undo_extension)."""
        pending = sys.exc_info()[1]
        self._free_room()
        if reason is None and pending is not None and status != "completed":
            reason = _describe(pending)
        failure = None
        if status == "completed" and pending is None:
            failure = self._thread_failure()
            if failure is not None:
                status, reason = "failed", failure.message
        undo = self._before is not None and status != "completed"
        try:
            if undo:
                self._undo_extension(status, reason)
            else:
                self.finish_run(status, reason)
        except StoreError as e:
            b = self._before
            end = (b.status, b.reason, b.finished_at) if undo and b is not None else (status, reason, now_iso())
            kept = self._end_aside(*end, disk_full=isinstance(e, StoreFull))
            if pending is None:
                raise type(e)(f"{e.message}; {kept}", e.hint) from None
            if isinstance(pending, PgkneeError):  # the error the user sees says where the end went too
                pending.message += f"; the store could not take how the run ended either ({e.message}): {kept}"
        if failure is not None:
            raise failure

    def _thread_failure(self) -> PgkneeError | None:
        taken = errors.take_thread_failures(self._threads_before)
        if not taken:
            return None
        err = errors.thread_error(*taken[0])
        if len(taken) > 1:
            err.message += f" (and {len(taken) - 1} more thread error(s))"
        return err

    def set_environment(self, items: Mapping[str, object]) -> None:
        with self._writing("writing the run's environment"):
            self._many("set_environment", [{"run_id": self.run_id, "key": k, "value": str(v)}
                                           for k, v in items.items()])

    def add_command(self, step_id: int | None, purpose: str, argv: Sequence[str]) -> None:
        self._one("add_command", {"step_id": step_id, "purpose": purpose, "argv_json": json.dumps(list(argv))})

    # ---- a failed --extend ----------------------------------------------------------------------
    def _undo_extension(self, status: str, reason: str | None) -> None:
        """The run as it was before --extend reopened it: status, reason, finish time, plan and
        planned steps, environment and commands; the extension's steps that did not complete are
        removed. Steps it completed are kept, their client counts added to the plan (and their
        planned steps to the run's), and the environment it wrote stays. The attempt is noted in
        the environment (extended.TIME), with why it failed."""
        b = self._before
        assert b is not None
        with self._writing("putting the run back as it was before --extend"), self.store.transaction():
            steps = self.db.execute(load("extension_steps"), {"run_id": self.run_id, "after": b.last_step}).fetchall()
            for step_id, _, st in steps:
                if st != "completed":
                    self._each("clear_step", {"step_id": step_id})
                    self._each("clear_step_samples", {"step_id": step_id, "samples_from": None})
                    self._each("remove_step", {"step_id": step_id})
            kept = [c for _, c, st in steps if st == "completed"]
            old = json.loads(b.plan_json)
            new_counts = list(b.merged_plan.get("clients", []))[len(old.get("clients", [])):]
            kept_counts = [c for c in new_counts if c in kept]
            notes = self._attempt_notes(new_counts, kept_counts, status, reason, b.env)
            values = {"status": b.status, "reason": b.reason, "finished_at": b.finished_at, "plan_json": b.plan_json,
                      "steps_planned": b.steps_planned, "owner": b.owner, "heartbeat_at": b.heartbeat_at}
            if kept:
                per_count = b.more_steps // max(1, len(new_counts))
                values.update(plan_json=json.dumps({**old, "clients": [*old.get("clients", []), *kept_counts]},
                                                   sort_keys=True),
                              steps_planned=b.steps_planned + per_count * len(kept_counts), owner=owner(),
                              heartbeat_at=time.time())
            else:
                self.db.execute(load("clear_environment"), {"run_id": self.run_id})
                self._many("set_environment", [{"run_id": self.run_id, "key": k, "value": v} for k, v in b.env.items()])
                self.db.execute(load("remove_commands"), {"run_id": self.run_id, "after": b.last_command})
            self.set_environment(notes)
            self.db.execute(load("restore_run"), {"run_id": self.run_id, **values})

    def _attempt_notes(self, counts: list[int], kept: list[int], status: str, reason: str | None,
                       before: Mapping[str, str]) -> dict[str, str]:
        """The extension's note (extended.TIME, written by its session), with how it ended."""
        what = f"{status}: {reason or 'no reason given'}; " + (
            f"kept the completed steps of clients {','.join(map(str, kept))}" if kept else "nothing kept")
        now = self.store.environment(self.run_id)
        notes = {k: v for k, v in now.items() if k.startswith(keys.EXTENDED) and k not in before}
        if not notes:
            stamp = now_iso().replace("-", "").replace(":", "").replace(" ", "-").split(".")[0]
            notes = {keys.extended_at(stamp): f"clients {','.join(map(str, counts))} to be added"}
        return {k: f"{v}: {what}" for k, v in notes.items()}

    # ---- steps --------------------------------------------------------------------------------
    def begin_step(self, step: Mapping[str, Any]) -> int:
        """A step's row, 'running' (the columns of begin_step.sql but run_id and started_at)."""
        row = {"started_at": now_iso(), **NETWORK_DEFAULTS, **step}
        step_id = int(self._one("begin_step", row).fetchall()[0][0])
        with self._writing("writing the run's heartbeat"):
            self._beat()
        self._begun[step_id] = dict(row)
        return step_id

    def fail_step(self, step_id: int, reason: str) -> None:
        self._one("fail_step", {"step_id": step_id, "reason": reason})

    def write_step(self, r: StepResult) -> None:
        """The step's results in one transaction; if the store cannot take them, in a side file
        (and the error says where)."""
        try:
            with self.store.transaction():
                self._step_rows(r)
        except self.store.errors as e:
            raise self._step_aside(r, e) from None

    def _beat(self) -> None:
        """This pgknee is alive and writes the run (claims.py reads it for a pgknee on another host)."""
        self.db.execute(load("beat"), {"run_id": self.run_id, "heartbeat_at": time.time()})

    def _step_rows(self, r: StepResult) -> None:
        self._beat()
        self.db.execute(load("end_step"), {"run_id": self.run_id, **step_values(r)})
        if r.measurement is not None:
            self._many("insert_step_scripts", script_rows(r.step_id, r.measurement))
            self._many("insert_step_failures", [{"step_id": r.step_id, "kind": k, "count": n}
                                                for k, n in r.measurement.failures.items()])
        first: dict[float, ProgressPoint] = {}
        for p in r.progress:  # pgbench repeats a second's line now and then: the first one counts
            first.setdefault(p.t_s, p)
        self._many("insert_progress", [{"step_id": r.step_id, **asdict(p)} for p in first.values()])
        self._many("insert_step_facts", [{"step_id": r.step_id, "name": k, "value": v} for k, v in r.facts.items()])
        self._many("insert_step_agents", [{"run_id": self.run_id, "step_id": r.step_id, **asdict(a)} for a in r.agents])
        for record in r.records:  # each collector's, into its own tables (pgknee.model.kinds)
            for statement, rows in record.stored():
                self._many(statement, (self._keyed(r.step_id, row) for row in rows))

    def write_activity(self, step_id: int, snapshots: Iterable[SnapshotRow], rows: Iterable[SessionRow]) -> None:
        """pg_stat_activity samples handed over while a step runs (collect.activity's sink)."""
        with self.store.transaction():
            self._beat()
            self._many("insert_snapshots", self._rows(step_id, snapshots))
            self._many("insert_activity", self._rows(step_id, rows))

    def write_statement_mix(self, step_id: int | None, rows: Iterable[Sequence[Any]]) -> None:
        """A captured workload's statements (step_id None: as captured) or what a step replayed of
        each (run/replay.py, workloads/captured/mix.py)."""
        with self.store.transaction():
            if step_id is None:
                self._many("insert_workload_statements", ((self.run_id, *r) for r in rows))
            else:
                self._many("insert_step_statements", self._rows(step_id, rows))

    def _rows(self, step_id: int, rows: Iterable[Sequence[Any]]) -> Iterable[tuple[Any, ...]]:
        return ((self.run_id, step_id, *row) for row in rows)

    def _keyed(self, step_id: int, row: StoredRow) -> StoredRow:
        """A record's row with the run's and the step's ids: first when positional, by name when named."""
        if isinstance(row, Mapping):
            return {"run_id": self.run_id, "step_id": step_id, **row}
        return (self.run_id, step_id, *row)

    # ---- side files -----------------------------------------------------------------------------
    def _side_origin(self) -> tuple[str, str]:
        """What a side file says of the store (its file's absolute path, or a PostgreSQL store's
        label) and the name side files begin with (the store file's, or 'pgknee-store')."""
        path = self.store.path
        return (str(path.absolute()), path.name) if path is not None else (self.store.label, "pgknee-store")

    def _side_doc(self, reason: str) -> dict[str, Any]:
        where, _ = self._side_origin()
        return {"store": where, "run_id": self.run_id, "owner": owner(),
                "written_at": now_iso(), "reason": reason}

    def _side_name(self) -> str:
        _, name = self._side_origin()
        return name

    def _step_aside(self, r: StepResult, e: Exception) -> StoreError:
        step = self._begun.get(r.step_id, {})
        seq = step.get("seq", r.step_id)
        err = store_error(e, self.store.label, f"writing step {seq}", self.store.timeout_s)
        doc = {**self._side_doc(err.message), "step": step, "result": sidefile.result_to_json(r)}
        path, tried = sidefile.write(doc, self.store.path, f"{self._side_name()}.{self.run_id}.step-{seq}.json",
                                     disk_full=isinstance(err, StoreFull))
        if path is None:
            return type(err)(f"{err.message}; step {seq}'s results could not be kept anywhere else either "
                             f"({'; '.join(tried)})", err.hint)
        self._side_files.append(path)
        return type(err)(f"{err.message}; step {seq}'s results are kept in {path}",
                         f"{err.hint}; then load them with 'pgknee store import {path}'")

    def _end_aside(self, status: str, reason: str | None, finished_at: str | None, *, disk_full: bool) -> str:
        """The run's end, which the store would not take, in a side file: this run's last one, or
        a new one (for a failed --extend, the run's end as it was before). Returns what the error
        line says of it."""
        end = {"status": status, "reason": reason, "finished_at": finished_at}
        last = self._side_files[-1] if self._side_files else None
        if last is not None:
            with contextlib.suppress(UserError):
                doc = {**sidefile.read(last), "run_end": end}
                doc.pop("kind"), doc.pop("version")
                path, _ = sidefile.write(doc, self.store.path, last.name, disk_full=True, replace=last)
                if path is not None:
                    return f"how the run ended is kept in {path} too"
        doc = {**self._side_doc(reason or status), "run_end": end}
        path, _ = sidefile.write(doc, self.store.path, f"{self._side_name()}.{self.run_id}.end.json",
                                 disk_full=disk_full)
        if path is None:
            return f"the run is left marked 'running' (pgknee run --resume {self.run_id} takes it over)"
        self._side_files.append(path)
        return f"how the run ended is kept in {path} ('pgknee store import {path}' marks it)"


    # ---- a side file, loaded back (import_side_file) --------------------------------------------
    def import_step(self, step: Mapping[str, Any], result: StepResult) -> str:
        row = self.db.execute(load("step_of_seq"), {"run_id": self.run_id, "seq": step["seq"]}).fetchone()
        if row is None:
            step_id = int(self.db.execute(load("begin_step"), {"run_id": self.run_id, **step}).fetchall()[0][0])
        else:
            step_id, status, variant, clients, rep = row
            if status == "completed":
                raise UserError(f"step {step['seq']} of run {self.run_id} is already in {self.store.label}: there is "
                                "nothing to import", "the side file may go")
            if (variant, clients, rep) != (step["variant"], step["clients"], step["rep"]):
                raise UserError(f"step {step['seq']} of run {self.run_id} in {self.store.label} is another step than "
                                "the side file's", "give --store the store the side file came from")
            self._each("clear_step", {"step_id": step_id})
            act = result.of(ActivitySamples)
            first = min((row[0] for row in act.snapshots), default=None) if act is not None else None
            if first is not None:  # the side file's samples replace those from its first on
                self._each("clear_step_samples", {"step_id": step_id, "samples_from": first})
        self._step_rows(replace(result, step_id=step_id))
        return f"step {step['seq']} (c{step['clients']} rep {step['rep']}) of run {self.run_id} stored in " \
               f"{self.store.label}"

    def import_end(self, end: Mapping[str, Any], writer: str | None) -> str:
        status, run_owner = self.db.execute(load("run_owner"), {"run_id": self.run_id}).fetchone()
        if status != "running" or run_owner != writer or owner_alive(run_owner) is not None:
            return f"run {self.run_id} is marked '{status}' already: the side file's end of it is left out"
        self._finish(end["status"], end["reason"], end["finished_at"])
        return f"run {self.run_id} marked '{end['status']}': {end['reason']}"


def _describe(e: BaseException) -> str:
    if isinstance(e, KeyboardInterrupt):
        return "interrupted"
    mapped = errors.from_exception(e)
    return mapped.message if mapped is not None else f"internal error: {type(e).__name__}: {e}"


# ---- a side file, loaded back ------------------------------------------------------------------------
def import_side_file(store: Store, doc: Mapping[str, Any]) -> list[str]:
    """Load a side file into `store` in one transaction: its step (into the step's row, made anew
    when the store lacks it), and how the run ended when the run is still marked 'running' by
    the pgknee that wrote the file, which is gone. Returns what was done, a line each."""
    run_id = str(doc.get("run_id"))
    if store.db.execute(load("run_exists"), {"run_id": run_id}).fetchone() is None:
        raise StoreError(f"run {run_id} is not in {store.label}", f"give --store the store it came from "
                         f"({doc.get('store')})")
    w = RunWriter(store, run_id)
    done = []
    with w._writing("importing a side file"), store.transaction():
        if doc.get("result") is not None:
            done.append(w.import_step(doc["step"], sidefile.result_from_json(doc["result"])))
        if doc.get("run_end") is not None:
            done.append(w.import_end(doc["run_end"], doc.get("owner")))
    return done
