"""The whole run: the session opened in order, the steps in their order (interleaved variants,
repetitions), each result handed to the store writer, the checks after the run; signals turned
into an orderly stop; and however it ends, everything started is stopped, every completed step
kept, and the run marked with how it ended."""

from __future__ import annotations

import contextlib
import signal
from collections import Counter

import psycopg

from pgknee.base.clock import polling
from pgknee.base.errors import DriverError, Interrupted, PgkneeError, TargetError, first_line
from pgknee.model import keys
from pgknee.model.facts import Agents, Faults
from pgknee.model.keys import Env
from pgknee.model.results import Reopening
from pgknee.plan import Plan
from pgknee.run.adaptive import AdaptiveSteps, Answer
from pgknee.run.distributed import AgentPlan
from pgknee.run.preflight import Prepared
from pgknee.run.schedule import StepSpec, new_run_id, schedule
from pgknee.run.session import RunRecordPlan, RunSession, open_session
from pgknee.run.step import run_step
from pgknee.run.ui import UI
from pgknee.run.verdict import ends_the_run, finished_line
from pgknee.store.db import Store
from pgknee.store.writer import RunWriter
from pgknee.system import proc, registry


def _answers(session: RunSession) -> bool:
    """Whether the server answers pgknee's statistics session (made again if it was lost)."""
    try:
        session.reader.answers()
        return True
    except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
        raise
    except (psycopg.Error, PgkneeError):
        return False


def _lost_agents(session: RunSession, reason: str | None) -> None:
    """Agents lost in a step: the run stops (the plan's steps are no longer what they were), or,
    with --on-agent-loss continue, the next steps go to the others."""
    fleet, run_id = session.fleet, session.writer.run_id
    assert fleet is not None
    if fleet.plan.on_loss == "stop" or len(fleet.names) <= len(fleet.lost):
        raise DriverError(f"the run stops: {reason}", f"completed steps are kept ('pgknee show {run_id}'); start the "
                          f"agent(s) again and 'pgknee run --resume {run_id} --agents {len(fleet.names)}' runs the "
                          "rest (or --on-agent-loss continue)")
    fleet.drop(fleet.lost)
    session.ui.say(f"going on with {len(fleet.names)} agent(s): {', '.join(fleet.names)}")


class Sweep:
    """One run of a plan into a store. `extend`: a stored run reopened (pgknee run --extend, or
    --resume with `only`, the steps still to run)."""

    def __init__(self, plan: Plan, store: Store, ui: UI, prepared: Prepared, *, argv: list[str] | None = None,
                 extend: Reopening | None = None, extra_env: dict[str, str] | None = None,
                 only: Counter[tuple[str, int, int]] | None = None, answer: Answer | None = None,
                 agents: AgentPlan | None = None) -> None:
        self.plan, self.store, self.ui, self.prepared = plan, store, ui, prepared
        self.run_id = extend.run_id if extend is not None else new_run_id()
        self.record = RunRecordPlan(self.run_id, argv or [], extra_env or {}, extend, resume=only is not None)
        self.kept_message: str | None = None  # how to use and stop a server kept with --keep
        self.only = only  # --resume: the (variant, clients, repetition) still to run
        self.answer = answer or Answer()  # --until-answer: the answer looked for, the budget's clock
        self.agents = agents  # --agents: the steps' pgbench runs on agents (run/distributed.py)

    def run(self) -> str:
        writer = RunWriter(self.store, self.run_id)
        status, reason = "failed", None
        stack = contextlib.ExitStack()
        try:
            with proc.signals(proc.raising(lambda name: Interrupted(f"interrupted by {name}"))):
                session, steps = open_session(stack, self.plan, self.ui, self.prepared, writer, self.record,
                                              self._steps_to_run(), self.agents)
                self._steps(session, steps)
                proc.check_stop()
                self._check_after(session)
                if self.plan.target.keep:
                    self.kept_message = session.target.keep()
                status = "completed"
        except Interrupted as e:
            proc.stop_handled()
            status, reason = "interrupted", e.message
            raise
        except PgkneeError as e:
            reason = e.message
            raise
        except psycopg.OperationalError as e:
            reason = f"lost the connection to the server: {first_line(e)}"
            raise TargetError(reason, "check the server log; completed steps are kept") from None
        except psycopg.Error as e:
            reason = f"the server refused: {first_line(e)}"
            raise TargetError(reason, "check the user's privileges on the target") from None
        finally:
            with proc.signals(signal.SIG_IGN):  # the cleanup's bounded steps are not cut short
                try:
                    stack.close()
                finally:
                    if writer.recorded:
                        writer.end_run(status, reason)
                        registry.current().forget_run(self.run_id)
        return self.run_id

    def _steps_to_run(self) -> list[StepSpec]:
        """The plan's steps; for --resume, as many of each (variant, clients, repetition) as did
        not complete, in the plan's order."""
        if self.only is None:
            return schedule(self.plan)
        left = Counter(self.only)
        steps = []
        for s in schedule(self.plan):
            key = (s.variant.name, s.clients, s.rep)
            if left[key] > 0:
                left[key] -= 1
                steps.append(s)
        return steps

    def _steps(self, session: RunSession, steps: list[StepSpec]) -> None:
        several = len(self.plan.variants) > 1
        # --until-answer: the steps are chosen as the run goes (run/adaptive.py), the plan's are the start
        source = AdaptiveSteps(self.plan, session.writer, self.ui, self.answer, steps) if self.plan.until_answer \
            else steps
        for i, spec in enumerate(source, 1):
            proc.check_stop()
            result = run_step(session, spec, i, len(source))
            with proc.deferred():  # a Ctrl-C now would lose the measured step: it waits for the write
                session.writer.write_step(result)
            self.ui.step_finished(finished_line(spec, result, several))
            agents, faults = result.facts.of(Agents), result.facts.of(Faults)
            if agents is not None and agents.lost:
                _lost_agents(session, result.reason)  # the run stops here, or goes on with the others
                continue
            if (faults is not None and faults.server_restarted) or not _answers(session):
                self._recover(session)  # the step failed with the reason; the sweep goes on
                continue
            if ends_the_run(result):
                raise DriverError(f"pgbench failed at {spec.clients} clients: "
                                  f"{result.reason or 'no transaction completed in the step'}",
                                  f"see the message above; completed steps are kept ('pgknee show {self.run_id}')")

    def _recover(self, session: RunSession) -> None:
        """The server went away during a step (a restart, a failover, a crash): start it again if it
        is pgknee's own, wait for it (bounded, saying so), and reconnect pgknee's sessions."""
        session.target.revive(self.ui.say)
        limit = self.plan.server_wait_s
        said, why = 0.0, "no answer"
        for waited in polling(limit, 1.0):
            try:
                session.reader.reconnect()
                break
            except Interrupted:  # a stop signal, raised here by its handler: never taken for a server fault
                raise
            except (psycopg.Error, PgkneeError) as e:
                why = first_line(e, last=True)
                if waited >= said:
                    self.ui.say(f"waiting for the server to come back ({waited:.0f} s of {limit:.0f})")
                    said += 10.0
        else:
            raise TargetError(f"the server did not come back within {limit:.0f} s: {why}",
                              "check the server; completed steps are kept ('pgknee run --resume' goes on)") from None
        with contextlib.suppress(psycopg.Error, PgkneeError):
            session.collectors.reconnect()
        self.ui.say("the server answers again: the sweep goes on")

    def _check_after(self, session: RunSession) -> None:
        """The workload's own check (money conserved, books balanced), on pgknee's statistics
        session (renewed by any restart)."""
        check = session.prepared.workload.check(session.reader.conn)
        if check is None:
            return
        session.writer.set_environment({
            Env.CHECK_MONEY: check.summary, Env.CHECK_MONEY_OK: str(check.ok).lower(),
            **{keys.check_detail("money", k): str(v) for k, v in check.details.items()}})
        self.ui.say(("✓ " if check.ok else "✗ ") + check.summary)
