"""The pooled variants of a run: what is refused before anything starts, a check
through each pooler once the target is up, and per step a pgbouncer (managed) or
the user's own (external) with its console sampled."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from pgknee.base.dsn import parse_dsn, split_secret
from pgknee.base.errors import PgkneeError, PoolerError, UserError, first_line
from pgknee.collect import queries
from pgknee.collect.memory import process_tree
from pgknee.collect.pooler import FunctionSampler, PoolerSampler, admin_connect, close_servers, show
from pgknee.model import keys
from pgknee.model.keys import Env
from pgknee.model.samples import PoolerFacts
from pgknee.plan import Plan, PoolerSpec, Variant
from pgknee.pooler.pgbouncer import (
    PEERING_MIN_VERSION,
    PREPARED_MIN_VERSION,
    REUSEPORT_MIN_VERSION,
    VIRTUAL_DB,
    ManagedPgbouncer,
    PoolerSettings,
    find_pgbouncer,
    pgbouncer_version,
)
from pgknee.pooler.pgpool import PgpoolSettings, find_pgpool
from pgknee.pooler.pgpoollab import PgpoolLab, pgpool_counts, pgpool_totals
from pgknee.system import proc
from pgknee.targets.base import Endpoint

_TXN_RE = re.compile(r"^\s*(BEGIN|START\s+TRANSACTION)\b|^\s*\\startpipeline", re.IGNORECASE | re.MULTILINE)


def _endpoint(dsn: str) -> Endpoint:
    params, password = split_secret(parse_dsn(dsn))
    return Endpoint(params, password)


@dataclass
class StepPooler:
    """What a step runs through."""

    endpoint: Endpoint  # where pgbench connects
    sampler: PoolerSampler | None  # None: no console to sample
    pids: tuple[int, ...]  # a managed pgbouncer's processes, for their CPU
    alive: Callable[[], bool]
    log_tail: Callable[[], str]
    release: Callable[[], None]  # close the pool's server connections (a managed one: stop it)
    facts: PoolerFacts = field(default_factory=PoolerFacts)
    # after the warm-up, the pool's server connections closed so that the server counts their
    # transactions now (a managed pgbouncer's RECONNECT, pgpool started again; the user's own
    # pooler is left as it is)
    close_servers: Callable[[], bool] = lambda: True
    name: str = "pgbouncer"
    pids_now: Callable[[], tuple[int, ...]] = tuple  # its processes now (pgpool's change when it restarts)


class Poolers:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.say: Callable[[str], None] = lambda _: None  # the run's, from check_through on
        self.binary: str | None = None
        self.version: tuple[int, int, int] | None = None
        self.version_text = ""
        self.external: Endpoint | None = None
        self.external_admin: Endpoint | None = None
        self.external_facts: dict[str, str] = {}
        self.server_cpus: frozenset[int] | None = None
        self.client_cpus: frozenset[int] | None = None
        self.pinned = 0  # server processes pinned at the start (later backends inherit it)
        self.pgpool: PgpoolLab | None = None

    @property
    def managed(self) -> list[Variant]:
        return [v for v in self.plan.variants if v.pooler is not None and v.pooler.kind == "managed"]

    @property
    def pgpools(self) -> list[Variant]:
        return [v for v in self.plan.variants if v.pooler is not None and v.pooler.kind == "pgpool"]

    # ---- before anything starts --------------------------------------------------------------
    def check_before_start(self, scripts: dict[str, list[tuple[str, str]]], *, embedded: bool) -> None:
        """Refusals that need no server: the binary and its version, prepared statements
        through a pool that cannot carry them, transactions in statement mode, placement."""
        if self.managed:
            self.binary = find_pgbouncer(self.plan.pgbouncer)
            self.version_text, self.version = pgbouncer_version(self.binary)
        if self.pgpools:
            self.pgpool = PgpoolLab(find_pgpool(self.plan.pgpool))
        for v in self.plan.variants:
            if v.pooler is not None:
                self._check_variant(v, v.pooler, scripts.get(v.name, []), embedded)
        if any(v.pooler is not None and v.pooler.placement != "any" for v in self.plan.variants):
            self._split_cpus()
        if self.plan.pooler_admin_dsn:
            self.external_admin = _endpoint(self.plan.pooler_admin_dsn)

    def _check_variant(self, v: Variant, pooler: PoolerSpec, scripts: list[tuple[str, str]], embedded: bool) -> None:
        if pooler.kind == "pgpool" and max(self.plan.clients) > pooler.pool_size:
            raise UserError(f"variant {v.name}: pgpool-II serves each client session on a child of its own, and "
                            f"pgbench connects all its clients before it starts: {max(self.plan.clients)} clients on "
                            f"{pooler.pool_size} children would wait for ever (a new connection per transaction "
                            "too, with fewer threads than clients)",
                            f"sweep clients up to the pool (--clients {_up_to(pooler.pool_size)}), or give pgpool a "
                            "larger pool (pgpool:pool=N)")
        if pooler.kind == "pgpool" and v.idle:
            raise UserError(f"variant {v.name}: idle sessions through pgpool-II would each hold a child for the "
                            "whole step (and pgknee starts pgpool again after the warm-up, which would end them)",
                            "measure idle sessions directly or through pgbouncer (idle=N on those variants)")
        managed = pooler.kind == "managed"
        if managed:
            assert self.version is not None
            self._check_prepared(v, pooler.mode, self.version, self.version_text)
            if pooler.processes > 1 and self.version < REUSEPORT_MIN_VERSION:
                raise UserError(f"variant {v.name}: pgbouncer {self.version_text} cannot share a port between "
                                f"{pooler.processes} processes (so_reuseport came in 1.12)",
                                "drop processes=, or use a newer pgbouncer with --pgbouncer PATH")
        if managed and pooler.mode == "statement":
            for name, text in scripts:
                if _TXN_RE.search(text):
                    raise UserError(f"variant {v.name}: statement mode cannot run {name}, which opens a transaction "
                                    "(pgbouncer closes such clients)",
                                    "use transaction mode, or a workload of single statements (--workload select-only)")
        if managed and pooler.mode == "session" and not v.connect_per_txn and \
                max(self.plan.clients) > pooler.pool_size + pooler.reserve:
            raise UserError(f"variant {v.name}: in session mode each client keeps its server connection, so "
                            f"{max(self.plan.clients)} clients on a pool of {pooler.pool_size + pooler.reserve} "
                            "would leave the rest waiting all step",
                            "add connect (-C, a session per transaction), use transaction mode, or a pool at least "
                            "as large as the clients")
        if pooler.placement != "any" and not embedded:
            raise UserError(f"variant {v.name}: placement pins the pooler beside the embedded server or the client; "
                            "a remote server's CPUs are not pgknee's to share",
                            "run pgbouncer where you want it and use pooled-external, or drop placement")

    @staticmethod
    def _check_prepared(v: Variant, mode: str, version: tuple[int, int, int], version_text: str) -> None:
        if v.protocol == "prepared" and mode in ("transaction", "statement") and version < PREPARED_MIN_VERSION:
            raise UserError(f"variant {v.name}: pgbouncer {version_text} cannot carry prepared statements in "
                            f"{mode} mode (1.21 and later can, with max_prepared_statements)",
                            "use the extended protocol (--protocol extended, or protocol=extended in the "
                            "variant), session mode, or a newer pgbouncer with --pgbouncer PATH")

    def _split_cpus(self) -> None:
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            raise UserError("placement needs at least two CPUs to split between the server and the client",
                            "drop placement= from the variants")
        half = len(cpus) // 2
        self.server_cpus, self.client_cpus = frozenset(cpus[:half]), frozenset(cpus[half:])

    # ---- once the target is up -----------------------------------------------------------------
    def check_through(self, server: Endpoint, run_as: proc.RunAs | None, max_clients: int,
                      say: Callable[[str], None]) -> None:
        """Log in through every pooler once, so that a wrong password or a refused login
        stops the run before the first step, not in it."""
        self.say = say
        self._say_peering()
        for v in self.managed:
            with self._managed(v, server, run_as, max_clients, 60) as pgb:
                self._probe(pgb.client_endpoint, f"the pgbouncer of variant {v.name}", pgb.log_tail)
        for v in self.pgpools:  # its start logs in through it
            assert self.pgpool is not None and v.pooler is not None
            with self.pgpool.started(v.pooler, server, run_as, max_clients, self.server_cpus, self.client_cpus):
                pass
        if self.plan.pooler_dsn:
            # resolved once, as the target is: pgbench reaches the pooler this login reached
            try:
                self.external = Endpoint.resolve(self.plan.pooler_dsn)
            except PgkneeError as e:
                raise PoolerError(f"cannot log in through your pooler: {e.message}", e.hint) from None
            self._probe(self.external, f"your pooler at {self.external.label}", lambda: "")
            if self.external_admin is not None:
                self._read_external_console()
            else:
                self.say("note: no --pooler-admin-dsn: the pooler's own figures (clients waiting, server "
                         "connections, wait time) will be missing for pooled-external steps")

    def _say_peering(self) -> None:
        several = sorted({v.pooler.processes for v in self.managed if v.pooler is not None and v.pooler.processes > 1})
        if not several or self.version is None:
            return
        if self.version >= PEERING_MIN_VERSION:
            self.say(f"pgbouncer {self.version_text}: its {'/'.join(map(str, several))} processes are peers "
                     "(peer_id, [peers]): a cancel request reaching the wrong one is forwarded to the right one")
            return
        self.say(f"note: pgbouncer {self.version_text} has no peering (1.19+): with {'/'.join(map(str, several))} "
                 "processes on one port a cancel request reaches the process that holds its client only 1 time "
                 "in N, and is lost otherwise. pgbench sends none, so the sweep is unaffected; an application's "
                 "cancels (a client-side timeout, Ctrl-C in psql) would be")

    def _read_external_console(self) -> None:
        assert self.external_admin is not None and self.external is not None
        with admin_connect(self.external_admin) as c:
            ver = show(c, "VERSION")
            text = str(next(iter(ver[0].values()))) if ver else ""
            m = re.search(r"(\d+)\.(\d+)(?:\.(\d+))?", text)
            dbname = self.external.params.get("dbname", "")
            dbs = [d for d in show(c, "DATABASES") if d.get("name") == dbname]
        self.external_facts = {"version": text}
        if dbs:
            self.external_facts.update({k: str(dbs[0].get(k)) for k in ("pool_mode", "pool_size", "max_connections")
                                        if dbs[0].get(k) is not None})
        else:
            self.say(f"note: your pooler's console lists no database {dbname!r}; its SHOW POOLS rows for it "
                     "will be looked up by that name")
        mode = self.external_facts.get("pool_mode") or "transaction"
        if m:
            version = (int(m.group(1)), int(m.group(2)), int(m.group(3) or 0))
            for v in self.plan.variants:
                if v.pooler is not None and v.pooler.kind == "external":
                    self._check_prepared(v, mode, version, text.split()[-1] if text else "?")

    @staticmethod
    def _probe(endpoint: Endpoint, what: str, tail: Callable[[], str]) -> None:
        try:
            with psycopg.connect(**endpoint.kwargs("pgknee:probe", timeout=15)) as c:
                c.execute(queries.text("ping"))  # a login, and one round trip through the pooler
        except psycopg.Error as e:
            why = tail() or first_line(e, last=True)
            raise PoolerError(f"cannot log in through {what}: {why}",
                              "check that the pooler reaches the server with the target's user and password") \
                from None

    # ---- per step ------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _managed(self, v: Variant, server: Endpoint, run_as: proc.RunAs | None, max_clients: int,
                 wait_timeout_s: int) -> Iterator[ManagedPgbouncer]:
        assert v.pooler is not None and self.binary is not None and self.version is not None
        settings = self._settings(v, max_clients, wait_timeout_s)
        cpus = {"server": self.server_cpus, "client": self.client_cpus}.get(v.pooler.placement)
        pgb = ManagedPgbouncer(self.binary, self.version, server, settings, run_as=run_as, cpus=cpus)
        try:
            pgb.start()
            yield pgb
        finally:
            pgb.close()

    @contextlib.contextmanager
    def step(self, v: Variant, server: Endpoint, run_as: proc.RunAs | None, clients: int,
             step_seconds: int) -> Iterator[StepPooler]:
        assert v.pooler is not None
        interval = self.plan.pooler_interval_s
        if v.pooler.kind == "pgpool":
            with self._pgpool_step(v, server, run_as, clients, interval) as pooled:
                yield pooled
            return
        if v.pooler.kind == "external":
            assert self.external is not None
            sampler = None
            facts = PoolerFacts("external", external=tuple(self.external_facts.items()))
            if self.external_admin is not None:
                sampler = PoolerSampler([self.external_admin], self.external.params.get("dbname", ""), interval,
                                        facts=facts)
            yield StepPooler(self.external, sampler, (), lambda: True, lambda: "", lambda: None, facts)
            return
        with self._managed(v, server, run_as, clients, step_seconds + 120) as pgb:
            facts = PoolerFacts("managed", self.version_text, tuple(pgb.describe().items()))
            sampler = PoolerSampler(pgb.admin_endpoints, VIRTUAL_DB, interval, pgb.pids, facts)
            yield StepPooler(pgb.client_endpoint, sampler, pgb.pids, pgb.alive, pgb.log_tail, pgb.stop, facts,
                             lambda: close_servers(pgb.admin_endpoints, VIRTUAL_DB), pids_now=lambda: pgb.pids)

    def describe_managed(self, max_clients: int, step_seconds: int) -> list[str]:
        """For --dry-run: the pgbouncer each managed variant would get, per step."""
        out = []
        for v in self.managed:
            assert v.pooler is not None
            s = self._settings(v, max_clients, step_seconds + 120)
            ini = s.ini(server={"host": "TARGET", "dbname": "TARGET"}, listen_port=0, private_dir=Path("PRIVATE"),
                        version=self.version or (0, 0, 0))
            keys = ("pool_mode", "default_pool_size", "reserve_pool_size", "max_db_connections", "max_client_conn",
                    "query_wait_timeout", "auth_type", "max_prepared_statements", "so_reuseport")
            shown = [ln for ln in ini.splitlines() if ln.split(" = ")[0] in keys]
            n = v.pooler.processes
            what = f"{n} processes on one port, each with these settings" if n > 1 else "started per step"
            out.append(f"pgbouncer {self.version_text} for {v.name}, {what}: " + "; ".join(shown))
        for v in self.pgpools:
            assert v.pooler is not None and self.pgpool is not None
            told = PgpoolSettings(v.pooler.pool_size, max_clients).describe()
            out.append(f"pgpool-II {self.pgpool.version_text} for {v.name}, started per step (and again after a "
                       "warm-up): " + "; ".join(f"{k} = {told[k]}" for k in (
                           "backend_clustering_mode", "num_init_children", "max_pool", "connection_cache",
                           "listen_backlog", "child_life_time", "connection_life_time", "load_balance_mode")))
        return out

    def _settings(self, v: Variant, max_clients: int, wait_timeout_s: int) -> PoolerSettings:
        assert v.pooler is not None
        return PoolerSettings(mode=v.pooler.mode, pool_size=v.pooler.pool_size, reserve=v.pooler.reserve,
                              max_clients=max_clients, query_wait_timeout_s=wait_timeout_s,
                              prepared_statements=v.protocol == "prepared", auth=v.pooler.auth,
                              processes=v.pooler.processes)

    @contextlib.contextmanager
    def _pgpool_step(self, v: Variant, server: Endpoint, run_as: proc.RunAs | None, clients: int,
                     interval: float) -> Iterator[StepPooler]:
        """A pgpool for the step, sampled through its console child; started again after the
        warm-up (its cached server connections closed)."""
        assert self.pgpool is not None and v.pooler is not None
        lab = self.pgpool
        with lab.started(v.pooler, server, run_as, clients, self.server_cpus, self.client_cpus) as pgp:
            facts = PoolerFacts("pgpool", lab.version_text, tuple(pgp.describe().items()))
            sampler = FunctionSampler(lambda: pgpool_counts(pgp.snapshot()), lambda: pgpool_totals(pgp), interval,
                                      facts)
            yield StepPooler(pgp.client_endpoint, sampler, tuple(pgp.pids()), pgp.alive, pgp.log_tail, pgp.stop, facts,
                             pgp.restart, "pgpool", lambda: tuple(pgp.pids()))

    def environment(self) -> dict[str, str]:
        env: dict[str, str] = {}
        if self.pgpool is not None:
            env.update({Env.PGPOOL_PATH: self.pgpool.binary, Env.PGPOOL_VERSION: self.pgpool.version_text})
        if self.binary:
            env.update({Env.PGBOUNCER_PATH: self.binary, Env.PGBOUNCER_VERSION: self.version_text})
        if self.external is not None:
            env[Env.POOLER_EXTERNAL] = self.external.label
            env.update({keys.pooler_external_env(k): x for k, x in self.external_facts.items()})
        if self.server_cpus is not None and self.client_cpus is not None:
            env[Env.PLACEMENT_SERVER_CPUS] = ",".join(map(str, sorted(self.server_cpus)))
            env[Env.PLACEMENT_CLIENT_CPUS] = ",".join(map(str, sorted(self.client_cpus)))
            env[Env.PLACEMENT_PINNED] = str(self.pinned)
        return env


def _up_to(n: int) -> str:
    """Doubling client counts up to n: 1,2,4,8 for 8."""
    out = [1]
    while out[-1] * 2 <= n:
        out.append(out[-1] * 2)
    return ",".join(map(str, out if out[-1] == n else [*out, n]))


def pin_process_tree(root_pid: int, cpus: frozenset[int]) -> int:
    """Pin a process and its children (a postmaster and its backends); children forked
    later inherit the affinity. Returns how many processes were pinned."""
    pinned = 0
    for pid in process_tree(root_pid):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(pid, cpus)
            for tid in os.listdir(f"/proc/{pid}/task"):
                with contextlib.suppress(OSError):
                    os.sched_setaffinity(int(tid), cpus)
            pinned += 1
    return pinned

