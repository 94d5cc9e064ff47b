"""A run whose load comes from agents on other hosts (`pgknee run --agents N`): the coordinator
side. Before the sweep it takes N agents from the store (one that never shows up is named then,
not after the sweep); for each step it gives each agent its share of the clients (and of an open
loop's rate), waits for all to be ready, sets a common start a little ahead on the store's clock,
and waits for what each measured, watching their heartbeats. The server-side samplers run here,
around the same window, as for a local pgbench.

Merging (`merge`): transactions and failures summed from pgbench's exact counts; TPS summed over
each agent's own measured window (the windows are one window when the starts agree, which the
report checks); latency percentiles from the agents' histograms merged (HdrHistogram's buckets
added), never from their percentiles; progress summed second by second. An agent that dies, or
whose pgbench fails, fails the step with its reason."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pgknee.base.clock import polling
from pgknee.base.errors import DriverError, UserError
from pgknee.driver.histogram import Histogram, from_wire
from pgknee.driver.measure import LogSummary, ScriptTally, latency_stats, measure
from pgknee.driver.pgbench import Counts, PgbenchRun, error_cause
from pgknee.model.results import AgentShare, PgbenchSummary, ProgressPoint, StepMeasurement
from pgknee.store import coord
from pgknee.store.db import Store
from pgknee.store.location import Location
from pgknee.workloads import Script

START_MARGIN_S = 2.0  # the common start: this far ahead of the moment every agent is ready
READY_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class AgentPlan:
    count: int
    wait_s: float = 300.0  # how long the coordinator waits for its agents before the sweep
    on_loss: str = "stop"  # an agent lost mid-run: 'stop' the run, or 'continue' with the others


@dataclass
class Merged:
    """A step's figures from its agents, as a local pgbench's would be."""

    exit_code: int
    reason: str | None
    summary: PgbenchSummary
    window_s: float
    measurement: StepMeasurement | None
    progress: tuple[ProgressPoint, ...]
    shares: tuple[AgentShare, ...]
    lost: list[str] = field(default_factory=list)  # agents that stopped answering


class Fleet:
    """The agents a run took, and the store connection it drives them through."""

    def __init__(self, location: Location, run_id: str, plan: AgentPlan, say: Callable[[str], None]) -> None:
        self.store = Store(location)  # the coordinator's own session to it
        self.run_id, self.plan, self.say = run_id, plan, say
        self.offset, _ = coord.clock_offset(self.store)
        self.names: list[str] = []
        self.rows: dict[str, coord.AgentRow] = {}
        self.lost: list[str] = []  # agents lost in the last step

    def gather(self) -> None:
        """N agents taken for the run, or one line naming who is there and who is not."""
        said = -1
        for waited in polling(self.plan.wait_s, 0.5):
            for a in coord.take(self.store, self.run_id, self.plan.count - len(self.names)):
                self.names.append(a.name)
                self.rows[a.name] = a
                self.say(f"agent {a.name} on {a.host}: {a.cpus} CPUs, pgbench {a.pgbench.split()[0]}, clock "
                         f"{a.clock_offset_ms:+.1f} ms ±{a.clock_error_ms:.1f} from the store's")
            if len(self.names) >= self.plan.count:
                break
            left = self.plan.wait_s - waited
            if int(left) // 10 != said:
                said = int(left) // 10
                self.say(f"waiting for {self.plan.count - len(self.names)} more agent(s) ({left:.0f} s left)")
        else:
            raise UserError(self._missing(), "start 'pgknee agent --store ...' on each load-generator host "
                            "(or apply the Job of 'pgknee k8s render'), or raise --agent-wait")
        self._check_versions()

    def _missing(self) -> str:
        now = coord.clock(self.store)
        others = [a for a in coord.agents(self.store) if a.name not in self.names]
        heard = "; ".join(f"{a.name} {'serves run ' + str(a.run_id) if a.state == 'taken' else a.state}, "
                          f"last heard {now - a.heartbeat_at:.0f} s ago" for a in others[:5])
        return (f"only {len(self.names)} of {self.plan.count} agents came within {self.plan.wait_s:.0f} s "
                f"({', '.join(self.names) or 'none'}); {self.plan.count - len(self.names)} missing"
                + (f" (others in the store: {heard})" if heard else ""))

    def _check_versions(self) -> None:
        majors = {a.pgbench_version // 10000 for a in self.rows.values()}
        if len(majors) > 1:
            raise UserError("the agents run pgbench of different major versions (" + ", ".join(
                f"{a.name}: {a.pgbench.split()[0]}" for a in self.rows.values()) + ")",
                "give every agent the same pgbench (the image of 'pgknee k8s render' has one)")

    def close(self) -> None:
        try:
            coord.release(self.store, self.run_id)
        finally:
            self.store.close()

    # ---- one phase of a step ------------------------------------------------------------------
    def run(self, run: PgbenchRun, texts: Sequence[str], step_id: int, phase: str, dsn: str,
            think_us: int, on_progress: Callable[[ProgressPoint], None] | None = None) -> list[coord.Task]:
        """Each agent's share of `run`, started together; returns their finished tasks. Their
        progress, summed second by second, goes to `on_progress` as it comes."""
        specs = {name: _spec(run, texts, clients, threads, dsn, think_us, phase)
                 for name, clients, threads in self._split(run)}
        ids = coord.assign(self.store, self.run_id, step_id, phase, specs)
        try:
            return self._run(run, ids, on_progress)
        except AgentLost as e:
            self._drain(ids, set(e.agents), run)
            raise

    def _drain(self, ids: dict[str, int], lost: set[str], run: PgbenchRun) -> None:
        """The rest of a failed step: parts not started are cancelled, the other agents' running
        ones waited for (bounded), so that the next step starts on a quiet server with its agents
        free."""
        for _ in polling(START_MARGIN_S + run.duration_s + 60, 0.5):
            got = coord.tasks(self.store, list(ids.values()))
            coord.cancel(self.store, [t.task_id for t in got if t.state in ("assigned", "ready") or t.agent in lost])
            if not any(t.state == "running" and t.agent not in lost for t in got):
                break
        coord.cancel(self.store, list(ids.values()))

    def _run(self, run: PgbenchRun, ids: dict[str, int],
             on_progress: Callable[[ProgressPoint], None] | None) -> list[coord.Task]:
        self._wait(ids, {"ready", "running", "done", "failed"}, READY_TIMEOUT_S, "to be ready", every_s=0.05)
        start = coord.clock(self.store) + START_MARGIN_S
        coord.start_at(self.store, list(ids.values()), start)
        limit = START_MARGIN_S + run.duration_s + 60 + run.clients * 0.05
        # while the agents run, the store is asked twice a second (it may share the server measured)
        shown: set[float] = set()

        def live(got: list[coord.Task]) -> None:
            if on_progress is not None:
                for p in _progress([{"progress": t.progress} for t in got]):
                    if p.t_s not in shown:
                        shown.add(p.t_s)
                        on_progress(p)
        return self._wait(ids, {"done", "failed"}, limit, "to finish", every_s=0.5, seen=live)

    def _split(self, run: PgbenchRun) -> list[tuple[str, int, int]]:
        """The clients as evenly as they go (the first agents one more); threads per agent its
        CPUs at most, as pgknee gives a local pgbench."""
        n = min(len(self.names), run.clients)
        base, extra = divmod(run.clients, n)
        out = []
        for i, name in enumerate(self.names[:n]):
            clients = base + (1 if i < extra else 0)
            out.append((name, clients, max(1, min(clients, run.threads, self.rows[name].cpus))))
        return out

    def _wait(self, ids: dict[str, int], states: set[str], limit_s: float, what: str, *,
              every_s: float, seen: Callable[[list[coord.Task]], None] = lambda _: None) -> list[coord.Task]:
        got: list[coord.Task] = []
        for _ in polling(limit_s, every_s):
            got = coord.tasks(self.store, list(ids.values()))
            seen(got)
            if all(t.state in states for t in got):
                return got
            lost = self._lost(got)
            if lost:
                raise AgentLost(lost, got)
        late = [t.agent for t in got if t.state not in states]
        raise AgentLost([f"agent {a} did not report {what} within {limit_s:.0f} s" for a in late], got)

    def _lost(self, got: list[coord.Task]) -> list[str]:
        now = coord.clock(self.store)
        rows = {a.name: a for a in coord.agents(self.store, [t.agent for t in got])}
        out = []
        for t in got:
            a = rows.get(t.agent)
            if t.state in ("done", "failed") or a is None:
                continue
            if now - a.heartbeat_at > coord.STALE_S:
                out.append(f"agent {t.agent} stopped answering (last heard {now - a.heartbeat_at:.0f} s ago: "
                           "killed, or its host or network went away)")
        return out

    def drop(self, names: Sequence[str]) -> None:
        """Agents lost: the next steps go to the others (--on-agent-loss continue)."""
        self.names = [n for n in self.names if n not in names]


class AgentLost(DriverError):
    def __init__(self, reasons: list[str], tasks: list[coord.Task]) -> None:
        super().__init__("; ".join(reasons), "see the agents' own output; completed steps are kept")
        self.tasks = tasks
        self.agents = [r.split()[1] for r in reasons if r.startswith("agent ")]


def _spec(run: PgbenchRun, texts: Sequence[str], clients: int, threads: int, dsn: str, think_us: int,
          phase: str) -> dict[str, Any]:
    rate = run.rate * clients / run.clients if run.rate else None
    return {"clients": clients, "threads": threads, "duration_s": run.duration_s, "protocol": run.protocol,
            "scripts": [{"name": s.name, "filename": s.path.name, "weight": s.weight, "text": text}
                        for s, text in zip(run.scripts, texts, strict=True)],
            "defines": [list(d) for d in run.defines], "max_tries": run.max_tries,
            "log": phase == "bench" and run.log_prefix is not None, "log_sampling_rate": run.log_sampling_rate,
            "connect_per_txn": run.connect_per_txn, "rate": rate, "think_us": think_us, "dsn": dsn}


# ---- merging ---------------------------------------------------------------------------------------
def merge(tasks: list[coord.Task], scripts: Sequence[Script], run: PgbenchRun) -> Merged:
    """The step as one pgbench would have measured it (see the module's docstring)."""
    results = [(t, t.result or {}) for t in tasks]
    failed = [_named(t.agent, t.reason or "no result") for t, r in results if t.state != "done" or not r]
    bad = [f"{t.agent}: pgbench exit code {r['exit_code']}: {error_cause(str(r.get('stderr', ''))) or 'no message'}"
           for t, r in results if r and r.get("exit_code") not in (0, None)]
    ok = [(t, r) for t, r in results if t.state == "done" and r]
    log, counts = _merged_log(r for _, r in ok), _merged_counts([r.get("counts") for _, r in ok])
    tps_sum = sum(_tps(r) for _, r in ok)
    total, failed_txns = (counts.transactions, counts.failed) if counts is not None else (0, None)
    window = total / tps_sum if tps_sum > 0 else float(run.duration_s)
    m = measure(log, scripts, window, rate=run.log_sampling_rate, counts=counts) if ok and log is not None else None
    summary = PgbenchSummary(transactions=total, failed=failed_txns, tps=tps_sum,
                             lat_avg_ms=m.latency.mean_ms if m and m.latency else None,
                             conn_time_ms=max((r["summary"].get("conn_time_ms") or 0.0 for _, r in ok), default=None),
                             duration_s=max((r["summary"].get("duration_s") or 0.0 for _, r in ok), default=None))
    reasons = failed + bad
    codes = [int(r["exit_code"]) for _, r in ok if r.get("exit_code")]  # pgbench's own, when one failed
    return Merged(0 if not reasons else (codes[0] if codes else 1), "; ".join(reasons) or None, summary, window,
                  m, _progress([r for _, r in ok]),
                  tuple(_share(t, r) for t, r in results))


def _named(agent: str, reason: str) -> str:
    """An agent's reason, its name in front once ("agent gen-1: ..." says it already)."""
    return reason if reason.startswith(f"agent {agent}") else f"{agent}: {reason}"


def _tps(r: dict[str, Any]) -> float:
    c = r.get("counts") or {}
    window = float(r.get("window_s") or 0)
    return int(c.get("transactions", 0)) / window if window > 0 else 0.0


def _merged_log(results: Any) -> LogSummary | None:
    out, any_log = LogSummary(), False
    for r in results:
        log = r.get("log")
        if not log:
            continue
        any_log = True
        for key, s in log["scripts"].items():
            t = out.scripts.setdefault(int(key), ScriptTally())
            t.latency.merge(from_wire(s["latency"]))
            t.failed, t.retried, t.retries = t.failed + s["failed"], t.retried + s["retried"], t.retries + s["retries"]
        for kind, n in log["failures"].items():
            out.failures[kind] = out.failures.get(kind, 0) + int(n)
        out.skipped += int(log["skipped"])
        out.lag.merge(from_wire(log["lag"]))
    return out if any_log else None


def _merged_counts(all_counts: list[dict[str, Any] | None]) -> Counts | None:
    got = [c for c in all_counts if c]
    if not got:
        return None

    def one(cs: list[dict[str, Any]]) -> Counts:
        def total(f: str) -> int:
            return sum(int(c.get(f, 0)) for c in cs)
        return Counts(total("transactions"), total("failed"), total("serialization"), total("deadlock"),
                      total("retried"), total("retries"), total("skipped"))

    n_scripts = {len(c.get("scripts") or ()) for c in got}
    total = one(got)
    if n_scripts == {0} or len(n_scripts) > 1:
        return total
    per = tuple(one([c["scripts"][i] for c in got]) for i in range(n_scripts.pop()))
    return replace(total, scripts=per)


def _progress(results: list[dict[str, Any]]) -> tuple[ProgressPoint, ...]:
    by_t: dict[float, list[ProgressPoint]] = {}
    for r in results:
        for p in r.get("progress") or ():
            by_t.setdefault(float(p["t_s"]), []).append(ProgressPoint(**p))
    out = []
    for t, pts in sorted(by_t.items()):
        if len(pts) < len(results):
            continue  # a second not every agent reported: summing it would undercount
        tps = sum(p.tps for p in pts)
        lat = sum((p.lat_ms or 0) * p.tps for p in pts) / tps if tps > 0 else None
        out.append(ProgressPoint(t, tps, lat, None, sum(p.failed or 0 for p in pts)))
    return tuple(out)


def _share(t: coord.Task, r: dict[str, Any]) -> AgentShare:
    spec, c = t.spec, r.get("counts") or {}
    lat = _own_latency(r)
    window = float(r.get("window_s") or 0)
    end = r.get("ended")
    return AgentShare(
        agent=t.agent, host=str(r.get("host", "")), clients=int(spec["clients"]), threads=int(spec["threads"]),
        cpus=int(r.get("cpus") or 0), exit_code=int(r.get("exit_code", -1)),  # r is {} without a result: -1
        transactions=c.get("transactions"), failed=c.get("failed"), tps=_tps(r) if r else None,
        bench_start=(float(end) - window) if end is not None and window > 0 else r.get("started"),
        bench_end=end, cpu_pct=r.get("cpu_pct"), rtt_ms=r.get("rtt_ms"),
        clock_offset_ms=r.get("clock_offset_ms"), lat_p50_ms=lat[0], lat_p99_ms=lat[1])


def _own_latency(r: dict[str, Any]) -> tuple[float | None, float | None]:
    log = r.get("log")
    if not log:
        return None, None
    h = Histogram()
    for s in log["scripts"].values():
        h.merge(from_wire(s["latency"]))
    stats = latency_stats(h)
    return (stats.p50_ms, stats.p99_ms) if stats is not None else (None, None)
