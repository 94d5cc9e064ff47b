"""Variant specs as users write them (pipeline, connect, pooled:transaction:pool=20,
idle=0,256,1024:idle_kind=sleep, name=np:pipeline=on:protocol=extended, rate=500, think=50ms),
parsed into Variant records; a list of values for pool, idle or max_connections expands
into one variant per value."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any

from pgknee.base.errors import UserError
from pgknee.plan.model import (
    IDLE_KINDS,
    MAX_IDLE,
    MAX_POOL,
    MAX_POOLER_PROCESSES,
    MAX_THINK_MS,
    PLACEMENTS,
    POOL_MODES,
    POOLER_AUTH,
    PROTOCOLS,
    PoolerSpec,
    Variant,
)
from pgknee.plan.parse import parse_seconds
from pgknee.plan.serverconf import parse_setting

_VARIANT_TOKENS: dict[str, dict[str, Any]] = {
    "base": {}, "normal": {}, "direct": {},
    "pipeline": {"pipeline": True},
    "connect": {"connect_per_txn": True}, "connect-per-txn": {"connect_per_txn": True},
    **{p: {"protocol": p} for p in PROTOCOLS},
    "pooled": {"pooler_kind": "managed"}, "pgbouncer": {"pooler_kind": "managed"},
    "pooled-external": {"pooler_kind": "external"}, "pgpool": {"pooler_kind": "pgpool"},
    **{m: {"pool_mode": m} for m in POOL_MODES},
}
_VARIANT_KEYS = ("name", "protocol", "pipeline", "connect", "rate", "think", "pool", "mode", "reserve", "placement",
                 "auth", "processes", "idle", "idle_kind", "max_connections", "rtt", "rtt_jitter", "set.NAME")
_POOLER_FIELDS = ("pool_mode", "pool_size", "pool_reserve", "placement", "pool_auth", "pool_processes")


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
    if key in ("pool", "reserve", "mode", "placement", "auth", "processes"):
        _pooler_value(key, value, spec, fields)
    else:
        _VALUE_PARSERS[key](value, spec, fields)
    return None


def _rate(value: str, spec: str, fields: dict[str, Any]) -> None:
    try:
        rate = float(value)
    except ValueError:
        rate = -1.0
    if not (rate > 0 and math.isfinite(rate)):
        raise UserError(f"rate={value!r} in variant {spec!r} must be a positive number of TPS",
                        "for example --variant rate=1000")
    fields["rate"] = rate


def _think(value: str, spec: str, fields: dict[str, Any]) -> None:
    think_us = round(parse_seconds(value, f"think time in variant {spec!r}") * 1e6)
    if not 1 <= think_us <= MAX_THINK_MS * 1000:
        raise UserError(f"think={value!r} in variant {spec!r} must be between 1us and 60s",
                        "for example --variant think=50ms")
    fields["think_ms"] = think_us / 1000.0


def _rtt(field_name: str) -> Any:
    def parse(value: str, spec: str, fields: dict[str, Any]) -> None:
        key = field_name.removesuffix("_ms")
        if re.fullmatch(r"\s*[0-9.]+\s*", value) and float(value) != 0:
            raise UserError(f"{key}={value!r} in variant {spec!r} has no unit",
                            f"write it like {key}=1ms, {key}=500us or {key}=0")
        fields[field_name] = round(parse_seconds(value, f"{key} in variant {spec!r}", allow_zero=True) * 1000.0, 6)
    return parse


def _protocol(value: str, spec: str, fields: dict[str, Any]) -> None:
    if value not in PROTOCOLS:
        raise UserError(f"unknown protocol {value!r} in variant {spec!r}", f"choose one of {', '.join(PROTOCOLS)}")
    fields["protocol"] = value


def _on_off(field_name: str) -> Any:
    def parse(value: str, spec: str, fields: dict[str, Any]) -> None:
        if value.lower() not in ("on", "off", "true", "false", "1", "0", "yes", "no"):
            raise UserError(f"{value!r} in variant {spec!r} must be on or off")
        fields[field_name] = value.lower() in ("on", "true", "1", "yes")
    return parse


_VALUE_PARSERS = {"rate": _rate, "think": _think, "protocol": _protocol, "pipeline": _on_off("pipeline"),
                  "connect": _on_off("connect_per_txn"), "rtt": _rtt("rtt_ms"), "rtt_jitter": _rtt("rtt_jitter_ms")}


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


_POOL_NUMBERS = {"pool": ("pool_size", 1), "reserve": ("pool_reserve", 0)}  # the field each sets, its least


def _pooler_value(key: str, value: str, spec: str, fields: dict[str, Any]) -> None:
    if key in _POOL_NUMBERS:
        field, low = _POOL_NUMBERS[key]
        if not value.isdigit() or not low <= int(value) <= MAX_POOL:
            raise UserError(f"{key}={value!r} in variant {spec!r} must be a whole number from {low} to {MAX_POOL}",
                            "for example pooled:transaction:pool=20")
        fields[field] = int(value)
    elif key == "processes":
        if not value.isdigit() or not 1 <= int(value) <= MAX_POOLER_PROCESSES:
            raise UserError(f"processes={value!r} in variant {spec!r} must be a whole number from 1 to "
                            f"{MAX_POOLER_PROCESSES}", "for example pooled:transaction:pool=8:processes=2")
        fields["pool_processes"] = int(value)
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
    if kind == "pgpool" and set(given) - {"pool_size", "placement"}:
        keys = {"pool_mode": "mode", "pool_reserve": "reserve", "pool_auth": "auth", "pool_processes": "processes"}
        raise UserError(f"variant {spec!r}: {', '.join(keys[k] for k in given if k in keys)} set a pgbouncer; "
                        "pgpool-II takes pool= (its children) and placement= only",
                        "for example pgpool:pool=8, or pooled:transaction:pool=8 for pgbouncer")
    if kind == "external" and given:
        keys = {"pool_mode": "mode", "pool_size": "pool", "pool_reserve": "reserve", "placement": "placement",
                "pool_auth": "auth", "pool_processes": "processes"}
        raise UserError(f"variant {spec!r}: {', '.join(keys[k] for k in given)} set a pgbouncer that pgknee starts; "
                        "your own pooler's settings apply as they are",
                        "drop them, or use 'pooled' for a pgbouncer pgknee manages")
    out["pooler"] = PoolerSpec(kind=kind, mode=given.get("pool_mode", "transaction"),
                               pool_size=given.get("pool_size", 20), reserve=given.get("pool_reserve", 0),
                               placement=given.get("placement", "any"), auth=given.get("pool_auth", "scram-sha-256"),
                               processes=given.get("pool_processes", 1))
    return out


def parse_variants(spec: str, base_protocol: str) -> list[Variant]:
    """parse_variant, with a list of values for pool, processes, idle, max_connections or rtt
    (pool=A,B,C, processes=1,2,4, rtt=0,1ms,5ms) expanded into one variant per value: a sweep dimension."""
    m = re.search(r"(^|:)\s*(pool|processes|idle|max_connections|rtt)\s*=\s*"
                  r"([0-9.]+[a-z]*(?:\s*,\s*[0-9.]+[a-z]*)+)\s*(?=:|$)", spec)
    if not m:
        return [parse_variant(spec, base_protocol)]
    out: list[Variant] = []
    for value in (s.strip() for s in m.group(3).split(",")):
        one = spec[:m.start(3)] + value + spec[m.end(3):]
        out.extend(dataclasses.replace(v, name=f"{v.name}-{m.group(2)}{value}")
                   if re.search(r"(^|:)\s*name\s*=", spec) else v for v in parse_variants(one, base_protocol))
    return out


def with_network(spec: str, rtt: str | None, jitter: str | None) -> str:
    """A variant spec with the run's --rtt and --rtt-jitter added, where it sets none of its own."""
    keys = {t.split("=", 1)[0].strip() for t in spec.split(":") if "=" in t}
    extra = [f"{k}={x}" for k, x in (("rtt", rtt), ("rtt_jitter", jitter)) if x not in (None, "") and k not in keys]
    return ":".join([spec, *extra])
