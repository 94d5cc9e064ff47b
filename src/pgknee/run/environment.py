"""The run's environment, as stored with it (keys.Env): pgknee, the client machine, pgbench,
the server and its settings, the target, the workload, the poolers, the scripts."""

from __future__ import annotations

import hashlib

from pgknee import __version__
from pgknee.collect.serverfacts import ServerFacts, host_facts
from pgknee.driver.pgbench import commits_per_transaction
from pgknee.model import keys
from pgknee.model.keys import Env
from pgknee.plan import Plan
from pgknee.pooler.lab import Poolers
from pgknee.run.scripts import Pgbench
from pgknee.targets import Target
from pgknee.workloads import Workload


def run_environment(plan: Plan, target: Target, server: ServerFacts, pgbench: Pgbench, workload: Workload,
                    meta: dict[str, str], poolers: Poolers,
                    texts: dict[str, list[tuple[str, str]]]) -> dict[str, str]:
    """`texts`: per variant, its scripts' names and the text each runs."""
    env = {Env.PGKNEE_VERSION: __version__, **host_facts(), Env.PGBENCH_PATH: pgbench.path,
           Env.PGBENCH_VERSION: pgbench.version_text, Env.SERVER_VERSION: server.version,
           Env.SERVER_VERSION_NUM: str(server.version_num),
           Env.SERVER_IS_SUPERUSER: str(server.is_superuser).lower(),
           Env.SAMPLE_ALL_DATABASES: str(plan.sample_all_databases).lower(),
           Env.QUERY_TEXT: str(plan.query_text).lower()}
    env.update({keys.setting(k): v for k, v in server.settings.items()})
    env.update(target.describe())
    env.update({keys.workload_fact(k): v for k, v in meta.items()})
    env.update(poolers.environment())  # none of it without pooled variants
    env.update({keys.commits_per_txn(variant, name): repr(commits_per_transaction(text))
                for variant, pairs in texts.items() for name, text in pairs})
    env.update({keys.script_sha256(s.filename): hashlib.sha256(s.text.encode()).hexdigest()
                for s in workload.sources()})
    return {str(k): v for k, v in env.items()}
