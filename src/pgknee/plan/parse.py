"""The small languages of a plan's values: durations (180s, 3m, 500ms), client lists and
ranges (2,4,8; 50:1000:50; 2:64:x2) and script files with weights (read_heavy.sql@100)."""

from __future__ import annotations

import math
import re

from pgknee.base.errors import UserError

DEFAULT_CLIENTS = (2, 4, 8, 16, 32)
MAX_STEPS = 1000
_DURATION_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|sec|m|min|h)?\s*$", re.IGNORECASE)
_UNIT_S = {None: 1.0, "us": 1e-6, "ms": 0.001, "s": 1.0, "sec": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def parse_seconds(text: str, what: str, *, allow_zero: bool = False, whole: bool = False) -> float:
    """'180s', '3m', '500ms' -> seconds. A duration carries its unit: a bare number is refused (a
    DBA writes milliseconds where pgbench counts seconds, and a silent second is a thousand times
    off), but for 0, the same in every unit."""
    t = str(text).strip()
    m = _DURATION_RE.match(t)
    if not m:
        raise UserError(f"{what} {text!r} is not a duration", "write it with its unit, like 30s, 3m or 500ms")
    if not m.group(2) and float(m.group(1)) != 0:
        raise UserError(f"{what} {text!r} has no unit", f"write it with one: {t}s" + ("" if whole else f", or {t}ms"))
    value = float(m.group(1)) * _UNIT_S[(m.group(2) or "").lower() or None]
    if value < 0 or (value == 0 and not allow_zero):
        raise UserError(f"{what} must be greater than zero, got {text!r}")
    if whole and value != int(value):
        raise UserError(f"{what} must be a whole number of seconds (pgbench -T counts seconds), got {text!r}")
    return value


AUTO_MAX_S = 120  # --duration auto: a step's longest


def parse_step_duration(text: str, what: str) -> tuple[int, bool]:
    """A step's duration: '60s' (fixed), or 'auto' / 'auto:5m' (until its TPS is steady and known,
    at most 120 s or the given maximum) -> (seconds, auto)."""
    t = str(text).strip()
    if t.lower() == "auto" or t.lower().startswith("auto:"):
        rest = t[5:]
        return (int(parse_seconds(rest, f"{what} auto's maximum", whole=True)) if rest else AUTO_MAX_S), True
    return int(parse_seconds(t, what, whole=True)), False


def parse_percent(text: str, what: str) -> float:
    """'2%', '2', '0.5%' -> 2.0, 2.0, 0.5 (percent)."""
    t = str(text).strip().removesuffix("%").strip()
    try:
        value = float(t)
    except ValueError:
        raise UserError(f"{what} {text!r} is not a percentage", "write it like 2% or 0.5%") from None
    if not math.isfinite(value) or value <= 0:
        raise UserError(f"{what} must be a positive percentage, got {text!r}")
    return value


def clients_text(x: object) -> str:
    """Client counts as given (a plan file's list or number, a flag's text) as parse_clients reads them."""
    return ",".join(str(i) for i in x) if isinstance(x, list) else str(x)


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


_MEMORY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(mb|gb|tb|mib|gib|tib)?\s*$", re.IGNORECASE)
_UNIT_GB = {None: 1.0, "mb": 1 / 1024, "gb": 1.0, "tb": 1024.0, "mib": 1 / 1024, "gib": 1.0, "tib": 1024.0}


def parse_memory_gb(text: str, what: str = "--server-memory") -> float:
    """'64GB', '512MB', '1TB' in GB (powers of 1024, as /proc/meminfo); a bare number is refused
    (64 of what: a size carries its unit)."""
    m = _MEMORY_RE.match(str(text))
    if m and not m.group(2):
        raise UserError(f"{what} {text!r} has no unit", f"write it with one, e.g. {what} {text}GB (or {text}MB)")
    gb = float(m.group(1)) * _UNIT_GB[m.group(2).lower() if m.group(2) else None] if m else 0.0
    if gb <= 0:
        raise UserError(f"{what} {text!r} is not an amount of memory", f"e.g. {what} 64GB (or 512MB)")
    return gb


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
