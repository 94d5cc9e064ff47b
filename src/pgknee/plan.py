"""The validated, frozen description of a run. Built from flags today (and from
a TOML file later); never connects to anything or spawns anything."""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pgknee.errors import UserError
from pgknee.rules import DEFAULT_NOISE_PCT, DEFAULT_SUMMARY, SUMMARIES, check_noise_pct
from pgknee.serverconf import check_setting, parse_setting

PROTOCOLS = ("simple", "extended", "prepared")
DEFAULT_CLIENTS = (2, 4, 8, 16, 32)
MAX_STEPS = 1000
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|sec|m|min|h)?\s*$", re.IGNORECASE)
_UNIT_S = {None: 1.0, "us": 1e-6, "ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_seconds(text: str, what: str, *, allow_zero: bool = False, whole: bool = False) -> float:
    """'180s', '3m', '500ms', '10' (seconds) -> seconds."""
    m = _DURATION_RE.match(str(text))
    if not m:
        raise UserError(f"{what} {text!r} is not a duration", "write it like 30s, 3m, 500ms or a number of seconds")
    value = float(m.group(1)) * _UNIT_S[(m.group(2) or "").lower() or None]
    if value < 0 or (value == 0 and not allow_zero):
        raise UserError(f"{what} must be greater than zero, got {text!r}")
    if whole and value != int(value):
        raise UserError(f"{what} must be a whole number of seconds (pgbench -T counts seconds), got {text!r}")
    return value


def parse_clients(text: str) -> tuple[int, ...]:
    """'2,4,8' or ranges: '50:1000:50' (linear) and '2:32:x2' (doubling); kept in the order given."""
    out: list[int] = []
    parts = [p.strip() for p in str(text).split(",")]
    if not any(parts):
        raise UserError("the client list is empty", "give client counts like --clients 2,4,8,16,32")
    for part in parts:
        if not part:
            raise UserError(f"empty entry in the client list {text!r}", "separate counts with single commas")
        out.extend(_parse_client_part(part, text))
    if len(out) > MAX_STEPS:
        raise UserError(f"the client list {text!r} expands to {len(out)} steps", "use a coarser step")
    return tuple(out)


def _positive_int(token: str, whole: str) -> int:
    try:
        n = int(token)
    except ValueError:
        raise UserError(f"client count {token!r} in {whole!r} is not a whole number",
                        "give client counts like --clients 2,4,8,16,32") from None
    if n < 1:
        raise UserError(f"client count {n} in {whole!r} must be at least 1")
    return n


def _parse_client_part(part: str, whole: str) -> list[int]:
    if ":" not in part:
        return [_positive_int(part, whole)]
    pieces = part.split(":")
    if len(pieces) != 3:
        raise UserError(f"range {part!r} must be START:STOP:STEP (linear) or START:STOP:xFACTOR (doubling)")
    start, stop = _positive_int(pieces[0], whole), _positive_int(pieces[1], whole)
    step = pieces[2].strip().lower()
    if stop < start:
        raise UserError(f"range {part!r} runs backwards", "put the smaller count first")
    if step.startswith("x"):
        factor = _positive_int(step[1:], whole)
        if factor < 2:
            raise UserError(f"range {part!r}: the factor must be 2 or more")
        vals, n = [], start
        while n <= stop:
            vals.append(n)
            n *= factor
        return vals
    inc = _positive_int(step, whole)
    if (stop - start) // inc + 1 > MAX_STEPS:
        raise UserError(f"range {part!r} expands to more than {MAX_STEPS} steps", "use a coarser step")
    return list(range(start, stop + 1, inc))


POOL_MODES = ("session", "transaction", "statement")
IDLE_KINDS = {
    "quiet": "connected, then nothing",
    "catalog": "each listed information_schema's tables and read a row of each, then nothing",
    "sleep": "each running SELECT pg_sleep, active but idle",
}
MAX_IDLE = 20_000
PLACEMENTS = ("any", "server", "client")
POOLER_AUTH = ("scram-sha-256", "md5")
MAX_POOL = 10_000


@dataclass(frozen=True)
class PoolerSpec:
    """pgbouncer in front of the target: one pgknee starts per step ('managed', with this
    mode and pool size), or the user's own ('external', reached by --pooler-dsn)."""

    kind: str = "managed"
    mode: str = "transaction"
    pool_size: int = 20
    reserve: int = 0  # reserve_pool_size: extra server connections after 5 s of waiting
    placement: str = "any"  # the CPUs it runs on: any, the server's, or the client's
    auth: str = "scram-sha-256"  # how clients log in to it; md5 costs the client far less CPU per login

    def __post_init__(self) -> None:
        if self.kind not in ("managed", "external"):
            raise UserError(f"unknown pooler kind {self.kind!r}",
                            "pooled (a pgbouncer pgknee starts) or pooled-external")
        if self.mode not in POOL_MODES:
            raise UserError(f"unknown pool mode {self.mode!r}", f"choose one of {', '.join(POOL_MODES)}")
        for what, n, low in (("pool", self.pool_size, 1), ("reserve", self.reserve, 0)):
            if not _whole(n) or not low <= n <= MAX_POOL:
                raise UserError(f"{what}={n!r} must be a whole number from {low} to {MAX_POOL}")
        if self.placement not in PLACEMENTS:
            raise UserError(f"unknown placement {self.placement!r}", "placement=server or placement=client")
        if self.auth not in POOLER_AUTH:
            raise UserError(f"unknown auth {self.auth!r}", "auth=scram (the default) or auth=md5")

    def describe(self) -> str:
        if self.kind == "external":
            return "through your pgbouncer (--pooler-dsn)"
        text = f"through pgbouncer, {self.mode} mode, pool {self.pool_size}"
        if self.reserve:
            text += f" + reserve {self.reserve}"
        if self.placement != "any":
            text += f", pinned to the {self.placement}'s CPUs"
        if self.auth != "scram-sha-256":
            text += f", {self.auth} logins"
        return text


@dataclass(frozen=True)
class Variant:
    """A named set of differences from the base sweep: the protocol, pipeline mode,
    a new connection per transaction (-C), pacing (rate, think time), a pooler in
    front, idle sessions beside the workers, server settings (a restart)."""

    name: str = "base"
    protocol: str = "prepared"
    pipeline: bool = False
    connect_per_txn: bool = False
    rate: float | None = None  # open loop: a target rate in TPS (pgbench --rate)
    think_ms: float = 0.0  # a pause after each transaction (\\sleep), connection held idle
    pooler: PoolerSpec | None = None
    idle: int = 0  # sessions held open beside the workers for the whole step
    idle_kind: str = "quiet"  # quiet: connected, nothing else; catalog: touched the catalogue; sleep: pg_sleep
    settings: tuple[tuple[str, str], ...] = ()  # embedded server settings for this variant's steps (a restart)

    def __post_init__(self) -> None:
        """Every variant passes here, from flags, a plan file or a stored plan alike."""
        if not isinstance(self.name, str) or not 1 <= len(self.name) <= MAX_VARIANT_NAME \
                or not self.name.isprintable():
            raise UserError(f"variant name {str(self.name)[:MAX_VARIANT_NAME]!r} must be 1-{MAX_VARIANT_NAME} "
                            "printable characters", "name it with --variant name=NAME:...")
        if self.protocol not in PROTOCOLS:
            raise UserError(f"unknown protocol {self.protocol!r}", f"choose one of {', '.join(PROTOCOLS)}")
        if self.pooler is not None and not isinstance(self.pooler, PoolerSpec):
            raise UserError(f"variant {self.name}: the pooler is not a pooler description")
        if not _whole(self.idle) or not 0 <= self.idle <= MAX_IDLE:
            raise UserError(f"variant {self.name}: idle={self.idle!r} must be a whole number from 0 to {MAX_IDLE}")
        if self.idle_kind not in IDLE_KINDS:
            raise UserError(f"variant {self.name}: unknown idle kind {self.idle_kind!r}",
                            f"choose one of {', '.join(IDLE_KINDS)}")
        if self.rate is not None and not (isinstance(self.rate, int | float) and self.rate > 0
                                          and math.isfinite(self.rate)):
            raise UserError(f"variant {self.name}: rate must be a positive number of TPS")
        if not isinstance(self.think_ms, int | float) or not 0 <= self.think_ms <= MAX_THINK_MS:
            raise UserError(f"variant {self.name}: think time must be between 0 and 60 s")
        if not isinstance(self.settings, tuple) or any(not isinstance(s, tuple) or len(s) != 2
                                                       for s in self.settings):
            raise UserError(f"variant {self.name}: settings must be NAME=VALUE pairs")
        for name, value in self.settings:
            check_setting(name, value, where=f"variant {self.name}: ")

    def describe(self) -> str:
        parts = [self.protocol]
        if self.pipeline:
            parts.append("pipeline")
        if self.connect_per_txn:
            parts.append("new connection per transaction (-C)")
        if self.rate:
            parts.append(f"open loop at {self.rate:g} TPS (--rate; latency from the scheduled start)")
        if self.think_ms:
            parts.append(f"think time {self.think_ms:g} ms after each transaction (not in the latency figures)")
        if self.pooler is not None:
            parts.append(self.pooler.describe())
        if self.idle:
            parts.append(f"{self.idle} idle sessions ({IDLE_KINDS[self.idle_kind]})")
        if self.settings:
            parts.append("server restarted with " + ", ".join(f"{k}={v}" for k, v in self.settings))
        return ", ".join(parts)


def variant_from_dict(d: dict[str, Any]) -> Variant:
    """A variant as stored in a run's plan (JSON), back, through the same checks as a variant
    given on the command line; keys a newer pgknee added are ignored."""
    known = {f.name for f in dataclasses.fields(Variant)}
    fields = {k: v for k, v in d.items() if k in known}
    if fields.get("pooler"):
        pooler_known = {f.name for f in dataclasses.fields(PoolerSpec)}
        fields["pooler"] = PoolerSpec(**{k: v for k, v in fields["pooler"].items() if k in pooler_known})
    fields["settings"] = tuple(tuple(s) for s in fields.get("settings", ()))
    return Variant(**fields)


# a stored plan gives the sweep's shape; the programs it ran are found again (or given as flags),
# never taken from the store, where a path could have been changed to run something else
_STORED_SWEEP_KEYS = ("duration_s", "reps", "summary", "noise_pct", "warmup_s", "threads", "max_tries",
                      "sample_interval_s", "os_interval_s", "pre_s", "post_s", "settle_s", "idle_flush_s",
                      "log_sampling_rate",
                      "pooler_dsn", "pooler_admin_dsn", "pooler_interval_s", "sample_all_databases",
                      "query_text")


def plan_from_stored(d: dict[str, Any], clients: tuple[int, ...], dsn: str | None = None,
                     binaries: dict[str, str | None] | None = None) -> Plan:
    """A run's stored plan (JSON) with other client counts: what pgknee run --extend runs. It
    passes every check a plan from flags passes. The stored DSN has no password; the
    environment or ~/.pgpass supplies it, or --dsn."""
    try:
        fields: dict[str, Any] = {k: d[k] for k in _STORED_SWEEP_KEYS if k in d}
        t = d.get("target") or {}
        fields["target"] = TargetSpec(dsn=dsn or t.get("dsn"), pg_bindir=(binaries or {}).get("pg_bindir"),
                                      settings=tuple(tuple(s) for s in t.get("settings", ())), keep=False)
        w = d.get("workload") or {}
        fields["workload"] = WorkloadSpec(name=w.get("name", "ewallet"), scale=w.get("scale", 1.0),
                                          schema=w.get("schema") or "", reinit=False,
                                          scripts=tuple((str(p), int(wt)) for p, wt in w.get("scripts", ())))
        if "variants" in d:
            fields["variants"] = tuple(variant_from_dict(v) for v in d["variants"])
        fields["clients"] = clients
        fields.update({k: v for k, v in (binaries or {}).items() if k in ("pgbench", "pgbouncer")})
        return Plan(**fields)
    except UserError as e:
        raise UserError(f"the stored plan does not pass pgknee's checks: {e.message}",
                        "pgknee runs a stored plan only as far as it would run the same flags") from None
    except (TypeError, ValueError, AttributeError, KeyError) as e:
        raise UserError(f"the stored plan is not one pgknee wrote ({type(e).__name__})",
                        "extend only runs made by pgknee; start a new run instead") from None


# names a user can give alone: what each one changes from the base
_VARIANT_TOKENS: dict[str, dict[str, Any]] = {
    "base": {}, "normal": {}, "direct": {},
    "pipeline": {"pipeline": True},
    "connect": {"connect_per_txn": True}, "connect-per-txn": {"connect_per_txn": True},
    **{p: {"protocol": p} for p in PROTOCOLS},
    "pooled": {"pooler_kind": "managed"}, "pgbouncer": {"pooler_kind": "managed"},
    "pooled-external": {"pooler_kind": "external"},
    **{m: {"pool_mode": m} for m in POOL_MODES},
}
_VARIANT_KEYS = ("name", "protocol", "pipeline", "connect", "rate", "think", "pool", "mode", "reserve", "placement",
                 "auth", "idle", "idle_kind", "max_connections", "set.NAME")
_POOLER_FIELDS = ("pool_mode", "pool_size", "pool_reserve", "placement", "pool_auth")
MAX_THINK_MS = 60_000.0
MAX_VARIANT_NAME = 100


def _whole(n: object) -> bool:
    return isinstance(n, int) and not isinstance(n, bool)


def _variant_value(key: str, value: str, spec: str, fields: dict[str, Any]) -> str | None:
    """One key=value part of a variant spec into `fields`; returns the name if it is one."""
    if key in ("idle", "idle_kind", "max_connections") or key.startswith("set."):
        _idle_or_setting(key, value, spec, fields)
        return None
    if key not in _VARIANT_KEYS:
        raise UserError(f"unknown key {key!r} in variant {spec!r}", f"variant keys: {', '.join(_VARIANT_KEYS)}")
    if key == "name":
        if not re.fullmatch(r"[A-Za-z0-9_.+-]{1,40}", value):
            raise UserError(f"variant name {value!r} must be 1-40 letters, digits or _.+-")
        return value
    if key == "rate":
        try:
            rate = float(value)
        except ValueError:
            rate = -1.0
        if not (rate > 0 and math.isfinite(rate)):
            raise UserError(f"rate={value!r} in variant {spec!r} must be a positive number of TPS",
                            "for example --variant rate=1000")
        fields["rate"] = rate
    elif key == "think":
        think_us = round(parse_seconds(value, f"think time in variant {spec!r}") * 1e6)
        if not 1 <= think_us <= MAX_THINK_MS * 1000:
            raise UserError(f"think={value!r} in variant {spec!r} must be between 1us and 60s",
                            "for example --variant think=50ms")
        fields["think_ms"] = think_us / 1000.0
    elif key in ("pool", "reserve", "mode", "placement", "auth"):
        _pooler_value(key, value, spec, fields)
    elif key == "protocol":
        if value not in PROTOCOLS:
            raise UserError(f"unknown protocol {value!r} in variant {spec!r}", f"choose one of {', '.join(PROTOCOLS)}")
        fields["protocol"] = value
    else:
        if value.lower() not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
            raise UserError(f"{key}={value!r} in variant {spec!r} must be on or off")
        fields["pipeline" if key == "pipeline" else "connect_per_txn"] = value.lower() in ("on", "true", "1", "yes")
    return None


def _idle_or_setting(key: str, value: str, spec: str, fields: dict[str, Any]) -> None:
    if key == "idle":
        if not value.isdigit() or int(value) > MAX_IDLE:
            raise UserError(f"idle={value!r} in variant {spec!r} must be a whole number from 0 to {MAX_IDLE}",
                            "for example --variant idle=1024")
        fields["idle"] = int(value)
    elif key == "idle_kind":
        if value not in IDLE_KINDS:
            raise UserError(f"unknown idle kind {value!r} in variant {spec!r}",
                            "idle_kind=quiet (connected, nothing else), catalog (after touching the catalogue, "
                            "article 004) or sleep (running pg_sleep, article 003)")
        fields["idle_kind"] = value
    else:
        name = key.removeprefix("set.")
        setting = parse_setting(f"{name}={value}")
        fields["settings"] = (*[s for s in fields.get("settings", ()) if s[0] != setting[0]], setting)


def _pooler_value(key: str, value: str, spec: str, fields: dict[str, Any]) -> None:
    if key in ("pool", "reserve"):
        if not value.isdigit() or not (1 if key == "pool" else 0) <= int(value) <= MAX_POOL:
            raise UserError(f"{key}={value!r} in variant {spec!r} must be a whole number "
                            f"{'from 1' if key == 'pool' else 'from 0'} to {MAX_POOL}",
                            "for example pooled:transaction:pool=20")
        fields["pool_size" if key == "pool" else "pool_reserve"] = int(value)
    elif key == "auth":
        if value not in (*POOLER_AUTH, "scram"):
            raise UserError(f"unknown auth {value!r} in variant {spec!r}",
                            "auth=scram (the default, as PostgreSQL) or auth=md5 (cheaper logins)")
        fields["pool_auth"] = "scram-sha-256" if value == "scram" else value
    elif key == "mode":
        if value not in POOL_MODES:
            raise UserError(f"unknown pool mode {value!r} in variant {spec!r}",
                            f"choose one of {', '.join(POOL_MODES)}")
        fields["pool_mode"] = value
    else:
        if value not in PLACEMENTS:
            raise UserError(f"unknown placement {value!r} in variant {spec!r}",
                            "placement=server (pgbouncer on the server's CPUs) or placement=client (on pgbench's)")
        fields["placement"] = value


def parse_variant(spec: str, base_protocol: str) -> Variant:
    """'pipeline', 'simple', 'connect', 'pipeline:extended', 'name=np:pipeline=on:protocol=extended',
    'rate=500' (open loop), 'think=50ms' (a pause after each transaction)."""
    fields: dict[str, Any] = {"protocol": base_protocol}
    name = None
    tokens = [t.strip() for t in spec.split(":")]
    if not spec.strip() or any(not t for t in tokens):
        raise UserError(f"variant {spec!r} is empty or has an empty part", "for example --variant pipeline")
    for tok in tokens:
        if "=" in tok:
            key, value = (x.strip() for x in tok.split("=", 1))
            name = _variant_value(key, value, spec, fields) or name
        elif tok in _VARIANT_TOKENS:
            fields.update(_VARIANT_TOKENS[tok])
        else:
            raise UserError(f"unknown variant {tok!r} in {spec!r}",
                            f"known: {', '.join(_VARIANT_TOKENS)}, or key=value with keys "
                            f"{', '.join(_VARIANT_KEYS)}")
    v = Variant(name=name or spec, **_with_pooler(fields, spec))
    if v.pipeline and v.protocol == "simple":
        raise UserError(f"variant {spec!r}: pipeline mode needs the extended or prepared protocol "
                        "(pgbench aborts pipelines under the simple protocol)",
                        "drop 'simple' or use --protocol prepared")
    return v


def _with_pooler(fields: dict[str, Any], spec: str) -> dict[str, Any]:
    """The flat pooler keys of a spec folded into a PoolerSpec. A mode or pool size
    alone means a managed pgbouncer."""
    out = {k: v for k, v in fields.items() if k not in (*_POOLER_FIELDS, "pooler_kind")}
    given = {k: fields[k] for k in _POOLER_FIELDS if k in fields}
    kind = fields.get("pooler_kind") or ("managed" if given else None)
    if kind is None:
        return out
    if kind == "external" and given:
        keys = {"pool_mode": "mode", "pool_size": "pool", "pool_reserve": "reserve", "placement": "placement",
                "pool_auth": "auth"}
        raise UserError(f"variant {spec!r}: {', '.join(keys[k] for k in given)} set a pgbouncer that pgknee starts; "
                        "your own pooler's settings apply as they are",
                        "drop them, or use 'pooled' for a pgbouncer pgknee manages")
    out["pooler"] = PoolerSpec(kind=kind, mode=given.get("pool_mode", "transaction"),
                               pool_size=given.get("pool_size", 20), reserve=given.get("pool_reserve", 0),
                               placement=given.get("placement", "any"), auth=given.get("pool_auth", "scram-sha-256"))
    return out


def parse_variants(spec: str, base_protocol: str) -> list[Variant]:
    """parse_variant, with a list of values for pool, idle or max_connections (pool=A,B,C)
    expanded into one variant per value: a sweep dimension."""
    m = re.search(r"(^|:)\s*(pool|idle|max_connections)\s*=\s*([0-9]+(?:\s*,\s*[0-9]+)+)\s*(?=:|$)", spec)
    if not m:
        return [parse_variant(spec, base_protocol)]
    out: list[Variant] = []
    for value in (s.strip() for s in m.group(3).split(",")):
        one = spec[:m.start(3)] + value + spec[m.end(3):]
        out.extend(dataclasses.replace(v, name=f"{v.name}-{m.group(2)}{value}")
                   if re.search(r"(^|:)\s*name\s*=", spec) else v for v in parse_variants(one, base_protocol))
    return out


WORKLOADS = ("ewallet", "tpcb", "select-only", "read-heavy", "custom")
PGBENCH_WORKLOADS = ("tpcb", "select-only", "read-heavy")


def parse_script(text: str) -> tuple[str, int]:
    """'read_heavy.sql@100' -> ('read_heavy.sql', 100); the weight defaults to 1."""
    path, sep, weight = text.rpartition("@")
    if not sep:
        return text, 1
    if not weight.isdigit() or int(weight) < 1:
        raise UserError(f"the weight in --script {text!r} must be a positive whole number",
                        "write it like --script read_heavy.sql@100")
    if not path:
        raise UserError(f"--script {text!r} has no file name")
    return path, int(weight)


def _check_workload(w: WorkloadSpec) -> None:
    if w.name not in WORKLOADS:
        raise UserError(f"unknown workload {w.name!r}", f"choose one of {', '.join(WORKLOADS)}")
    if w.name == "custom" and not w.scripts:
        raise UserError("--workload custom needs at least one --script FILE[@WEIGHT]")
    if w.name != "custom" and w.scripts:
        raise UserError("--script belongs to --workload custom", "add --workload custom")
    if w.name in ("tpcb", "select-only", "read-heavy") and (w.scale != int(w.scale) or w.scale < 1):
        raise UserError(f"--scale for {w.name} is pgbench's scale factor, a whole number of at least 1 "
                        f"(100,000 accounts each), got {w.scale:g}")


def _check_variants(variants: tuple[Variant, ...]) -> None:
    names = [v.name for v in variants]
    if not names or len(set(names)) != len(names):
        raise UserError(f"variant names must be unique, got {', '.join(names)}",
                        "name them with --variant name=NAME:...")
    for v in variants:
        if v.protocol not in PROTOCOLS:
            raise UserError(f"unknown protocol {v.protocol!r}", f"choose one of {', '.join(PROTOCOLS)}")
        if v.pipeline and v.protocol == "simple":
            raise UserError(f"variant {v.name!r}: pipeline mode needs the extended or prepared protocol",
                            "use --protocol prepared")
        if v.think_ms and v.rate:
            raise UserError(f"variant {v.name!r}: think time and a target rate both pace the clients",
                            "choose one: think=... (closed loop) or rate=... (open loop)")


@dataclass(frozen=True)
class TargetSpec:
    dsn: str | None = None  # None: the embedded throwaway cluster
    pg_bindir: str | None = None
    settings: tuple[tuple[str, str], ...] = ()
    keep: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.settings, tuple) or any(not isinstance(s, tuple) or len(s) != 2
                                                       for s in self.settings):
            raise UserError("server settings must be NAME=VALUE pairs")
        for name, value in self.settings:
            check_setting(name, value)


@dataclass(frozen=True)
class WorkloadSpec:
    name: str = "ewallet"  # ewallet | tpcb | select-only | read-heavy | custom
    scale: float = 1.0
    schema: str = ""  # '' : the workload's own (pgknee_ewallet, pgknee_pgbench)
    reinit: bool = False
    scripts: tuple[tuple[str, int], ...] = ()  # custom: (path, weight)

    def __post_init__(self) -> None:
        if not self.schema:
            object.__setattr__(self, "schema", default_schema(self.name))
        check_schema_name(self.schema)


def default_schema(workload: str) -> str:
    """Where a built-in workload lives: a schema pgknee creates and marks as its own."""
    return "pgknee_pgbench" if workload in PGBENCH_WORKLOADS else "pgknee_ewallet"


def check_schema_name(name: object) -> str:
    if not isinstance(name, str) or not re.fullmatch(r"[a-z_][a-z0-9_]{0,62}", name):
        shown = str(name)[:64]
        raise UserError(f"schema name {shown!r} is not a plain lower-case identifier",
                        "letters, digits and underscores, at most 63, e.g. --schema bench_a")
    if name == "public" or name == "information_schema" or name.startswith("pg_"):
        raise UserError(f"schema {name!r} is PostgreSQL's own or shared: pgknee keeps its workload apart",
                        "choose a schema of pgknee's, e.g. --schema bench_a (the default is pgknee_ewallet)")
    return name


@dataclass(frozen=True)
class Plan:
    target: TargetSpec = field(default_factory=TargetSpec)
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    clients: tuple[int, ...] = DEFAULT_CLIENTS
    duration_s: int = 60
    reps: int = 1
    summary: str = DEFAULT_SUMMARY  # over repetitions: rules.SUMMARIES
    noise_pct: float = DEFAULT_NOISE_PCT  # a step whose repetitions' TPS spread exceeds this is flagged noisy
    warmup_s: int = 0
    threads: int | None = None  # None: chosen per step
    max_tries: int = 3
    variants: tuple[Variant, ...] = (Variant(),)
    sample_interval_s: float = 0.1  # 0: no pg_stat_activity sampling
    os_interval_s: float = 1.0
    pre_s: float = 1.0  # sampled before pgbench starts, in each step
    post_s: float = 1.0  # sampled after it ends
    settle_s: float = 3.0  # the longest wait for pg_stat_database to stop moving after a step
    idle_flush_s: float = 11.0  # idle sessions that read the catalogue report to pg_stat_database within 10 s
    log_sampling_rate: float = 1.0
    pgbench: str | None = None
    pgbouncer: str | None = None  # the binary for managed pooled variants (default: from PATH)
    pooler_dsn: str | None = None  # a pgbouncer the user runs (pooled-external variants)
    pooler_admin_dsn: str | None = None  # its admin console, for SHOW POOLS / SHOW STATS
    pooler_interval_s: float = 0.25  # SHOW POOLS sampling
    sample_all_databases: bool = False  # sample every database's sessions, not only the benchmark's
    query_text: bool = True  # store the sampled sessions' query texts

    def __post_init__(self) -> None:
        self._check_types()
        if self.duration_s < 1:
            raise UserError("--duration must be at least 1 second")
        if self.reps < 1:
            raise UserError("--reps must be at least 1")
        if self.summary not in SUMMARIES:
            raise UserError(f"unknown summary {self.summary!r}", f"choose {' or '.join(SUMMARIES)}")
        check_noise_pct(self.noise_pct)
        if self.warmup_s < 0:
            raise UserError("--warmup cannot be negative")
        if self.threads is not None and self.threads < 1:
            raise UserError("--threads must be at least 1")
        if self.max_tries < 1:
            raise UserError("--max-tries must be at least 1")
        if not self.clients:
            raise UserError("the client list is empty", "give client counts like --clients 2,4,8,16,32")
        if self.sample_interval_s != 0 and self.sample_interval_s < 0.01:
            raise UserError("--sample-interval must be at least 10ms (or 0 to switch sampling off)")
        if self.os_interval_s != 0 and self.os_interval_s < 0.1:
            raise UserError("--os-interval must be at least 100ms (or 0 to switch OS sampling off)")
        if not 0 < self.log_sampling_rate <= 1:
            raise UserError("--log-sampling-rate must be in (0, 1]")
        if self.workload.scale <= 0 or not math.isfinite(self.workload.scale):
            raise UserError("--scale must be a positive number")
        _check_variants(self.variants)
        self._check_pooler()
        self._check_settings_variants()
        _check_workload(self.workload)

    def _check_types(self) -> None:
        """A plan may come from a stored run: numbers must be numbers before they are compared."""
        for name in ("duration_s", "reps", "warmup_s", "max_tries"):
            if not _whole(getattr(self, name)):
                raise UserError(f"{name} must be a whole number, got {getattr(self, name)!r}")
        if not isinstance(self.clients, tuple) or not all(_whole(c) and c >= 1 for c in self.clients):
            raise UserError("client counts must be whole numbers of at least 1")
        for name in ("noise_pct", "sample_interval_s", "os_interval_s", "pre_s", "post_s", "settle_s", "idle_flush_s",
                     "log_sampling_rate",
                     "pooler_interval_s"):
            if not isinstance(getattr(self, name), int | float) or isinstance(getattr(self, name), bool):
                raise UserError(f"{name} must be a number, got {getattr(self, name)!r}")

    def _check_pooler(self) -> None:
        external = [v.name for v in self.variants if v.pooler is not None and v.pooler.kind == "external"]
        if external and not self.pooler_dsn:
            raise UserError(f"variant {external[0]} runs through your own pooler, but no --pooler-dsn was given",
                            "add --pooler-dsn postgresql://user@host:6432/db (the password in PGKNEE_POOLER_DSN "
                            "or ~/.pgpass)")
        if self.pooler_dsn and not external:
            raise UserError("--pooler-dsn is only used by a pooled-external variant",
                            "add --variant pooled-external, or drop --pooler-dsn")
        if self.pooler_admin_dsn and not self.pooler_dsn:
            raise UserError("--pooler-admin-dsn needs --pooler-dsn (the pooler it belongs to)")
        if self.pooler_interval_s < 0.05:
            raise UserError("--pooler-interval must be at least 50ms")

    def _check_settings_variants(self) -> None:
        for v in self.variants:
            if v.settings and self.target.dsn:
                raise UserError(f"variant {v.name} changes server settings ({', '.join(k for k, _ in v.settings)}), "
                                "which pgknee does only on its embedded server",
                                "run once per setting against your server and compare: pgknee compare RUN_A RUN_B")

    def pooled(self) -> list[Variant]:
        return [v for v in self.variants if v.pooler is not None]

    def threads_for(self, clients: int, cpu_count: int) -> int:
        """pgbench threads: one per CPU of the client machine, never more than clients."""
        if self.threads is not None:
            return min(self.threads, clients)
        return max(1, min(clients, cpu_count))

    def estimated_seconds(self) -> float:
        per_step = self.duration_s + self.warmup_s + self.pre_s + self.post_s + 2.0
        # opening idle sessions (measured on 2 cores: 0.003 s each, 0.35 s each touching the
        # catalogue, then the wait for their statistics), restarts for a variant's settings
        extra = sum(v.idle * (0.35 if v.idle_kind == "catalog" else 0.003)
                    + (self.idle_flush_s if v.idle_kind == "catalog" else 0) + (3.0 if v.settings else 0.0)
                    for v in self.variants)
        return (per_step * len(self.variants) + extra) * len(self.clients) * self.reps

    def to_dict(self) -> dict[str, Any]:
        """For storing with the run; the DSN is stored without its password."""
        from pgknee.targets.conninfo import redact_dsn

        d = asdict(self)
        d["target"]["dsn"] = redact_dsn(self.target.dsn) if self.target.dsn else None
        for key in ("pooler_dsn", "pooler_admin_dsn"):
            d[key] = redact_dsn(d[key]) if d[key] else None
        return d


# ---- plans from flags and files ------------------------------------------------------------------
# One flat set of keys: the `run` flags' names (dest) and the plan file's keys per section.
PLAN_FILE_KEYS: dict[str, dict[str, str]] = {
    "target": {"dsn": "dsn", "pg_bindir": "pg_bindir", "keep": "keep", "settings": "settings"},
    "workload": {"name": "workload", "scale": "scale", "schema": "schema", "reinit": "reinit",
                 "scripts": "scripts"},
    "sweep": {"clients": "clients", "duration": "duration", "reps": "reps", "summary": "summary",
              "noise_threshold": "noise_threshold",
              "warmup": "warmup", "threads": "threads", "protocol": "protocol", "max_tries": "max_tries",
              "variants": "variants", "pgbench": "pgbench"},
    "pooler": {"pgbouncer": "pgbouncer", "dsn": "pooler_dsn", "admin_dsn": "pooler_admin_dsn",
               "interval": "pooler_interval"},
    "collect": {"sample_interval": "sample_interval", "os_interval": "os_interval",
                "log_sampling_rate": "log_sampling_rate", "sample_all_databases": "sample_all_databases",
                "query_text": "query_text", "pre": "pre", "post": "post", "settle": "settle",
                "idle_flush": "idle_flush"},
}
DEFAULTS: dict[str, Any] = {
    "dsn": None, "pg_bindir": None, "keep": False, "settings": [], "workload": "ewallet", "scale": 1.0,
    "schema": "", "reinit": False, "scripts": [], "clients": ",".join(map(str, DEFAULT_CLIENTS)),
    "duration": "60s", "reps": 1, "summary": DEFAULT_SUMMARY, "warmup": "0", "threads": None, "protocol": "prepared",
    "max_tries": 3, "variants": [], "pgbench": None, "sample_interval": "100ms", "os_interval": "1s",
    "log_sampling_rate": 1.0, "noise_threshold": DEFAULT_NOISE_PCT, "pgbouncer": None, "pooler_dsn": None,
    "pooler_admin_dsn": None, "pooler_interval": "250ms", "sample_all_databases": False, "query_text": True,
    "pre": "1s", "post": "1s", "settle": "3s", "idle_flush": "11s",
}
_TYPES: dict[str, tuple[type, ...]] = {
    "dsn": (str,), "pg_bindir": (str,), "keep": (bool,), "settings": (dict, list), "workload": (str,),
    "scale": (int, float), "schema": (str,), "reinit": (bool,), "scripts": (list,), "clients": (str, list, int),
    "duration": (str, int), "reps": (int,), "summary": (str,), "warmup": (str, int), "threads": (int,),
    "protocol": (str,), "max_tries": (int,), "variants": (list,), "pgbench": (str,),
    "sample_interval": (str, int, float), "os_interval": (str, int, float), "log_sampling_rate": (int, float),
    "noise_threshold": (int, float), "pgbouncer": (str,), "pooler_dsn": (str,), "pooler_admin_dsn": (str,),
    "pooler_interval": (str, int, float), "sample_all_databases": (bool,), "query_text": (bool,),
    "pre": (str, int, float), "post": (str, int, float), "settle": (str, int, float), "idle_flush": (str, int, float),
}


_SECRET_BEARING = ("dsn", "pooler_dsn", "pooler_admin_dsn")


@dataclass(frozen=True)
class PlanFile:
    path: str
    text: str
    values: dict[str, Any]
    lines: dict[str, int]  # flat key -> line in the file

    def where(self, key: str) -> str:
        return f"{self.path}:{self.lines[key]}: " if key in self.lines else ""


def _key_line(text: str, section: str, key: str) -> int:
    """The line of `key = ...` in [section], or of a [section.key] table header."""
    current = ""
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if line.startswith("["):
            name = line.strip("[] ")
            if name == f"{section}.{key}":
                return i
            current = name.split(".")[0]
        elif current == section and re.match(rf"^{re.escape(key)}\s*=", line):
            return i
    return 0


def load_plan_file(path: str, *, small_machine: bool = False) -> PlanFile:
    """A TOML plan: every key checked, errors naming the key and its line. A [small_machine]
    section (scenarios) holds values that replace the others when `small_machine`."""
    import tomllib

    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise UserError(f"cannot read the plan {path}: {e.strerror}", "check the path") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise UserError(f"{path}: not valid TOML: {e}", "see https://toml.io for the syntax") from None
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    small = data.pop("small_machine", {})
    if not isinstance(small, dict):
        raise UserError(f"{path}: small_machine must be a table")
    small.pop("note", None)
    sections = list(data.items()) + (list(small.items()) if small_machine else [])
    for section, body in sections:
        if section in ("description", "article"):
            continue
        known = PLAN_FILE_KEYS.get(section)
        if known is None or not isinstance(body, dict):
            raise UserError(f"{path}:{_section_line(text, section)}: unknown section [{section}]",
                            f"sections: {', '.join(PLAN_FILE_KEYS)}")
        for key, value in body.items():
            line = _key_line(text, section, key)
            if key not in known:
                raise UserError(f"{path}:{line}: unknown key {key!r} in [{section}]",
                                f"keys of [{section}]: {', '.join(known)}")
            flat = known[key]
            if not isinstance(value, _TYPES[flat]) or (isinstance(value, bool) and bool not in _TYPES[flat]):
                names = " or ".join(t.__name__.replace("str", "string").replace("int", "whole number")
                                    .replace("float", "number").replace("list", "list").replace("dict", "table")
                                    for t in _TYPES[flat])
                got = type(value).__name__ if flat in _SECRET_BEARING else repr(value)  # a DSN may hold a password
                raise UserError(f"{path}:{line}: [{section}] {key} must be a {names}, got {got}")
            values[flat] = value
            lines[flat] = line
    return PlanFile(path, text, values, lines)


def _section_line(text: str, section: str) -> int:
    for i, raw in enumerate(text.splitlines(), 1):
        if raw.strip().startswith(f"[{section}") or re.match(rf"^{re.escape(section)}\s*=", raw.strip()):
            return i
    return 0


def plan_from_values(flags: dict[str, Any], source: PlanFile | None = None) -> Plan:
    """A plan file's values with the flags given on top (flags win) -> validated Plan.
    Errors in a value from the file carry its file and line."""
    v = {**DEFAULTS, **(source.values if source else {}), **flags}

    def at(key: str) -> str:
        return source.where(key) if source is not None and key not in flags else ""

    def label(key: str) -> str:
        """How the user wrote it: --flag-name, or the plan file's key."""
        return f"--{key.replace('_', '-')}" if source is None or key in flags else key

    def parse(key: str, fn: Any) -> Any:
        try:
            return fn(v[key])
        except UserError as e:
            raise UserError(at(key) + e.message, e.hint) from None

    def as_list(x: Any) -> list[str]:
        if isinstance(x, dict):
            return [f"{k}={val}" for k, val in x.items()]
        return [str(i) for i in x]

    def clients(x: Any) -> tuple[int, ...]:
        if isinstance(x, list):
            x = ",".join(str(i) for i in x)
        return parse_clients(str(x))

    settings = parse("settings", lambda x: tuple(parse_setting(s) for s in as_list(x)))
    scripts = parse("scripts", lambda x: tuple(parse_script(s) for s in as_list(x)))
    variants = parse("variants", lambda x: tuple(var for s in as_list(x) for var in parse_variants(s, v["protocol"])))
    try:
        return Plan(
            target=TargetSpec(dsn=v["dsn"] or None, pg_bindir=v["pg_bindir"], settings=settings, keep=bool(v["keep"])),
            workload=WorkloadSpec(name=v["workload"], scale=float(v["scale"]), schema=v["schema"],
                                  reinit=bool(v["reinit"]), scripts=scripts),
            clients=parse("clients", clients),
            duration_s=int(parse("duration", lambda x: parse_seconds(str(x), label("duration"), whole=True))),
            reps=int(v["reps"]), summary=v["summary"],
            noise_pct=float(parse("noise_threshold", lambda x: check_noise_pct(float(x)))),
            warmup_s=int(parse("warmup", lambda x: parse_seconds(str(x), label("warmup"), allow_zero=True,
                                                                 whole=True))),
            threads=v["threads"], max_tries=int(v["max_tries"]),
            variants=variants or (Variant(protocol=v["protocol"]),),
            sample_interval_s=parse("sample_interval", lambda x: parse_seconds(str(x), label("sample_interval"),
                                                                               allow_zero=True)),
            os_interval_s=parse("os_interval", lambda x: parse_seconds(str(x), label("os_interval"), allow_zero=True)),
            log_sampling_rate=float(v["log_sampling_rate"]), pgbench=v["pgbench"], pgbouncer=v["pgbouncer"],
            pooler_dsn=v["pooler_dsn"] or None, pooler_admin_dsn=v["pooler_admin_dsn"] or None,
            pooler_interval_s=parse("pooler_interval", lambda x: parse_seconds(str(x), label("pooler_interval"))),
            sample_all_databases=bool(v["sample_all_databases"]), query_text=bool(v["query_text"]),
            **{f"{k}_s": parse(k, lambda x, k=k: parse_seconds(str(x), label(k), allow_zero=True))
               for k in ("pre", "post", "settle", "idle_flush")})
    except UserError as e:
        if source is not None and not e.message.startswith(source.path):
            raise UserError(f"{source.path}: {e.message}", e.hint) from None
        raise
