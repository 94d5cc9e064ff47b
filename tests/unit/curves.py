"""Synthetic sweeps, each a curve a DBA meets, with the verdict a DBA gives it (test_verdicts.py
pins pgknee's answer to it; answers.py prints pgknee's whole output for some of them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from builders import make_run_data, os_sample, renew, step

from pgknee.model.results import PoolerRecord, RunData
from pgknee.model.samples import OsSample, PoolerFacts


@dataclass(frozen=True)
class Curve:
    """A synthetic sweep: TPS by client count (one value per repetition), what the machine showed,
    and the verdict a DBA gives it."""

    tps: Mapping[int, Sequence[float]]
    verdict: str | tuple[str, ...]  # what a DBA would call it (either, where two readings hold)
    counts: tuple[int, int] | None  # the counts a DBA would accept, lo..hi (None: no count)
    why: str
    cpu: Mapping[int, float] = field(default_factory=dict)  # this machine's CPU % (mean; peak +5)
    client_cpu: float = 20.0  # pgbench, % of its threads
    pool: int | None = None  # a managed pgbouncer's pool size
    pooler_cpu: Mapping[int, float] = field(default_factory=dict)  # pgbouncer, % of one core
    p99_target_ms: float | None = None  # pgknee recommend --p99-target
    managed: str | None = None  # a managed server's provider: its CPUs unknown, its CPU not sampled
    aas: Mapping[int, Mapping[str, float]] = field(default_factory=dict)  # sampled AAS by wait class, by count


def run_of(c: Curve) -> RunData:
    steps, os_rows, pooler, seq = [], {}, {}, 0
    waits: dict[int, list[tuple[str, str, int]]] = {}
    snaps: dict[int, tuple[int, float, float]] = {}
    reps = max(len(v) for v in c.tps.values())
    for rep in range(reps):
        for n, values in sorted(c.tps.items()):
            if rep >= len(values):
                continue
            seq += 1
            tps = values[rep]
            steps.append(step(step_id=seq, seq=seq, clients=n, rep=rep + 1, tps=tps, tps_pgbench=tps, tps_db=tps,
                              transactions=int(tps * 10), lat_avg_ms=1000.0 * n / tps, lat_p99_ms=3000.0 * n / tps,
                              threads=2, pooler_kind="managed" if c.pool else None, pool_size=c.pool,
                              pool_mode="transaction" if c.pool else None))
            cpu = c.cpu.get(n, 50.0)
            os_rows[seq] = [sample(cpu + (5.0 if i == 1 else 0.0), c.client_cpu * 2, c.pooler_cpu.get(n))
                            for i in range(3)]
            if c.pool:
                pooler[seq] = PoolerRecord(samples=[], facts=PoolerFacts("managed"))
            if n in c.aas:  # 100 snapshots of the step: counts are AAS x 100
                waits[seq] = [(cls, "event", round(a * 100)) for cls, a in c.aas[n].items()]
                snaps[seq] = (100, float(n), 1.0)
    data = make_run_data()
    env = {**data.env, "host.cpus": "2"}
    if c.managed:  # a remote target whose CPUs the provider keeps to itself; the OS samples are the client's
        env.update({"target.kind": "remote", "server.machine.cpus_source": "unknown: a managed service",
                    "server.managed": c.managed})
    return renew(data, steps=steps, os=os_rows, scripts={}, failures={}, pgdb={}, waits=waits,
                               waits_bg={}, snaps=snaps, pooler=pooler, env=env)


def sample(cpu: float, client: float, pooler: float | None) -> OsSample:
    busy = min(cpu, 100.0)
    return os_sample(epoch=1001.0, client_cpu_pct=client, cpu_user=busy * 0.8, cpu_system=busy * 0.2,
                     cpu_idle=100.0 - busy, pooler_cpu_pct=pooler)


CURVES: dict[str, Curve] = {
    "a peak": Curve(
        {1: [980.0], 2: [1890.0], 4: [3350.0], 8: [4700.0], 16: [4900.0], 32: [3900.0], 64: [2500.0]},
        "peaks", (8, 16),
        "throughput peaks at 16 and falls by half at 64; 95% of the peak (4,655) is reached at 8 (4,700)"),
    "a plateau": Curve(
        {2: [2000.0], 4: [3700.0], 8: [4600.0], 16: [4800.0], 32: [4820.0], 64: [4790.0]}, "levels-off", (8, 16),
        "flat from 8 within a few %: throughput levels off, a count of 8 reaches 95% of it and more only queue",
        cpu={8: 95.0, 16: 97.0, 32: 97.0, 64: 98.0}),
    "still growing": Curve(
        {2: [1000.0], 4: [2000.0], 8: [3900.0], 16: [7200.0], 32: [12500.0]}, "not-identified", None,
        "every doubling still buys 70-90% more and no resource is busy: the sweep stopped too early"),
    "a noisy plateau": Curve(
        {2: [2300.0, 2200.0, 2400.0], 4: [4400.0, 3900.0, 4600.0], 8: [4600.0, 5100.0, 4300.0],
         16: [5200.0, 4700.0, 5300.0], 32: [5000.0, 5300.0, 4800.0]}, ("levels-off", "peaks"), (4, 16),
        "three repetitions spread by 10-15%: the level is plain from 4 or 8, which of them noise decides; the "
        "dip at 32 may read as a shallow peak, and either reading gives a count in 4..16",
        cpu={4: 92.0, 8: 96.0, 16: 97.0, 32: 97.0}),
    "client-bound": Curve(
        {2: [2000.0], 4: [3500.0], 8: [4000.0], 16: [4100.0], 32: [4150.0]}, "withheld", None,
        "pgbench used 95% of its threads: the client set the pace, the server's limit is not seen",
        client_cpu=95.0),
    "pooler-capped": Curve(
        {8: [9000.0], 16: [14000.0], 32: [16500.0], 64: [17000.0], 128: [17100.0]}, "withheld", None,
        "throughput stops at 17,000 while pgbouncer's one core is busy from 32 clients: the pooler, not the server, "
        "set that ceiling, so it says nothing of the server's limit; 8 and 16 alone cannot place one: add a "
        "pgbouncer process (processes=2) or measure without it",
        pool=128, pooler_cpu={32: 88.0, 64: 97.0, 128: 99.0}),
    "pooler-capped late": Curve(
        {2: [2000.0], 4: [3900.0], 8: [4700.0], 16: [4800.0], 32: [4850.0], 64: [4900.0]}, "levels-off", (8, 16),
        "the curve levels off from 8 clients with the server's CPU busy, and only at 64 does pgbouncer near its "
        "core: that step is left out, and the count stands on 2-32",
        pool=128, cpu={8: 95.0, 16: 97.0, 32: 97.0, 64: 98.0}, pooler_cpu={64: 96.0}),
    "a latency target no count meets": Curve(
        {2: [2000.0], 4: [3700.0], 8: [4600.0], 16: [4800.0], 32: [4820.0], 64: [4790.0]}, "no-count-meets-target",
        None, "the plateau above, with a p99 target of 4 ms: 95% of the plateau takes 8 clients, whose p99 is 5.2 ms; "
        "no count gives both, so the target or the throughput has to give", cpu={8: 95.0, 16: 97.0, 32: 97.0, 64: 98.0},
        p99_target_ms=4.0),
    "saturated, still creeping up": Curve(
        {2: [2600.0], 4: [4400.0], 8: [4600.0], 16: [5000.0], 32: [5600.0]}, "saturated", (16, 32),
        "the CPU is saturated from 4, yet 32 still buys 12% over 16, beyond the noise: the best measured is the "
        "top count, an answer for now; repetitions (and 24) settle whether that growth is real, and nothing "
        "upward is worth measuring on a saturated CPU",
        cpu={4: 93.0, 8: 97.0, 16: 98.0, 32: 98.0}),
    "a measured peak": Curve(
        {2: [2000.0], 4: [3900.0], 8: [5000.0], 16: [4300.0], 32: [4400.0]}, ("peaks", "levels-off"), (8, 8),
        "throughput peaks at 8 and is 12-14% lower at 16 and 32; five counts of one repetition measure their noise "
        "poorly, so a peak or a level, but 8 either way: 4 is at 78% of it", cpu={8: 95.0, 16: 97.0, 32: 97.0}),
    "a managed server, still growing": Curve(
        {2: [2600.0], 4: [4400.0], 8: [4600.0], 16: [5000.0], 32: [5600.0]}, "not-identified", None,
        "a managed server whose CPUs its provider keeps to itself: 32 still buys 12% over 16, and nothing says "
        "whether the server is saturated (no /proc, no CPU count to read the wait profile against): withheld "
        "until its CPUs are given", managed="Amazon RDS",
        aas={n: {"CPU": 0.05 * n, "LWLock": 0.03 * n} for n in (2, 4, 8, 16, 32)}),
}
