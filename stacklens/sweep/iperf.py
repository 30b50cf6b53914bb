"""iperf3: the commands a sweep runs, and its ``-J`` JSON output read as iperf3 defines it.

Format source: iperf3's ``iperf_api.c`` (``iperf_print_results``, JSON branch), 3.x. ``start``
holds ``test_start`` (``protocol`` TCP/UDP, ``num_streams``, ``reverse``, ``duration``,
``target_bitrate``); ``end`` holds, for TCP, ``sum_sent`` (with ``retransmits``) and
``sum_received``; for UDP ``sum`` (the client's view: ``jitter_ms``, ``lost_packets``,
``packets``, ``lost_percent``) and, from iperf3 3.? on, ``sum_sent`` / ``sum_received`` too.
``bits_per_second`` is in bit/s (10^6 bit/s = 1 Mbit/s). A failed test carries ``error``.

The throughput of a pair is what the receiver got (``sum_received``; UDP without it: ``sum``);
a point's throughput is the sum over pairs; UDP loss over pairs is ``sum(lost) / sum(packets)``
(never an average of percentages); jitter, which cannot be merged, is reported as the maximum.

iperf3's text output (no ``-J``) is recognised (:func:`is_iperf_text`) but not parsed.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any

from stacklens.sweep.plan import IperfMatrix, Point

__all__ = ["IperfResult", "client_command", "is_iperf_json", "is_iperf_text", "merge_iperf",
           "parse_iperf", "server_command"]

MBIT = 1e6


@dataclass(frozen=True)
class IperfResult:
    """One pair's iperf3 client output, or a merge of several pairs. Rates in bit/s."""

    protocol: str  # tcp, udp
    streams: int
    reverse: bool
    sent_bps: float
    received_bps: float
    seconds: float
    retransmits: int | None = None
    lost_packets: int | None = None
    packets: int | None = None
    jitter_ms: float | None = None
    error: str | None = None
    version: str | None = None

    @property
    def mbit_s(self) -> float:
        """Throughput (receiver side) in Mbit/s."""
        return self.received_bps / MBIT

    @property
    def lost_percent(self) -> float | None:
        """UDP loss in percent of packets (None for TCP)."""
        if self.packets is None or self.lost_packets is None:
            return None
        return 100.0 * self.lost_packets / self.packets if self.packets else 0.0


def is_iperf_json(doc: Any) -> bool:
    """True for an iperf3 ``-J`` document (``start`` and ``end`` mappings)."""
    return isinstance(doc, dict) and isinstance(doc.get("start"), dict) and isinstance(
        doc.get("end"), dict)


def is_iperf_text(head: str) -> bool:
    """True for iperf3's human-readable output (its first lines)."""
    return head.startswith("Connecting to host") or "[ ID] Interval" in head or (
        head.startswith("-----------") and "Server listening" in head)


def server_command(port: int) -> str:
    """``iperf3 -s`` for one test on ``port`` (``-1``: exit after one client), JSON out."""
    return f"iperf3 -s -1 -J -p {int(port)}"


def client_command(m: IperfMatrix, p: Point, address: str, port: int) -> str:
    """``iperf3 -c`` of one pair of point ``p`` (POSIX sh)."""
    args = ["iperf3", "-c", address, "-p", str(port), "-J", "--connect-timeout", "3000",
            "-t", f"{m.time_s:g}",
            "-P", str(p.parallel or 1)]
    if p.protocol == "udp":
        args += ["-u", "-b", m.bitrate]
    if p.reverse:
        args.append("-R")
    return " ".join(shlex.quote(a) for a in args)


def parse_iperf(doc: dict[str, Any]) -> IperfResult:
    """Read one iperf3 client ``-J`` document. A document with ``error`` gives a result with
    that error and zero rates. Raises ``ValueError`` when it is not iperf3 JSON."""
    if not is_iperf_json(doc):
        raise ValueError("not iperf3 JSON output (no 'start' / 'end')")
    ts = doc["start"].get("test_start") or {}
    proto = str(ts.get("protocol", "TCP")).lower()
    end = doc["end"]
    err = doc.get("error")
    sent = end.get("sum_sent") or end.get("sum") or {}
    recv = end.get("sum_received") or end.get("sum") or {}
    udp = end.get("sum") or recv
    version = doc["start"].get("version")
    if not sent and not recv:
        return IperfResult(proto, int(ts.get("num_streams", 1) or 1), bool(ts.get("reverse")),
                           0.0, 0.0, 0.0, error=str(err or "no end summary"), version=version)
    return IperfResult(
        protocol=proto, streams=int(ts.get("num_streams", 1) or 1),
        reverse=bool(ts.get("reverse")),
        sent_bps=float(sent.get("bits_per_second", 0.0)),
        received_bps=float(recv.get("bits_per_second", 0.0)),
        seconds=float(recv.get("seconds", sent.get("seconds", 0.0)) or 0.0),
        retransmits=int(sent["retransmits"]) if "retransmits" in sent else None,
        lost_packets=int(udp["lost_packets"]) if proto == "udp" and "lost_packets" in udp
        else None,
        packets=int(udp["packets"]) if proto == "udp" and "packets" in udp else None,
        jitter_ms=float(udp["jitter_ms"]) if proto == "udp" and "jitter_ms" in udp else None,
        error=str(err) if err else None, version=version,
    )


def merge_iperf(results: list[IperfResult]) -> IperfResult:
    """The sum over the pairs of one point: rates, retransmits, packets and losses summed;
    jitter is the maximum over pairs; ``seconds`` the longest."""
    if len(results) == 1:
        return results[0]
    r0 = results[0]

    def total(name: str) -> int | None:
        vals = [getattr(r, name) for r in results]
        return None if any(v is None for v in vals) else sum(vals)

    jit = [r.jitter_ms for r in results if r.jitter_ms is not None]
    return IperfResult(
        protocol=r0.protocol, streams=sum(r.streams for r in results), reverse=r0.reverse,
        sent_bps=sum(r.sent_bps for r in results),
        received_bps=sum(r.received_bps for r in results),
        seconds=max(r.seconds for r in results), retransmits=total("retransmits"),
        lost_packets=total("lost_packets"), packets=total("packets"),
        jitter_ms=max(jit) if jit else None,
        error="; ".join(r.error for r in results if r.error) or None,
    )
