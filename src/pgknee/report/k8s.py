"""`pgknee k8s render`: a run with agents as Kubernetes objects (pure: a plan in, manifests out).

* the agents: an Indexed Job, one pod per agent (completions = parallelism = N), each pod's agent
  named gen-INDEX from JOB_COMPLETION_INDEX; backoffLimit 0 (a failed agent is reported by the
  coordinator with its reason, not retried behind its back);
* the coordinator: a Job running `pgknee run --agents N` with the plan's flags;
* the DSNs only as references to Secrets (key `dsn`: the server's into PGKNEE_DSN, the results
  store's into PGKNEE_STORE_DSN), never a value, so no password is in the manifests;
* resources from the plan: each agent's CPU request is its pgbench threads (the largest step's
  clients split over the agents, at most --agent-cpus), its memory the agent's own (measured:
  123 MB resident waiting, the log's reading on top: 256 MiB) plus pgbench's 18 KiB per client
  (measured: 10.6 MB with 1 client, 11.5 MB with 50) rounded up to 32 KiB, the limit twice that;
* pods that run as a non-root user (10001, the image's), read-only root file system, no
  privilege escalation, every capability dropped, a writable emptyDir for /tmp and the state."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from pgknee.base.errors import UserError
from pgknee.plan import Plan

AGENT_BASE_MIB = 256
PER_CLIENT_KIB = 32
COORDINATOR = {"requests": {"cpu": "1", "memory": "512Mi"}, "limits": {"memory": "1Gi"}}
UID = 10001
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class K8sOptions:
    agents: int
    dsn_secret: str
    store_secret: str
    image: str = "pgknee:latest"
    namespace: str | None = None
    name: str = "pgknee"
    agent_cpus: int = 2
    service_account: str | None = None
    agent_wait_s: int = 900


def check(o: K8sOptions) -> None:
    if o.agents < 1:
        raise UserError(f"--agents {o.agents}: give one agent or more", "e.g. --agents 4")
    if o.agent_cpus < 1:
        raise UserError(f"--agent-cpus {o.agent_cpus}: give one CPU or more")
    for flag, value in (("--dsn-secret", o.dsn_secret), ("--store-secret", o.store_secret), ("--name", o.name),
                        ("--namespace", o.namespace), ("--service-account", o.service_account)):
        if value is not None and (len(value) > 63 - len("-coordinator") or not _DNS1123.match(value)):
            raise UserError(f"{flag} {value!r} is not a Kubernetes name",
                            "lower-case letters, digits and '-', starting and ending with a letter or digit")


def agent_share(plan: Plan, o: K8sOptions) -> tuple[int, int]:
    """(clients, threads) of one agent at the plan's largest step."""
    clients = math.ceil(max(plan.clients) / o.agents)
    return clients, max(1, min(clients, plan.threads or o.agent_cpus, o.agent_cpus))


def agent_resources(plan: Plan, o: K8sOptions) -> dict[str, dict[str, str]]:
    clients, threads = agent_share(plan, o)
    mib = AGENT_BASE_MIB + math.ceil(clients * PER_CLIENT_KIB / 1024)
    return {"requests": {"cpu": str(threads), "memory": f"{mib}Mi"}, "limits": {"memory": f"{2 * mib}Mi"}}


def manifests(plan: Plan, o: K8sOptions, run_args: list[str]) -> list[dict[str, Any]]:
    """The agents' Indexed Job and the coordinator's Job."""
    check(o)
    deadline = int(plan.estimated_seconds() * 2 + o.agent_wait_s + 600)
    agents = _job(o, "agents", "agent", deadline, completions=o.agents,
                  args=["agent", "--wait", f"{o.agent_wait_s}s"], resources=agent_resources(plan, o))
    agents["spec"]["completionMode"] = "Indexed"
    coordinator = _job(o, "coordinator", "coordinator", deadline, completions=1,
                       args=["run", "--agents", str(o.agents), "--agent-wait", f"{o.agent_wait_s}s", *run_args],
                       resources=COORDINATOR)
    return [agents, coordinator]


def _labels(o: K8sOptions, component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "pgknee", "app.kubernetes.io/part-of": "pgknee",
            "app.kubernetes.io/component": component, "app.kubernetes.io/instance": o.name}


def _secret_env(name: str, secret: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"secretKeyRef": {"name": secret, "key": "dsn"}}}


def _job(o: K8sOptions, suffix: str, component: str, deadline: int, *, completions: int, args: list[str],
         resources: dict[str, dict[str, str]]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": f"{o.name}-{suffix}", "labels": _labels(o, component)}
    if o.namespace:
        metadata["namespace"] = o.namespace
    container = {
        "name": component, "image": o.image, "args": args,
        "env": [_secret_env("PGKNEE_DSN", o.dsn_secret), _secret_env("PGKNEE_STORE_DSN", o.store_secret),
                {"name": "PGKNEE_STATE_DIR", "value": "/var/lib/pgknee"}, {"name": "TMPDIR", "value": "/tmp"},
                {"name": "NO_COLOR", "value": "1"}],
        "resources": resources,
        "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                            "capabilities": {"drop": ["ALL"]}},
        "volumeMounts": [{"name": "tmp", "mountPath": "/tmp"}, {"name": "state", "mountPath": "/var/lib/pgknee"}]}
    pod: dict[str, Any] = {
        "restartPolicy": "Never",
        "securityContext": {"runAsNonRoot": True, "runAsUser": UID, "runAsGroup": UID, "fsGroup": UID,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [container],
        "volumes": [{"name": "tmp", "emptyDir": {}}, {"name": "state", "emptyDir": {}}]}
    if o.service_account:
        pod["serviceAccountName"] = o.service_account
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata,
            "spec": {"completions": completions, "parallelism": completions, "backoffLimit": 0,
                     "ttlSecondsAfterFinished": 86400, "activeDeadlineSeconds": deadline,
                     "template": {"metadata": {"labels": _labels(o, component)}, "spec": pod}}}


HEADER = ("# pgknee {version}: a run on {agents} agent(s) as Kubernetes Jobs (pgknee k8s render).\n"
          "# The DSNs come from Secrets (key 'dsn'), never from this file:\n"
          "#   kubectl create secret generic {dsn_secret} --from-literal=dsn='postgresql://USER:PASSWORD@HOST/DB'\n"
          "#   kubectl create secret generic {store_secret} --from-literal=dsn='postgresql://USER:PASSWORD@HOST/DB'\n"
          "# Each agent: {clients} client(s) at the largest step, {threads} pgbench thread(s); apply, then read the\n"
          "# coordinator's log (kubectl logs job/{name}-coordinator) and the run from the store (pgknee show).\n")


def render(plan: Plan, o: K8sOptions, run_args: list[str], version: str) -> str:
    import yaml

    docs = manifests(plan, o, run_args)
    clients, threads = agent_share(plan, o)
    head = HEADER.format(version=version, agents=o.agents, dsn_secret=o.dsn_secret, store_secret=o.store_secret,
                         clients=clients, threads=threads, name=o.name)
    return head + yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True)
