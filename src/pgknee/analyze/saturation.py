"""What the sweep shows beside its curve: the resources that were saturated, and Kneedle's knee. Pure.

* a resource that was saturated (`saturated`): the server's CPU (its own /proc, or this machine's
  when server and client share it), sessions queued on one wait class beyond the server's CPUs
  (Average Active Sessions); a busy client withholds the answer and a pooler process near a full
  core takes its steps out of the curve, elsewhere (analyze/recommend.py);
* a published knee method as a second opinion (`kneedle`: Satopää, Albrecht, Irwin and Raghavan,
  "Finding a 'Kneedle' in a Haystack", ICDCSW 2011), beside the Universal Scalability Law that
  analyze/usl.py fits. The curve itself is read by analyze/curve.py."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pgknee.analyze.cpus import Machine, server_row
from pgknee.analyze.view import Group, RunView
from pgknee.analyze.words import clause
from pgknee.model.rules import cpu_saturated


@dataclass(frozen=True)
class Saturation:
    """A resource that was saturated, from the first count where it was."""

    resource: str  # 'server CPU', 'CPU' (this machine's, server and client), 'wait class LWLock',
    # 'server sessions' (database time above the CPUs)
    clients: int
    detail: str

    def short(self) -> str:
        return f"{self.resource} saturated from {self.clients} clients"

    def line(self) -> str:
        return f"{self.short()} ({self.detail})"


def saturated(view: RunView, groups: Sequence[Group], m: Machine) -> list[Saturation]:
    """Each resource that was saturated, at the first count where it was (by client count)."""
    found: dict[str, Saturation] = {}
    for g in sorted(groups, key=lambda g: g.clients):
        for s in (_cpu(view, g, m), *_wait_classes(g, m)):
            if s is not None and s.resource not in found:
                found[s.resource] = s
    return list(found.values())


def _cpu(view: RunView, g: Group, m: Machine) -> Saturation | None:
    """The server's own CPU samples; else, when the server runs on this machine, this machine's."""
    r = server_row(view.data, g)
    if r is not None:
        if cpu_saturated(r.peak_cpu, r.mean_cpu):
            return Saturation("server CPU", g.clients, f"its own /proc: mean {r.mean_cpu:.0f}%, peak {r.peak_cpu:.0f}%"
                              + clause(" of {} CPUs", m.server.n))
        return None
    s = g.system
    if not m.local or s.peak_cpu is None or s.mean_cpu is None:
        return None
    if cpu_saturated(s.peak_cpu, s.mean_cpu):
        return Saturation("CPU", g.clients, f"this machine's, shared by the server and pgbench: mean "
                          f"{s.mean_cpu:.0f}%, peak {s.peak_cpu:.0f}%"
                          + clause(" of {} CPUs", m.client))
    return None


def _wait_classes(g: Group, m: Machine) -> list[Saturation]:
    """A wait class (CPU, running, counted as one) whose Average Active Sessions exceed the
    server's CPUs: sessions queue on it; and the sessions at work, all classes but the client's
    (the database time), above the CPUs: more sessions running or waiting in the server than it
    has CPUs, the rule of thumb that reads a server's saturation without its /proc."""
    cpus = m.server.n
    if cpus is None or not g.snapshots:
        return []
    by_class: dict[str, float] = {}
    for w in g.waits:
        if w.wait_event_type not in ("Client", "Activity", "Timeout"):  # the client's time, not the server's
            by_class[w.wait_event_type] = by_class.get(w.wait_event_type, 0.0) + w.aas
    out = [Saturation(f"wait class {cls}", g.clients, f"AAS {aas:.2f} above the server's {cpus} CPUs")
           for cls, aas in sorted(by_class.items(), key=lambda x: -x[1]) if aas > cpus]
    busy = sum(by_class.values())
    if busy > cpus and not out:  # no one class above them, yet more sessions at work than CPUs: they queue
        out.append(Saturation("server sessions", g.clients, f"AAS {busy:.2f} at work (CPU and server waits, not "
                                                            f"the client's) above the server's {cpus} CPUs"))
    return out


def kneedle(points: Sequence[tuple[int, float]], sensitivity: float = 1.0) -> int | None:
    """The knee of a concave increasing curve by Kneedle (offline, no smoothing), on the rising
    part of the measured curve (up to its highest point): both axes scaled to 0..1, the difference
    curve y - x, and the first of its local maxima after which it falls below that maximum less
    `sensitivity` times the mean step of x. None when no knee is detected (a straight line, a
    curve still bending up). Checked against the kneed package's KneeLocator in the tests."""
    top = max(range(len(points)), key=lambda i: points[i][1]) if points else 0
    rising = points[:top + 1]
    if len(rising) < 3:
        return None
    x = np.array([p[0] for p in rising], dtype=float)
    y = np.array([p[1] for p in rising], dtype=float)
    xn, yn = (x - x.min()) / np.ptp(x), (y - y.min()) / np.ptp(y) if np.ptp(y) > 0 else y * 0
    diff = yn - xn
    step = sensitivity * float(np.abs(np.diff(xn)).mean())
    maxima = _extrema(diff, np.greater_equal)
    minima = _extrema(diff, np.less_equal)
    threshold, at, active = math.nan, -1, True
    for i in range(int(maxima[0]) if maxima.size else len(diff), len(diff) - 1):
        if i in maxima:
            threshold, at, active = float(diff[i]) - step, i, True
        if i in minima:
            threshold, active = 0.0, False
        if active and diff[i + 1] < threshold:
            return int(x[at])
    return None


def _extrema(a: np.ndarray, compare: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """The indices of a's points that compare true with both neighbours, an end compared with
    itself on its open side (scipy's argrelextrema with order 1 and mode 'clip', as kneed has it)."""
    before, after = np.concatenate(([a[0]], a[:-1])), np.concatenate((a[1:], [a[-1]]))
    return np.flatnonzero(compare(a, before) & compare(a, after))
