"""How much memory does measuring a long step's pgbench log take? A faithful log of 2,000 clients
for 10 minutes at 20,000 TPS (12 million lines, one file per pgbench thread, in pgbench's format
with the retries column of --max-tries 3: three e-wallet scripts 60/25/15, log-normal latencies
with a slow tail, serialization failures and deadlocks, retries) is written to a temporary
directory, then measured by pgknee (driver.measure) in a child process of its own: its peak RSS
(ru_maxrss, and VmHWM) and wall time. The generator, another child, keeps every latency it wrote,
so the histogram's percentiles are compared with the exact ones over all 12 million. For
contrast, the exact way before issue 15 (every line in lists, then arrays) measures a smaller log,
and pgknee measures the same one. The target: peak RSS under 300 MB, percentiles within 1 %.

    .venv/bin/python bench/memory.py [--clients 2000] [--seconds 600] [--tps 20000] [--threads 8]
                                     [--old-lines 1000000] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

SCRIPTS = (("transfer", 60, 90_000), ("balance", 25, 60_000), ("history", 15, 40_000))  # name, weight, median µs
QS = (50, 95, 99)
START_EPOCH = 1_700_000_000
BLOCK_S = 10  # seconds of log generated at a time
TARGET_MB = 300
TARGET_ERROR = 0.01


# ---- the generator (a child process) ---------------------------------------------------------------


def _digits(v: Any) -> tuple[Any, Any]:
    """Right-aligned ASCII digits of non-negative integers, and the mask of the ones to write."""
    import numpy as np

    width = max(len(str(int(v.max(initial=0)))), 1)
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    grid = (v[:, None] // powers % 10 + 48).astype(np.uint8)
    length = 1 + np.searchsorted(10 ** np.arange(1, 19, dtype=np.int64), v, side="right")
    return grid, np.arange(width) >= (width - length)[:, None]


def _words(words: list[bytes], which: Any) -> tuple[Any, Any]:
    """Left-aligned words (words[which[i]]) and their masks."""
    import numpy as np

    table = np.array(words, dtype=f"S{max(len(w) for w in words)}")
    grid = table[which].view(np.uint8).reshape(which.size, -1)
    lengths = np.array([len(w) for w in words])[which]
    return grid, np.arange(grid.shape[1]) < lengths[:, None]


def _text(fields: list[tuple[Any, Any]]) -> bytes:
    """Lines from fields (byte grids and masks), one space apart."""
    import numpy as np

    n = fields[0][0].shape[0]
    sep = (np.full((n, 1), 32, np.uint8), np.ones((n, 1), bool))
    grids, masks = [], []
    for i, (g, m) in enumerate(fields):
        if i:
            grids.append(sep[0])
            masks.append(sep[1])
        grids.append(g)
        masks.append(m)
    grids.append(np.full((n, 1), 10, np.uint8))
    masks.append(np.ones((n, 1), bool))
    return bytes(np.hstack(grids)[np.hstack(masks)].tobytes())


class _Thread:
    """One pgbench thread's clients and its log file."""

    def __init__(self, path: Path, first_client: int, clients: int) -> None:
        import numpy as np

        self.fh = open(path, "wb")  # noqa: SIM115 (closed by close())
        self.first, self.clients = first_client, clients
        self.txno = np.zeros(clients, dtype=np.int64)

    def numbered(self, client: Any) -> Any:
        """Each client's transactions numbered from where the last block stopped (time order)."""
        import numpy as np

        order = np.argsort(client, kind="stable")
        c = client[order] - self.first
        n = c.size
        head = np.concatenate(([True], c[1:] != c[:-1])) if n else np.zeros(0, bool)
        rank = np.arange(n) - np.maximum.accumulate(np.where(head, np.arange(n), 0))
        out = np.empty(n, dtype=np.int64)
        out[order] = self.txno[c] + rank
        self.txno += np.bincount(c, minlength=self.clients)
        return out

    def close(self) -> None:
        self.fh.close()


def _block(rng: Any, th: _Thread, t0: float, n: int, exact: dict[int, list[Any]]) -> dict[str, int]:
    """n transactions of one thread ending in [t0, t0 + BLOCK_S), written; successes kept."""
    import numpy as np

    end = np.sort(rng.uniform(t0, t0 + BLOCK_S, n))
    client = rng.integers(th.first, th.first + th.clients, n)
    script = rng.choice(len(SCRIPTS), n, p=[w / 100 for _, w, _ in SCRIPTS])
    median = np.array([m for _, _, m in SCRIPTS])[script]
    lat = np.round(median * rng.lognormal(0.0, 0.5, n) * np.where(rng.random(n) < 0.005, 10, 1)).astype(np.int64)
    fate = rng.choice(3, n, p=[0.9965, 0.003, 0.0005])  # ok, serialization, deadlock
    retries = np.where(fate > 0, 2, rng.choice(3, n, p=[0.985, 0.013, 0.002]))
    epoch = np.floor(end).astype(np.int64)
    time_field = np.where(fate > 0, -1, lat)
    g, m = _digits(np.maximum(time_field, 0))
    wg, wm = _words([b"", b"serialization", b"deadlock"], fate)
    fields = [_digits(client), _digits(th.numbered(client)),
              (np.hstack([g, wg]), np.hstack([m & (fate == 0)[:, None], wm])),
              _digits(script), _digits(epoch), _digits(((end - epoch) * 1e6).astype(np.int64)), _digits(retries)]
    th.fh.write(_text(fields))
    for i in range(len(SCRIPTS)):
        exact[i].append(lat[(fate == 0) & (script == i)])
    return {"lines": n, "failed": int((fate > 0).sum()), "retries": int(retries.sum()),
            "retried": int((retries > 0).sum()), "serialization": int((fate == 1).sum()),
            "deadlock": int((fate == 2).sum())}


def _exact(lat: Any) -> dict[str, float]:
    import numpy as np

    p = np.percentile(lat / 1000.0, QS)
    return {"count": int(lat.size), "mean_ms": float(lat.mean() / 1000.0), "stddev_ms": float(lat.std(ddof=1) / 1000),
            **{f"p{q}_ms": float(x) for q, x in zip(QS, p, strict=True)}}


def generate(directory: Path, clients: int, seconds: int, tps: float, threads: int, seed: int) -> dict[str, Any]:
    """pgbench's log files (log.PID, log.PID.1, ...), the totals written and the exact statistics."""
    import numpy as np

    rng = np.random.default_rng(seed)
    directory.mkdir()
    per = [clients // threads + (1 if i < clients % threads else 0) for i in range(threads)]
    ths = [_Thread(directory / ("log.4242" + (f".{i}" if i else "")), sum(per[:i]), per[i]) for i in range(threads)]
    exact: dict[int, list[Any]] = {i: [] for i in range(len(SCRIPTS))}
    totals: dict[str, int] = {}
    for t0 in range(0, seconds, BLOCK_S):
        for th in ths:
            share = tps * min(BLOCK_S, seconds - t0) * th.clients / clients
            for k, v in _block(rng, th, START_EPOCH + t0, int(rng.poisson(share)), exact).items():
                totals[k] = totals.get(k, 0) + v
    for th in ths:
        th.close()
    per_script = {i: np.concatenate(parts) for i, parts in exact.items()}
    overall = np.concatenate(list(per_script.values()))
    return {"files": [str(th.fh.name) for th in ths], "bytes": sum(Path(th.fh.name).stat().st_size for th in ths),
            "totals": totals, "exact": _exact(overall),
            "exact_scripts": [_exact(per_script[i]) for i in range(len(SCRIPTS))]}


# ---- the measurements (each in a child process) ------------------------------------------------------


def _old_read(paths: list[str]) -> Any:
    """The exact way before issue 15: every line's columns in lists, then arrays (its memory)."""
    import numpy as np

    lat: list[int] = []
    scr: list[int] = []
    end: list[float] = []
    ret: list[int] = []
    for path in paths:
        with open(path, "rb") as fh:
            for raw in fh:
                parts = raw.split()
                t = parts[2]
                lat.append(int(t) if t.isdigit() else -1)
                scr.append(int(parts[3]))
                end.append(int(parts[4]) + int(parts[5]) / 1e6)
                ret.append(int(parts[6]) if len(parts) > 6 else 0)
    arrays = (np.asarray(lat, dtype=np.int64), np.asarray(scr, dtype=np.int16), np.asarray(end),
              np.asarray(ret, dtype=np.int32))
    lat_ms = arrays[0][arrays[0] >= 0] / 1000.0
    return {"transactions": int(lat_ms.size), **{f"p{q}_ms": float(x) for q, x in zip(QS, np.percentile(lat_ms, QS),
                                                                                     strict=True)}}


def _new_read(paths: list[str], seconds: float) -> dict[str, Any]:
    from pgknee.driver.measure import measure, read_transaction_logs
    from pgknee.workloads.base import Script

    log = read_transaction_logs([Path(p) for p in paths], has_lag=False, has_retries=True)
    m = measure(log, [Script(n, Path(f"{n}.sql"), w) for n, w, _ in SCRIPTS], seconds)
    return {"transactions": m.transactions, "failed": m.failed, "retries": m.retries, "retried": m.retried,
            "failures": m.failures, "latency": _stats(m.latency), "scripts": [_stats(s.latency) for s in m.scripts]}


def _stats(s: Any) -> dict[str, float] | None:
    if s is None:
        return None
    return {"count": s.count, "mean_ms": s.mean_ms, "stddev_ms": s.stddev_ms,
            **{f"p{q}_ms": getattr(s, f"p{q}_ms") for q in QS}}


def _hwm_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def child(argv: list[str]) -> None:
    """Run one job and print its result, with this process's peak RSS and wall time, as JSON."""
    import resource
    import time

    job, directory = argv[0], Path(argv[1])
    if job == "generate":
        clients, seconds, threads, seed = (int(x) for x in argv[2:6])
        t0, baseline_kb = time.perf_counter(), _hwm_kb()
        out: Any = generate(directory, clients, seconds, float(argv[6]), threads, seed)
    else:
        import numpy  # noqa: F401 (both ways load it: the baseline counts it)

        from pgknee.driver import measure  # noqa: F401
        paths = sorted(str(p) for p in directory.iterdir())
        t0, baseline_kb = time.perf_counter(), _hwm_kb()
        out = _old_read(paths) if job == "old" else _new_read(paths, float(argv[2]))
    wall = time.perf_counter() - t0
    print(json.dumps({"result": out, "wall_s": wall, "baseline_mb": baseline_kb / 1024, "hwm_mb": _hwm_kb() / 1024,
                      "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def _run(*args: object) -> dict[str, Any]:
    p = subprocess.run([sys.executable, __file__, "--child", *map(str, args)], capture_output=True, text=True,
                       check=False)
    if p.returncode != 0:
        raise SystemExit(f"child {args[0]} failed:\n{p.stderr}")
    return dict(json.loads(p.stdout))


# ---- the report ---------------------------------------------------------------------------------------


def _errors(got: dict[str, Any], exact: dict[str, Any], worst: list[float]) -> str:
    """Each percentile's relative error, and the mean's and stddev's."""
    parts = []
    for key in [f"p{q}_ms" for q in QS] + ["mean_ms", "stddev_ms"]:
        err = abs(got[key] - exact[key]) / exact[key]
        if key.startswith("p"):
            worst.append(err)
        parts.append(f"{key[:-3]} {got[key]:.3f} vs {exact[key]:.3f} ({100 * err:.3f} %)")
    return ", ".join(parts)


def _check_counts(big: dict[str, Any], totals: dict[str, int]) -> list[str]:
    r = big["result"]
    problems = []
    want = {"transactions": totals["lines"] - totals["failed"], "failed": totals["failed"],
            "retries": totals["retries"], "retried": totals["retried"]}
    for k, v in want.items():
        if r[k] != v:
            problems.append(f"{k}: measured {r[k]}, written {v}")
    if r["failures"] != {k: totals[k] for k in ("serialization", "deadlock") if totals[k]}:
        problems.append(f"failures: measured {r['failures']}")
    return problems


def report(a: argparse.Namespace, gen: dict[str, Any], big: dict[str, Any], small: dict[str, Any],
           old: dict[str, Any], small_lines: int) -> dict[str, Any]:
    lines = gen["result"]["totals"]["lines"]
    worst: list[float] = []
    print(f"log: {a.clients} clients x {a.seconds} s at {a.tps:.0f} TPS, {a.threads} files, {lines:,} lines, "
          f"{gen['result']['bytes'] / 1e6:.0f} MB (written in {gen['wall_s']:.0f} s)")
    print(f"pgknee:   peak RSS {big['maxrss_mb']:.0f} MB (VmHWM {big['hwm_mb']:.0f} MB; {big['baseline_mb']:.0f} MB "
          f"before reading), {big['wall_s']:.1f} s, {lines / big['wall_s'] / 1e6:.2f} M lines/s")
    old_full = old["baseline_mb"] + (old["maxrss_mb"] - old["baseline_mb"]) * lines / small_lines
    print(f"smaller log of {small_lines:,} lines: exact way (lists) peak RSS {old['maxrss_mb']:.0f} MB in "
          f"{old['wall_s']:.1f} s; pgknee {small['maxrss_mb']:.0f} MB in {small['wall_s']:.1f} s "
          f"(baseline {old['baseline_mb']:.0f} MB); the exact way on {lines:,} lines: about "
          f"{old_full / 1024:.1f} GB (extrapolated)")
    print("all successes: " + _errors(big["result"]["latency"], gen["result"]["exact"], worst))
    for (name, _, _), got, exact in zip(SCRIPTS, big["result"]["scripts"], gen["result"]["exact_scripts"],
                                        strict=True):
        print(f"{name}: " + _errors(got, exact, worst))
    problems = _check_counts(big, gen["result"]["totals"])
    print("counts (transactions, failures by kind, retries): " + ("as written" if not problems else
                                                                   "; ".join(problems)))
    met = big["maxrss_mb"] < TARGET_MB and max(worst) < TARGET_ERROR and not problems
    print(f"worst percentile error {100 * max(worst):.3f} %; target: peak RSS under {TARGET_MB} MB, percentiles "
          f"within {100 * TARGET_ERROR:.0f} % ({'met' if met else 'NOT met'})")
    return {"lines": lines, "bytes": gen["result"]["bytes"], "generate_s": gen["wall_s"], "pgknee": big,
            "small_lines": small_lines, "old_small": old, "pgknee_small": small, "old_extrapolated_mb": old_full,
            "worst_percentile_error": max(worst), "exact": gen["result"]["exact"], "met": met}


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        child(argv[1:])
        return 0
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clients", type=int, default=2000)
    p.add_argument("--seconds", type=int, default=600)
    p.add_argument("--tps", type=float, default=20000.0)
    p.add_argument("--threads", type=int, default=8, help="pgbench threads: one log file each")
    p.add_argument("--old-lines", type=int, default=1_000_000, help="the smaller log, for the exact way")
    p.add_argument("--seed", type=int, default=15)
    p.add_argument("--json", type=Path, help="write the figures here")
    a = p.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="pgknee-memory-") as tmp:
        big_dir, small_dir = Path(tmp) / "big", Path(tmp) / "small"
        gen = _run("generate", big_dir, a.clients, a.seconds, a.threads, a.seed, a.tps)
        big = _run("new", big_dir, a.seconds)
        small_s = max(1, round(a.old_lines / a.tps))
        small_gen = _run("generate", small_dir, a.clients, small_s, a.threads, a.seed + 1, a.tps)
        old, small = _run("old", small_dir), _run("new", small_dir, small_s)
    out = report(a, gen, big, small, old, small_gen["result"]["totals"]["lines"])
    if a.json is not None:
        a.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0 if out["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
