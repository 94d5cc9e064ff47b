"""A captured workload on disk: `workload.toml` (what was captured, from where, each statement's
calls, time and parameters, the scripts and their weights, what could not be scripted and why)
beside one plain pgbench script per statement. The user may edit both: weights, which statements
a script holds (a transaction of several), the scripts' text."""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import tomli_w

from pgknee.base.errors import UserError

MANIFEST = "workload.toml"
KINDS = ("read", "write")


@dataclass(frozen=True)
class Param:
    n: int
    use: str  # column | expression (inside one compared with it) | fresh | default (a key) | delta | limit | offset
    #   | typed (nothing ties it to a column: a value of its type)
    column: str = ""  # schema.table.column
    type: str = ""
    drawn: str = ""  # how its values are drawn, in words
    mcv: list[str] = field(default_factory=list)
    mcf: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Statement:
    id: str
    query: str  # as pg_stat_statements holds it (normalised: constants are $n)
    kind: str  # read | write
    calls: int
    total_ms: float
    mean_ms: float
    rows: int
    share_calls: float  # of the database's calls, over everything pg_stat_statements held
    share_time: float
    tables: list[str]
    fingerprint: str  # the replayed statement's parse tree: found again on the target by it
    params: list[Param] = field(default_factory=list)


@dataclass(frozen=True)
class ScriptEntry:
    name: str
    file: str
    weight: int
    statements: list[str]
    # a transaction of the application (grouping.py): how it was found, and the idle time inside
    # it its script draws per transaction (ms, at pauses.POINTS per cent); empty in autocommit
    evidence: str = ""
    idle_ms: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Skipped:
    query: str
    calls: int
    reason: str


@dataclass(frozen=True)
class Spread:
    """A distribution's percentiles (None: nothing seen)."""

    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class Observation:
    """The application over the window. Times in milliseconds; rates per second."""

    window_s: float
    interval_s: float
    samples: int
    transactions_per_s: float
    rollbacks_per_s: float
    explicit_per_s: float  # BEGIN's calls: transactions of several statements or with client work inside
    statements_per_transaction: float | None  # the application's statements (BEGIN, COMMIT not counted)
    hold_ms: float | None  # a transaction's hold on its connection, mean (the counters)
    active_ms: float | None  # of which running statements
    idle_in_transaction_ms: float | None  # of which idle inside it: the application's own work
    idle_share: float | None
    transaction_ms: Spread  # sampled, weighted by the chance to be seen
    explicit_idle_ms: Spread  # idle in transaction per explicit transaction, sampled
    transactions_seen: int
    transactions_exact: int  # of those, ended exactly (seen idle after)
    sessions_open: Spread  # the application's sessions of the database, per sample
    sessions_busy: Spread  # of which active or idle in transaction
    new_connections_per_s: float | None
    think_ms: float | None  # a session's time between its transactions, mean (closed loop)
    hidden_sessions: int  # the most sessions one sample could not read (another role's)
    own_statements: int  # pgknee's, taken out of the counters
    counters: dict[str, float] = field(default_factory=dict)  # pg_stat_database's change, as read
    notes: list[str] = field(default_factory=list)  # what it could not see, and why

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Observation:
        """From the manifest (a figure TOML could not hold, None, is absent)."""
        spreads = {k: Spread(**v) for k, v in d.items() if isinstance(v, dict) and k != "counters"}
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{**{k: None for k in known}, "counters": {}, "notes": [],
                      **{k: v for k, v in d.items() if k in known}, **spreads})

    @property
    def explicit_idle_mean_ms(self) -> float | None:
        """Idle in transaction per explicit transaction, mean (the counters): what a replay sleeps."""
        idle = self.counters.get("idle_in_transaction_time")
        explicit = self.explicit_per_s * self.window_s
        return idle / explicit if idle is not None and explicit >= 1 else None


def per_transaction(x: float, transactions: float) -> float | None:
    """A window's total per transaction; None when not one transaction ended in it."""
    return x / transactions if transactions >= 1 else None


@dataclass(frozen=True)
class Manifest:
    source: str  # the DSN without its password
    database: str
    system_identifier: str  # pg_control_system(): '' when the role could not read it
    server_version: int
    captured_at: str
    order_by: str
    top: int
    tables: list[str]
    statements: list[Statement]
    scripts: list[ScriptEntry]
    skipped: list[Skipped] = field(default_factory=list)
    observed: Observation | None = None  # --observe: the application as it ran (observe.py)
    grouping: str = ""  # how statements were grouped into transactions

    def statement(self, sid: str) -> Statement:
        return next(s for s in self.statements if s.id == sid)

    def by_parse_tree(self) -> list[list[Statement]]:
        """The replayed statements (in a script of some weight), those of one parse tree together:
        the target's pg_stat_statements holds them as one entry (pgbench numbers each script's
        variables in order, so the two arms of a vote inserted one way or the other, `VALUES ($1,
        $3, $2)` and `VALUES ($1, $2, $3)` as captured, are one statement there), so they are
        compared with the capture as one."""
        ids = {x for sc in self.scripts if sc.weight > 0 for x in sc.statements}
        groups: dict[str, list[Statement]] = {}
        for s in self.statements:
            if s.id in ids:
                groups.setdefault(s.fingerprint or s.id, []).append(s)
        return list(groups.values())

    def writes(self) -> list[str]:
        """The scripts that hold a write."""
        kinds = {s.id: s.kind for s in self.statements}
        return [sc.name for sc in self.scripts if any(kinds.get(x) == "write" for x in sc.statements)]

    def to_toml(self) -> bytes:
        head = (b"# pgknee captured workload (pgknee workload show DIR reads it). Edit freely: a script's weight,\n"
                b"# its statements (several make one transaction: put BEGIN; and COMMIT; in its file), or drop\n"
                b"# a [[scripts]] entry. The statistics below are what the scripts' \\set lines were drawn from.\n\n")
        return head + tomli_w.dumps(_no_none(asdict(self)), multiline_strings=True).encode()


def _no_none(d: Any) -> Any:
    """TOML has no null: a figure not known is left out (and None again when read)."""
    if isinstance(d, dict):
        return {k: _no_none(v) for k, v in d.items() if v is not None}
    if isinstance(d, list):
        return [_no_none(v) for v in d]
    return d


def load(directory: str) -> Manifest:
    """The manifest of a capture directory, checked: one line saying what is wrong if it is not."""
    path = Path(directory) / MANIFEST
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{directory} holds no {MANIFEST}: it is not a captured workload",
                        "make one with pgknee workload capture --dsn ... --output DIR") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise UserError(f"{path} cannot be read: {e}", "fix the file, or capture again") from None
    try:
        m = _manifest(data)
    except (KeyError, TypeError, ValueError) as e:
        raise UserError(f"{path} is not a manifest pgknee wrote: {type(e).__name__} {e}",
                        "fix the file, or capture again") from None
    _check(m, path)
    return m


def _manifest(d: dict[str, Any]) -> Manifest:
    stmts = [Statement(**{**s, "params": [Param(**p) for p in s.get("params", [])]}) for s in d["statements"]]
    observed = Observation.from_dict(d["observed"]) if "observed" in d else None
    return Manifest(**{**d, "statements": stmts, "scripts": [ScriptEntry(**s) for s in d["scripts"]],
                       "skipped": [Skipped(**s) for s in d.get("skipped", [])], "observed": observed})


def _check(m: Manifest, path: Path) -> None:
    ids = {s.id for s in m.statements}
    if not m.scripts:
        raise UserError(f"{path} lists no scripts", "capture again, or restore a [[scripts]] entry")
    for s in m.statements:
        if s.kind not in KINDS:
            raise UserError(f"{path}: statement {s.id} has kind {s.kind!r}", "read or write")
    for sc in m.scripts:
        if not isinstance(sc.weight, int) or not 0 <= sc.weight <= 1_000_000:
            raise UserError(f"{path}: script {sc.name} has weight {sc.weight!r}",
                            "a whole number from 0 to 1000000")
        unknown = [x for x in sc.statements if x not in ids]
        if unknown or not sc.statements:
            raise UserError(f"{path}: script {sc.name} names statements {unknown or '(none)'} the manifest "
                            "does not hold", "list ids of [[statements]] entries")
        if Path(sc.file).name != sc.file or not sc.file.endswith(".sql"):
            raise UserError(f"{path}: script file {sc.file!r} must be a .sql file name in the capture directory")
    if sum(sc.weight for sc in m.scripts) <= 0:
        raise UserError(f"{path}: every script has weight 0", "give one a weight")
