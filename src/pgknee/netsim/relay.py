"""A delaying TCP relay: the simulated network hop between pgbench and the server (the kernel
here has no sch_netem). Run as its own process (`python -m pgknee.netsim.relay`, started by
netsim.control through proc.spawn): it listens on a private loopback port, prints that port on
its first line, and forwards each connection both ways to the upstream (a TCP address or a
Unix socket), holding every chunk half the round-trip time in each direction, plus jitter,
never reordering the bytes of a connection (a chunk leaves no earlier than the one before it).

Accuracy: the event loop waits in select(), whose timeout has microsecond resolution (epoll's
has milliseconds, and would round each half-delay up), with the process's timer slack at its
smallest; what the relay adds of its own (two more hops through Python) is measured with a
zero delay and declared beside the asked one. Standard library only: it starts fast."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import json
import os
import random
import selectors
import signal
import sys
from collections.abc import Callable

_PR_SET_TIMERSLACK = 29
SELECT_MAX_FDS = 1000  # select() takes descriptors below FD_SETSIZE (1024)


class _Lateness:
    """How late the loop's timers fire (the wake-up, the loop's own work): a moving average,
    bounded, which the relay takes off each delay it asks for."""

    def __init__(self) -> None:
        self.estimate = 0.0

    def add(self, late_s: float) -> None:
        self.estimate += 0.05 * (min(max(late_s, 0.0), MAX_LATENESS_S) - self.estimate)


# at most this much early per direction: on a quiet machine timers fire 0.03-0.06 ms late, and a
# busy one's longer lateness (up to 0.5 ms, once allowed here) is not a promise that the next timer
# will be as late: asked that early on a calmer moment, a round trip at 1 ms came back in 0.78
MAX_LATENESS_S = 0.0001
LATENESS = _Lateness()


class _Delivered:
    """How late chunks left against the delay asked for them (a busy machine, a relay short of
    CPU): printed as JSON when the relay is stopped, for the step's facts."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        self.worst = 0.0
        self.recent: list[float] = []  # the last KEEP, for a p99

    def add(self, late_s: float) -> None:
        self.count += 1
        self.total += late_s
        self.worst = max(self.worst, late_s)
        self.recent.append(late_s)
        if len(self.recent) > 2 * KEEP:
            del self.recent[:KEEP]

    def summary(self) -> dict[str, float]:
        if not self.count:
            return {"chunks": 0}
        ordered = sorted(self.recent)
        return {"chunks": self.count, "late_mean_ms": 1000 * self.total / self.count,
                "late_p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
                "late_max_ms": 1000 * self.worst}


KEEP = 10_000
DELIVERED = _Delivered()


class _Half(asyncio.Protocol):
    """One side of a relayed connection: what it receives goes to `peer`, `delay_s` later."""

    def __init__(self, delay: Callable[[], float]) -> None:
        self.delay = delay
        self.transport: asyncio.Transport | None = None
        self.peer: _Half | None = None
        self.pending: list[bytes] = []  # received before the peer was connected
        self.last_due = 0.0
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        peer = self.peer
        if peer is None or peer.transport is None:
            self.pending.append(data)
            return
        d = self.delay()
        if d <= 0 and self.last_due == 0.0:
            peer.transport.write(data)
            return
        loop = asyncio.get_running_loop()
        # timers fire late by about the same each time: ask for them that much early; a chunk
        # never overtakes the one before it (a timer heap does not keep ties in order)
        due = loop.time() + d
        at = max(due - LATENESS.estimate, self.last_due + 1e-9)
        self.last_due = at
        loop.call_at(at, peer.send, data, at, due)

    def send(self, data: bytes, at: float = 0.0, due: float = 0.0) -> None:
        if at:
            now = asyncio.get_running_loop().time()
            LATENESS.add(now - at)
            DELIVERED.add(now - due)
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(data)

    def flush_pending(self) -> None:
        for data in self.pending:
            self.data_received(data)
        self.pending.clear()

    def eof_received(self) -> bool | None:
        self._after_last(lambda p: p.transport.write_eof() if p.transport and p.transport.can_write_eof()
                         else p.close())
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._after_last(lambda p: p.close())

    def _after_last(self, act: Callable[[_Half], object]) -> None:
        """Pass an end on to the peer once the data before it has left."""
        peer = self.peer
        if peer is None:
            return
        loop = asyncio.get_running_loop()
        if self.last_due > loop.time():
            loop.call_at(self.last_due + 1e-9, act, peer)
        else:
            act(peer)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def pause_writing(self) -> None:  # the peer is slow to take what this side sends it
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.peer is not None and self.peer.transport is not None and not self.peer.closed:
            self.peer.transport.resume_reading()


def delay_of(half_rtt_s: float, half_jitter_s: float, rng: random.Random) -> Callable[[], float]:
    """One direction's delay per chunk: half the round trip, plus normal jitter (never below 0)."""
    if half_jitter_s <= 0:
        return lambda: half_rtt_s
    return lambda: max(0.0, rng.gauss(half_rtt_s, half_jitter_s))


async def _serve(args: argparse.Namespace) -> None:
    loop = asyncio.get_running_loop()
    rng = random.Random()
    half, jitter = args.rtt_ms / 2000.0, args.jitter_ms / 2000.0

    async def upstream(client: _Half) -> None:
        server = _Half(delay_of(half, jitter, rng))
        server.peer, client.peer = client, server
        try:
            if args.upstream_unix:
                await loop.create_unix_connection(lambda: server, args.upstream_unix)
            else:
                await loop.create_connection(lambda: server, args.upstream_host, args.upstream_port)
        except OSError:
            client.close()
            return
        client.flush_pending()
        if client.closed:
            server.close()

    def accepted() -> _Half:
        client = _Half(delay_of(half, jitter, rng))
        tasks.add(t := loop.create_task(upstream(client)))
        t.add_done_callback(tasks.discard)
        return client

    tasks: set[asyncio.Task[None]] = set()
    srv = await _listen(loop, accepted, args)
    print(srv.sockets[0].getsockname()[1] if not args.listen_unix else 0, flush=True)
    stop = asyncio.Event()
    for s in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(s, stop.set)
    await stop.wait()
    srv.close()
    print(json.dumps(DELIVERED.summary()), flush=True)


async def _listen(loop: asyncio.AbstractEventLoop, accepted: Callable[[], _Half],
                  args: argparse.Namespace) -> asyncio.Server:
    """A loopback TCP port; or, for an upstream on a Unix socket (where the server may trust its
    local peers), a Unix socket in a directory of pgknee's, open to pgbench's user alone."""
    if not args.listen_unix:
        return await loop.create_server(accepted, "127.0.0.1", 0, backlog=4096)
    old = os.umask(0o177)
    try:
        srv = await loop.create_unix_server(accepted, args.listen_unix, backlog=4096)
    finally:
        os.umask(old)
    if args.listen_owner:
        uid, gid = (int(x) for x in args.listen_owner.split(":"))
        os.chown(args.listen_unix, uid, gid)
    return srv


def _least_timer_slack() -> None:
    """Sleep as asked, not up to 50 us later (the default timer slack)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_TIMERSLACK, 1, 0, 0, 0)


def _parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m pgknee.netsim.relay")
    p.add_argument("--upstream-host", default="127.0.0.1")
    p.add_argument("--upstream-port", type=int, default=5432)
    p.add_argument("--upstream-unix", default="")
    p.add_argument("--rtt-ms", type=float, default=0.0)
    p.add_argument("--jitter-ms", type=float, default=0.0)
    p.add_argument("--listen-unix", default="", help="listen on this Unix socket, not a loopback port")
    p.add_argument("--listen-owner", default="", help="UID:GID the Unix socket is given to")
    p.add_argument("--connections", type=int, default=100, help="how many connections to expect at most")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    _least_timer_slack()
    # select() for microsecond timeouts while the descriptors fit (two per connection)
    selector: selectors.BaseSelector = (selectors.SelectSelector() if args.connections * 2 + 20 < SELECT_MAX_FDS
                                        else selectors.DefaultSelector())
    loop = asyncio.SelectorEventLoop(selector)
    try:
        loop.run_until_complete(_serve(args))
    except (KeyboardInterrupt, BrokenPipeError):
        pass
    finally:
        loop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
