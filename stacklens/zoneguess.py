"""Zone-offset guesses from paired timestamps: is a host logging local time, and which zone?

oslo.log formats ``%(asctime)s`` with ``time.localtime`` and no ``%z`` (oslo.log
``formatters.py``, every release), so a host with ``TZ`` set logs local time without saying so.
Two kinds of evidence tell it apart from clock skew:

- :func:`detect_offset`: pairs of (client UTC send time, server receipt time) of one host, e.g.
  ``requests.jsonl`` of ``stacklens run`` joined to the API's first record of the same request id.
  A consistent offset of at least 15 minutes, close to a multiple of 15 minutes (every zone in
  the IANA database is), is a zone, not clock skew.
- :func:`offset_from_dual_stamps`: syslog/journald lines carry the syslog time (local to the
  collector) and the oslo time; a constant whole-hour difference is a local-time signal.

Pure arithmetic on ``int`` nanoseconds since the epoch; used by ingest (dual stamps) and by the
analyses (client/server pairs), so it sits below both and imports nothing of stacklens.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

__all__ = ["OffsetGuess", "detect_offset", "offset_from_dual_stamps"]

_NS = 1_000_000_000
_QUARTER_NS = 15 * 60 * _NS


@dataclass(frozen=True)
class OffsetGuess:
    """A detected local-time offset: ``offset_s`` east of UTC (server = UTC + offset), or None,
    with ``reason`` in words and the ``pairs`` it rests on."""

    offset_s: int | None
    reason: str
    pairs: int


def detect_offset(
    pairs: list[tuple[int, int]], min_pairs: int = 3, tol_s: float = 120.0
) -> OffsetGuess:
    """Local-time offset of one host from ``(client_ts_ns, server_ts_ns)`` pairs (client UTC
    send time, server receipt time of the same request). The median difference must be at least
    15 minutes from zero, within ``tol_s`` of a multiple of 15 minutes, and all but a tenth of
    the pairs within ``tol_s`` of the median (queueing spreads them; a zone does not)."""
    n = len(pairs)
    if n < min_pairs:
        return OffsetGuess(None, f"only {n} client/server pairs (need {min_pairs})", n)
    d = [s - c for c, s in pairs]
    med = statistics.median(d)
    q = round(med / _QUARTER_NS)
    if q == 0 and abs(med) <= tol_s * _NS:
        return OffsetGuess(None, f"server within {abs(med) / _NS:.1f} s of client: UTC", n)
    if q == 0:
        return OffsetGuess(None, f"offset {med / _NS:.0f} s is under 15 minutes: clock skew, "
                                 "not a zone", n)
    if abs(med - q * _QUARTER_NS) > tol_s * _NS:
        return OffsetGuess(None, f"offset {med / _NS:.0f} s is not a whole number of quarter "
                                 "hours: clock skew, not a zone", n)
    close = sum(abs(x - med) <= tol_s * _NS for x in d)
    if close < 0.9 * n:
        return OffsetGuess(None, f"offset not consistent ({close} of {n} pairs near the "
                                 "median)", n)
    off = q * 15 * 60
    return OffsetGuess(off, f"server times are {_fmt(off)} from client UTC in {close} of {n} "
                            f"requests: local time; pass --tz HOST={_fmt(off)}", n)


def offset_from_dual_stamps(pairs: list[tuple[int, int]], min_pairs: int = 3) -> OffsetGuess:
    """Whole-hour offset between ``(syslog_ts_ns, oslo_ts_ns)`` of the same lines, or None.
    The two clocks are the same machine's, so the difference must be constant to 2 s."""
    n = len(pairs)
    if n < min_pairs:
        return OffsetGuess(None, f"only {n} lines with both times", n)
    d = [s - o for s, o in pairs]
    med = statistics.median(d)
    q = round(med / _QUARTER_NS)
    if q == 0 or abs(med - q * _QUARTER_NS) > 2 * _NS or any(abs(x - med) > 2 * _NS for x in d):
        return OffsetGuess(None, "syslog and oslo times agree or differ irregularly", n)
    off = q * 15 * 60
    return OffsetGuess(off, f"syslog time is {_fmt(off)} from the oslo time on {n} lines: one "
                            "of them is local time", n)


def _fmt(off_s: int) -> str:
    sign = "-" if off_s < 0 else "+"
    return f"{sign}{abs(off_s) // 3600:02d}:{abs(off_s) % 3600 // 60:02d}"
