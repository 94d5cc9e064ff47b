from __future__ import annotations

import os
import subprocess

import pytest

from pgknee.collect.osproc import CLK_TCK, cpu_percentages, process_ticks

KEYS = {"cpu_user", "cpu_nice", "cpu_system", "cpu_iowait", "cpu_irq", "cpu_steal", "cpu_idle"}


def test_cpu_percentages_known_split() -> None:
    #        user nice system idle iowait irq softirq steal
    a = (1000, 10, 500, 9000, 20, 5, 5, 0)
    b = (1500, 10, 750, 9195, 70, 8, 7, 0)  # deltas 500 0 250 195 50 3 2 0 = 1000
    p = cpu_percentages(a, b)
    assert set(p) == KEYS
    assert p["cpu_user"] == pytest.approx(50.0)
    assert p["cpu_nice"] == 0.0
    assert p["cpu_system"] == pytest.approx(25.0)
    assert p["cpu_idle"] == pytest.approx(19.5)
    assert p["cpu_iowait"] == pytest.approx(5.0)
    assert p["cpu_irq"] == pytest.approx(0.5)  # irq + softirq
    assert p["cpu_steal"] == 0.0
    assert sum(p.values()) == pytest.approx(100.0)


@pytest.mark.parametrize("delta", [(1, 2, 3, 4, 5, 6, 7, 8), (0, 0, 0, 100, 0, 0, 0, 0), (7, 0, 0, 0, 0, 0, 0, 3)])
def test_cpu_percentages_sum_to_100(delta: tuple[int, ...]) -> None:
    a = (100,) * 8
    b = tuple(x + d for x, d in zip(a, delta, strict=True))
    assert sum(cpu_percentages(a, b).values()) == pytest.approx(100.0)


def test_cpu_percentages_no_time_passed() -> None:
    a = (5,) * 8
    assert cpu_percentages(a, a) == dict.fromkeys(KEYS, 0.0)


def test_cpu_percentages_needs_eight_fields() -> None:
    with pytest.raises(ValueError):
        cpu_percentages((1, 2, 3), (1, 2, 3, 4))


def test_process_ticks_of_this_process() -> None:
    sum(i * i for i in range(200_000))  # some CPU time
    t = os.times()
    ticks = process_ticks(os.getpid())
    assert isinstance(ticks, int) and ticks >= 0
    # the same accounting as times(2): utime + stime in clock ticks
    assert abs(ticks - (t.user + t.system) * CLK_TCK) <= 3


def test_process_ticks_of_a_dead_process() -> None:
    p = subprocess.Popen(["true"])
    p.wait()  # reaped: /proc/PID is gone
    assert process_ticks(p.pid) is None


def test_process_ticks_of_an_impossible_pid() -> None:
    with open("/proc/sys/kernel/pid_max") as f:
        pid_max = int(f.read())
    assert process_ticks(pid_max + 1) is None


def test_the_pooler_processes_changing_between_two_samples() -> None:
    """pgpool started again after the warm-up, or a pgbouncer process gone: the sample across the
    change has no pooler CPU (not a difference between different processes), and sampling goes on."""
    from pgknee.collect.osproc import OsSampler
    from pgknee.collect.protocol import StepProcesses

    me, sleeper = os.getpid(), subprocess.Popen(["sleep", "30"])
    try:
        s, step = OsSampler(interval_s=1.0), StepProcesses(1)
        s.begin_step(step)
        step.pooler = (me, sleeper.pid)
        s._sample_once()
        s._sample_once()
        step.pooler = (me,)
        s._sample_once()  # across the change
        s._sample_once()
        (record,) = s.end_step()
        rows = record.rows  # type: ignore[attr-defined]
        assert len(rows) == 3 and rows[0].pooler_cpu_pct is not None
        assert rows[1].pooler_cpu_pct is None and rows[2].pooler_cpu_pct is not None
    finally:
        sleeper.kill()
        sleeper.wait()
