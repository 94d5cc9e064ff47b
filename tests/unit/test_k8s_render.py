"""pgknee k8s render: the manifests, deserialized into the Kubernetes API's own models (the
`kubernetes` package: its pydantic models refuse a missing required field or a wrong type; a
field they do not know is dropped, so each document must come back whole), and their values:
an Indexed Job of N agents, Secrets referenced and never a DSN, requests from the plan."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml
from kubernetes import client

from pgknee import cli
from pgknee.plan.parse import parse_clients
from pgknee.report.k8s import K8sOptions, agent_share, manifests, render


def _plan(*flags: str) -> Any:
    from pgknee.cli.k8s import _plan as plan_of

    return plan_of(list(flags))


def _validated(doc: dict[str, Any]) -> client.V1Job:
    api = client.ApiClient()
    job = api._ApiClient__deserialize(doc, "V1Job")  # type: ignore[attr-defined]
    assert isinstance(job, client.V1Job)
    assert api.sanitize_for_serialization(job) == doc  # nothing unknown to the API (a typo) was dropped
    return job


@pytest.mark.parametrize(("agents", "flags", "per_agent", "cpu"), [
    (4, ("--clients", "100:2000:100", "--duration", "60s"), 500, "2"),
    (3, ("--clients", "1,2,4"), 2, "2"),
    (2, ("--clients", "2,4,8", "--threads", "1"), 4, "1"),
])
def test_the_jobs_validate_against_the_api_models(agents: int, flags: tuple[str, ...], per_agent: int,
                                                  cpu: str) -> None:
    plan = _plan(*flags)
    o = K8sOptions(agents=agents, dsn_secret="app-db", store_secret="results-db", namespace="bench")
    text = render(plan, o, list(flags), "test")
    docs = list(yaml.safe_load_all(text))
    assert docs == manifests(plan, o, list(flags))
    workers, coordinator = (_validated(d) for d in docs)
    assert workers.spec.completion_mode == "Indexed"
    assert workers.spec.completions == workers.spec.parallelism == agents
    assert workers.spec.backoff_limit == 0 and coordinator.spec.completions == 1
    assert workers.metadata.namespace == coordinator.metadata.namespace == "bench"
    (agent,) = workers.spec.template.spec.containers
    (boss,) = coordinator.spec.template.spec.containers
    assert agent.args[0] == "agent" and boss.args[:3] == ["run", "--agents", str(agents)]
    assert boss.args[-len(flags):] == list(flags)
    for c in (agent, boss):
        refs = {e.name: (e.value_from.secret_key_ref.name, e.value_from.secret_key_ref.key) for e in c.env
                if e.value_from is not None}
        assert refs == {"PGKNEE_DSN": ("app-db", "dsn"), "PGKNEE_STORE_DSN": ("results-db", "dsn")}
        assert all(e.value is None for e in c.env if e.name.endswith("DSN"))
        assert c.security_context.read_only_root_filesystem and c.security_context.capabilities.drop == ["ALL"]
    assert workers.spec.template.spec.security_context.run_as_non_root
    assert agent_share(plan, o)[0] == per_agent
    assert agent.resources.requests["cpu"] == cpu
    mib = int(agent.resources.requests["memory"].removesuffix("Mi"))
    assert mib == 256 + -(-per_agent * 32 // 1024)
    assert agent.resources.limits["memory"] == f"{2 * mib}Mi"
    assert "password" not in text.lower().replace("user:password@host", "")  # the Secret's form, in a comment
    assert not re.search(r"postgres(ql)?://[^U]", text)  # no DSN but the placeholder of the comment


def test_render_writes_yaml_and_refuses_bad_input_in_one_line(tmp_path: Any, capsys: pytest.CaptureFixture[str]) \
        -> None:
    out = tmp_path / "job.yaml"
    assert cli.main(["k8s", "render", "--agents", "2", "--dsn-secret", "app-db", "--store-secret", "results-db",
                     "-o", str(out), "--", "--clients", "4,8"]) == 0
    docs = list(yaml.safe_load_all(out.read_text()))
    assert [d["metadata"]["name"] for d in docs] == ["pgknee-agents", "pgknee-coordinator"]
    assert max(parse_clients("4,8")) == 8 and docs[0]["spec"]["template"]["spec"]["containers"][0]["resources"][
        "requests"]["cpu"] == "2"
    for argv, said in (
            (["--agents", "0"], "give one agent or more"),
            (["--agents", "2", "--dsn-secret", "App_DB"], "is not a Kubernetes name"),
            (["--agents", "2", "--", "--dsn", "postgresql://u:pw@h/d"], "cannot be a run flag here"),
            (["--agents", "2", "--", "--clients", "0"], "client count 0"),
            # run's own refusal, which the coordinator Job's 'pgknee run' would meet in the cluster
            (["--agents", "2", "--", "--until-answer", "--clients", "2,4,8"],
             "--until-answer chooses the client counts itself, and --clients 2,4,8 fixes them")):
        argv = ["k8s", "render", "--dsn-secret", "app-db", "--store-secret", "results-db", *argv] \
            if "--dsn-secret" not in argv else ["k8s", "render", "--store-secret", "results-db", *argv]
        capsys.readouterr()
        assert cli.main(argv) == 2, argv
        err = capsys.readouterr().err
        assert said in err and "Traceback" not in err and "pw@" not in err, err
        assert len([ln for ln in err.splitlines() if ln.startswith("pgknee:")]) == 1


def test_the_image_holds_pgknee_pgbench_and_pgbouncer_of_one_major() -> None:
    """The Dockerfile, read by a maintained parser (it cannot be built here: no container engine):
    the same PostgreSQL major as make setup installs, pgbench and pgbouncer from it, not root, the
    user the manifests run as, pgknee as the entry point."""
    from pathlib import Path

    from dockerfile_parse import DockerfileParser

    from pgknee.report.k8s import UID

    root = Path(__file__).resolve().parents[2]
    d = DockerfileParser(path=str(root / "Dockerfile"))
    assert d.baseimage == "debian:bookworm-slim"
    assert d.args["PG_MAJOR"] == "15"  # bookworm's PostgreSQL, as scripts/setup-system.sh installs
    runs = " ".join(i["value"] for i in d.structure if i["instruction"] == "RUN")
    assert '"postgresql-client-${PG_MAJOR}"' in runs and "pgbouncer" in runs and "pip install --no-cache-dir /src" \
        in runs
    users = [i["value"] for i in d.structure if i["instruction"] == "USER"]
    assert users == [f"{UID}:{UID}"]
    assert d.envs["PATH"].startswith("/usr/lib/postgresql/15/bin:")  # the major's pgbench first
    entry = [i["value"] for i in d.structure if i["instruction"] == "ENTRYPOINT"]
    assert entry == ['["pgknee"]']
    ignored = (root / ".dockerignore").read_text().splitlines()
    assert "*" in ignored and "!src/" in ignored
