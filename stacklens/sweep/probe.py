"""Network probes: round-trip latency (by placement) and the connectivity gap of a fail-over,
from continuous ``ping`` (iputils) while a fault is injected.

``ping -D -n -i INTERVAL -w DURATION ADDRESS`` (DURATION whole seconds, rounded up) prints one line per reply,
``[<epoch s>.<us>] 64 bytes from <addr>: icmp_seq=<n> ttl=<t> time=<ms> ms`` (``-D``: the
reception time stamp, iputils ``ping(8)``). From the replies: loss = sequence numbers sent
and never answered; the outage is the longest silence between two consecutive replies minus
one interval (the silence a lossless ping would have had), the way SDN fail-over studies
report it; latency percentiles are nearest-rank over the replies' ``time=`` values.
Intervals below 0.2 s need root (iputils' limit for other users).
"""

from __future__ import annotations

import asyncio
import math
import re
import shlex
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace

from stacklens.collect.transport import Transport

__all__ = ["PingReply", "ProbeResult", "outage", "parse_ping", "ping_probe", "timed"]

_REPLY = re.compile(r"^\[(\d+\.\d+)\] \d+ bytes from [^:]+: icmp_seq=(\d+) .*?time=([\d.]+) ms")
MAX_DURATION_S = 3600.0


@dataclass(frozen=True)
class PingReply:
    """One echo reply: sequence number, reception time (ns since epoch), round trip (ms)."""

    seq: int
    ts_ns: int
    rtt_ms: float


@dataclass(frozen=True)
class ProbeResult:
    """A continuous ping: counts, loss, the longest gap and the outage it means (s), round
    trip percentiles (ms); ``gap_start_ns``/``gap_end_ns`` are the replies around the gap;
    ``fault_s`` how long the injected fault lasted (None without one); ``error`` when ping
    could not run."""

    sent: int
    received: int
    loss_pct: float
    max_gap_s: float | None
    outage_s: float | None
    gap_start_ns: int | None
    gap_end_ns: int | None
    rtt_p50_ms: float | None
    rtt_p99_ms: float | None
    rtt_max_ms: float | None
    interval_s: float
    fault_s: float | None = None
    error: str | None = None


def parse_ping(text: str) -> list[PingReply]:
    """The replies in ``ping -D`` output (other lines ignored), in order of arrival."""
    out = []
    for line in text.splitlines():
        m = _REPLY.match(line.strip())
        if m:
            out.append(PingReply(int(m.group(2)), int(float(m.group(1)) * 1e9),
                                 float(m.group(3))))
    return out


def _nearest_rank(vals: list[float], p: float) -> float | None:
    if not vals:
        return None
    s = sorted(vals)
    return s[max(0, min(len(s) - 1, math.ceil(len(s) * p / 100) - 1))]


def outage(replies: list[PingReply], interval_s: float, sent: int | None = None,
           fault_s: float | None = None) -> ProbeResult:
    """Loss, longest gap, outage and round-trip percentiles of ``replies``. ``sent`` is the
    number of requests (default: the highest sequence number answered)."""
    seqs = {r.seq for r in replies}
    n_sent = sent if sent is not None else (max(seqs) if seqs else 0)
    gap = start = end = None
    for a, b in zip(replies, replies[1:], strict=False):
        if gap is None or b.ts_ns - a.ts_ns > gap:
            gap, start, end = b.ts_ns - a.ts_ns, a.ts_ns, b.ts_ns
    rtts = [r.rtt_ms for r in replies]
    return ProbeResult(
        sent=n_sent, received=len(seqs),
        loss_pct=100.0 * (n_sent - len(seqs)) / n_sent if n_sent else 0.0,
        max_gap_s=gap / 1e9 if gap is not None else None,
        outage_s=max(0.0, gap / 1e9 - interval_s) if gap is not None else None,
        gap_start_ns=start, gap_end_ns=end, rtt_p50_ms=_nearest_rank(rtts, 50),
        rtt_p99_ms=_nearest_rank(rtts, 99), rtt_max_ms=max(rtts) if rtts else None,
        interval_s=interval_s, fault_s=fault_s)


async def ping_probe(src: Transport, address: str, interval_s: float = 0.02,
                     duration_s: float = 5.0,
                     fault: Callable[[], Awaitable[float]] | None = None,
                     fault_after_s: float = 1.0,
                     keep: Callable[[str], None] | None = None) -> ProbeResult:
    """Ping ``address`` from ``src`` every ``interval_s`` for ``duration_s``; with ``fault``
    (a coroutine function returning how long the fault lasted, s) started ``fault_after_s``
    into the ping; ``keep`` receives ping's raw output. Never raises for ping's own failure
    (``error`` is set)."""
    if not 0 < duration_s <= MAX_DURATION_S:
        raise ValueError(f"duration_s must be in (0, {MAX_DURATION_S}]")
    cmd = (f"exec ping -D -n -i {interval_s:g} -w {math.ceil(duration_s)} -W 1 "
           f"{shlex.quote(address)}")
    run = asyncio.ensure_future(src.run(cmd, duration_s + 30))
    fault_s = None
    if fault is not None:
        await asyncio.sleep(fault_after_s)
        fault_s = await fault()
    try:
        res = await run
    except (TimeoutError, OSError) as e:
        return ProbeResult(0, 0, 0.0, None, None, None, None, None, None, None, interval_s,
                           fault_s, f"ping did not end: {e}")
    if keep is not None:
        keep(res.stdout.decode("utf-8", "replace") + res.stderr)
    replies = parse_ping(res.stdout.decode("utf-8", "replace"))
    m = re.search(r"(\d+) packets transmitted", res.stdout.decode("utf-8", "replace"))
    result = outage(replies, interval_s, int(m.group(1)) if m else None, fault_s)
    if not replies:
        return replace(result, error=f"no reply (exit {res.exit_status}): "
                                     f"{res.stderr.strip()[:200]}")
    return result


def timed(fn: Callable[[], Awaitable[None]], hold_s: float,
          undo: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[float]]:
    """A fault for :func:`ping_probe`: ``fn`` (inject), wait ``hold_s``, ``undo``; returns
    the time between the end of ``fn`` and the end of ``undo`` (s, monotonic clock)."""
    async def go() -> float:
        await fn()
        t0 = time.monotonic()
        await asyncio.sleep(hold_s)
        await undo()
        return time.monotonic() - t0
    return go
