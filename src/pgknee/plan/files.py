"""Plans from flags and TOML files: one flat set of keys (the run flags' names), every key
of a file checked and its line remembered for the error message."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgknee.base.errors import UserError
from pgknee.model.rules import DEFAULT_NOISE_PCT, DEFAULT_SUMMARY, check_noise_pct
from pgknee.plan.model import Plan, TargetSpec, Variant, WorkloadSpec
from pgknee.plan.parse import (
    DEFAULT_CLIENTS,
    clients_text,
    parse_clients,
    parse_memory_gb,
    parse_percent,
    parse_script,
    parse_seconds,
    parse_step_duration,
)
from pgknee.plan.serverconf import parse_setting
from pgknee.plan.variants import parse_variants, with_network

# One flat set of keys: the `run` flags' names (dest) and the plan file's keys per section.
PLAN_FILE_KEYS: dict[str, dict[str, str]] = {
    "target": {"target": "target", "dsn": "dsn", "pg_bindir": "pg_bindir", "keep": "keep", "settings": "settings",
               "server_cpus": "server_cpus", "server_memory": "server_memory", "server_ssh": "server_ssh",
               "server_ssh_config": "server_ssh_config"},
    "workload": {"name": "workload", "scale": "scale", "schema": "schema", "reinit": "reinit",
                 "scripts": "scripts", "allow_writes": "allow_writes"},
    "sweep": {"clients": "clients", "duration": "duration", "reps": "reps", "summary": "summary",
              "noise_threshold": "noise_threshold",
              "warmup": "warmup", "threads": "threads", "protocol": "protocol", "max_tries": "max_tries",
              "variants": "variants", "pgbench": "pgbench", "server_wait": "server_wait",
              "steady_target": "steady_target", "until_answer": "until_answer", "budget": "budget",
              "rtt": "rtt", "rtt_jitter": "rtt_jitter"},
    "pooler": {"pgbouncer": "pgbouncer", "pgpool": "pgpool", "dsn": "pooler_dsn", "admin_dsn": "pooler_admin_dsn",
               "interval": "pooler_interval"},
    "collect": {"sample_interval": "sample_interval", "os_interval": "os_interval",
                "log_sampling_rate": "log_sampling_rate", "sample_all_databases": "sample_all_databases",
                "query_text": "query_text", "pre": "pre", "post": "post", "settle": "settle",
                "idle_flush": "idle_flush"},
}
DEFAULTS: dict[str, Any] = {
    "target": None, "dsn": None, "pg_bindir": None, "keep": False, "settings": [], "workload": "ewallet", "scale": 1.0,
    "server_cpus": None, "server_memory": None, "server_ssh": None, "server_ssh_config": None,
    "schema": "", "reinit": False, "scripts": [], "allow_writes": False, "clients": ",".join(map(str, DEFAULT_CLIENTS)),
    "duration": "60s", "reps": 1, "summary": DEFAULT_SUMMARY, "warmup": "0", "threads": None, "protocol": "prepared",
    "max_tries": 3, "variants": [], "pgbench": None, "sample_interval": "100ms", "os_interval": "1s",
    "log_sampling_rate": None, "steady_target": "2%", "noise_threshold": DEFAULT_NOISE_PCT, "pgbouncer": None,
    "pgpool": None, "pooler_dsn": None,
    "pooler_admin_dsn": None, "pooler_interval": "250ms", "sample_all_databases": False, "query_text": True,
    "pre": "5s", "post": "1s", "settle": "3s", "idle_flush": "11s", "server_wait": "120s",
    "until_answer": False, "budget": None, "rtt": None, "rtt_jitter": None,
}
_TYPES: dict[str, tuple[type, ...]] = {
    "target": (str,), "dsn": (str,), "pg_bindir": (str,), "keep": (bool,), "settings": (dict, list), "workload": (str,),
    "server_cpus": (int,), "server_memory": (str, int, float), "server_ssh": (str,), "server_ssh_config": (str,),
    "scale": (int, float), "schema": (str,), "reinit": (bool,), "scripts": (list,), "clients": (str, list, int),
    "duration": (str, int), "reps": (int,), "summary": (str,), "warmup": (str, int), "threads": (int,),
    "protocol": (str,), "max_tries": (int,), "variants": (list,), "pgbench": (str,),
    "sample_interval": (str, int, float), "os_interval": (str, int, float), "log_sampling_rate": (int, float),
    "noise_threshold": (int, float), "pgbouncer": (str,), "pgpool": (str,), "pooler_dsn": (str,),
    "pooler_admin_dsn": (str,),
    "pooler_interval": (str, int, float), "sample_all_databases": (bool,), "query_text": (bool,),
    "pre": (str, int, float), "post": (str, int, float), "settle": (str, int, float), "idle_flush": (str, int, float),
    "server_wait": (str, int, float), "steady_target": (str, int, float), "until_answer": (bool,),
    "budget": (str, int, float), "rtt": (str, int, float), "rtt_jitter": (str, int, float), "allow_writes": (bool,),
}


_SECRET_BEARING = ("dsn", "pooler_dsn", "pooler_admin_dsn")


@dataclass(frozen=True)
class PlanFile:
    path: str
    text: str
    values: dict[str, Any]
    lines: dict[str, int]  # flat key -> line in the file

    @property
    def given(self) -> bool:
        """A file was read (NO_FILE: the plan is the flags alone)."""
        return bool(self.path)

    def where(self, key: str) -> str:
        return f"{self.path}:{self.lines[key]}: " if key in self.lines else ""


NO_FILE = PlanFile("", "", {}, {})  # no plan file: no values, no lines (a file read always has its path)


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


class _Values:
    """A plan file's values with the flags given on top (flags win), parsed one key at a time;
    an error in a value from the file carries its file and line, one from a flag its --name."""

    def __init__(self, flags: dict[str, Any], source: PlanFile) -> None:
        self.flags, self.source = flags, source
        self.v = {**DEFAULTS, **source.values, **flags}

    def label(self, key: str) -> str:
        return f"--{key.replace('_', '-')}" if not self.source.given or key in self.flags else key

    def parse(self, key: str, fn: Any) -> Any:
        try:
            return fn(self.v[key])
        except UserError as e:
            where = self.source.where(key) if key not in self.flags else ""  # NO_FILE's where is ""
            raise UserError(where + e.message, e.hint) from None

    def optional(self, key: str, fn: Any) -> Any:
        """fn of the key's value, or None when it has none (its default, and neither the file nor a
        flag gives one)."""
        return None if self.v[key] is None else self.parse(key, fn)

    def seconds(self, key: str, *, allow_zero: bool = True, whole: bool = False) -> float:
        return float(self.parse(key, lambda x: parse_seconds(str(x), self.label(key), allow_zero=allow_zero,
                                                             whole=whole)))

    def items(self, key: str, fn: Any) -> tuple[Any, ...]:
        """A list (or a table, as NAME=VALUE) of values, each parsed by fn into one or more."""
        def each(x: Any) -> tuple[Any, ...]:
            texts = [f"{k}={val}" for k, val in x.items()] if isinstance(x, dict) else [str(i) for i in x]
            return tuple(out for t in texts for out in fn(t))
        return tuple(self.parse(key, each))


def _clients(x: Any) -> tuple[int, ...]:
    return parse_clients(clients_text(x))


def plan_from_values(flags: dict[str, Any], source: PlanFile = NO_FILE) -> Plan:
    """A plan file's values with the flags given on top (flags win) -> validated Plan."""
    p = _Values(flags, source)
    v = p.v
    net = tuple(str(v[k]) if v[k] is not None else None for k in ("rtt", "rtt_jitter"))
    variants = p.items("variants", lambda s: parse_variants(with_network(s, *net), v["protocol"]))
    if not variants and any(net):
        variants = tuple(parse_variants(with_network("base", *net), v["protocol"]))
    duration_s, auto = p.parse("duration", lambda x: parse_step_duration(str(x), p.label("duration")))
    try:
        return Plan(
            target=TargetSpec(dsn=v["dsn"] or None, pg_bindir=v["pg_bindir"], keep=bool(v["keep"]),
                              settings=p.items("settings", lambda s: (parse_setting(s),)),
                              server_cpus=v["server_cpus"], server_ssh=v["server_ssh"] or None,
                              server_ssh_config=v["server_ssh_config"] or None,
                              server_memory_gb=p.optional("server_memory", lambda x: parse_memory_gb(
                                  str(x), p.label("server_memory")))),
            workload=WorkloadSpec(name=v["workload"], scale=float(v["scale"]), schema=v["schema"],
                                  reinit=bool(v["reinit"]), scripts=p.items("scripts", lambda s: (parse_script(s),)),
                                  allow_writes=bool(v["allow_writes"])),
            clients=p.parse("clients", _clients), duration_s=duration_s,
            steady_pct=p.parse("steady_target", lambda x: parse_percent(str(x), p.label("steady_target")))
            if auto else None,
            reps=int(v["reps"]), summary=v["summary"],
            noise_pct=float(p.parse("noise_threshold", lambda x: check_noise_pct(float(x)))),
            warmup_s=int(p.seconds("warmup", whole=True)), threads=v["threads"], max_tries=int(v["max_tries"]),
            variants=variants or (Variant(protocol=v["protocol"]),),
            sample_interval_s=p.seconds("sample_interval"), os_interval_s=p.seconds("os_interval"),
            log_sampling_rate=p.optional("log_sampling_rate", float),
            pgbench=v["pgbench"], pgbouncer=v["pgbouncer"], pgpool=v["pgpool"],
            pooler_dsn=v["pooler_dsn"] or None, pooler_admin_dsn=v["pooler_admin_dsn"] or None,
            pooler_interval_s=p.seconds("pooler_interval", allow_zero=False),
            sample_all_databases=bool(v["sample_all_databases"]), query_text=bool(v["query_text"]),
            pre_s=p.seconds("pre"), post_s=p.seconds("post"), settle_s=p.seconds("settle"),
            idle_flush_s=p.seconds("idle_flush"), server_wait_s=p.seconds("server_wait"),
            until_answer=bool(v["until_answer"]),
            budget_s=p.optional("budget", lambda x: parse_seconds(str(x), p.label("budget"), allow_zero=False)))
    except UserError as e:
        if source.given and not e.message.startswith(source.path):
            raise UserError(f"{source.path}: {e.message}", e.hint) from None
        raise
