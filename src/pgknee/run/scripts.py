"""A variant's pgbench scripts and command line: the workload's scripts in the variant's form
(pipeline, think time), written where pgbench's user reads them, and the PgbenchRun of a step."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pgknee.driver.pgbench import PgbenchRun, pipeline_form, with_think_time
from pgknee.plan import Plan, Variant
from pgknee.system import proc
from pgknee.workloads import Script, Workload
from pgknee.workloads.base import ScriptSource, write_scripts


@dataclass(frozen=True)
class Pgbench:
    path: str
    version_text: str  # '15.18 (Debian ...)'
    version_num: int  # 150018


def script_texts(workload: Workload, variant: Variant) -> list[tuple[ScriptSource, str]]:
    """The workload's scripts as this variant runs them."""
    out = []
    for src in workload.sources():
        text = src.text
        if variant.pipeline:
            text = pipeline_form(text, src.filename)
        if variant.think_ms:
            text = with_think_time(text, round(variant.think_ms * 1000))
        out.append((src, text))
    return out


def scripts_for(workload: Workload, variant: Variant, directory: Path,
                run_as: proc.RunAs | None) -> list[tuple[Script, str]]:
    """The variant's scripts written for pgbench (read by `run_as`), each with its text."""
    texts = script_texts(workload, variant)
    return list(zip(write_scripts(texts, directory, run_as), (t for _, t in texts), strict=True))


def pgbench_run(plan: Plan, pgbench: Pgbench, variant: Variant, scripts: list[Script], defines: dict[str, str], *,
                clients: int, threads: int, seconds: int, log_prefix: Path | None, progress: bool,
                log_sampling_rate: float = 1.0) -> PgbenchRun:
    return PgbenchRun(pgbench=pgbench.path, clients=clients, threads=threads, duration_s=seconds,
                      protocol=variant.protocol, scripts=tuple(scripts), defines=tuple(sorted(defines.items())),
                      log_prefix=log_prefix, max_tries=plan.max_tries, version_num=pgbench.version_num,
                      progress_s=1 if progress else 0, log_sampling_rate=log_sampling_rate,
                      connect_per_txn=variant.connect_per_txn, rate=variant.rate)
