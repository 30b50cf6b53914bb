"""Time zones of hosts whose logs carry local time.

oslo.log formats ``%(asctime)s.%(msecs)03d`` with ``logging.Formatter.converter = time.localtime``
(oslo.log ``formatters.py``, every release; ``log_date_format`` has no ``%z``): a host with
``TZ`` set logs local time without saying so. This module parses ``--tz`` specs, converts
those hosts' times to UTC, and detects a local-time offset from evidence:

- :func:`detect_offset`: pairs of (client UTC send time, server receipt time) of one host, e.g.
  ``requests.jsonl`` of ``stacklens run`` joined to the API's first record of the same request id.
  A consistent offset of at least 15 minutes, close to a multiple of 15 minutes (every zone in
  the IANA database is), is a zone, not clock skew.
- :func:`offset_from_dual_stamps`: syslog/journald lines carry the syslog time (local to the
  collector) and the oslo time; a constant whole-hour difference is a local-time signal.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from stacklens.errors import MapError

__all__ = ["OffsetGuess", "TzSpec", "apply_tz", "detect_offset", "offset_from_dual_stamps",
           "parse_tz"]

_NS = 1_000_000_000
_QUARTER_NS = 15 * 60 * _NS
_FIXED = re.compile(r"^(?:UTC|GMT)?([+-])(\d{1,2})(?::?(\d{2}))?$")


@dataclass(frozen=True)
class TzSpec:
    """Zones per host: ``default`` for hosts not in ``hosts`` (None: UTC assumed). A zone is an
    IANA name (``Europe/Paris``, DST-aware) or a fixed offset ``+HH:MM``."""

    default: str | None
    hosts: tuple[tuple[str, str], ...] = ()

    def zone(self, host: str | None) -> str | None:
        """The zone given for ``host`` or the default."""
        return next((z for h, z in self.hosts if h == host), self.default)


def _check_zone(zone: str) -> str:
    m = _FIXED.match(zone)
    if m:
        sign, hh, mm = m.group(1), int(m.group(2)), int(m.group(3) or 0)
        if hh > 14 or mm > 59:
            raise MapError(f"--tz offset {zone!r} is out of range (-14:00..+14:00)")
        return f"{sign}{hh:02d}:{mm:02d}"
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError) as e:
        raise MapError(f"--tz zone {zone!r} is neither an IANA name (Europe/Paris) nor +HH:MM") from e
    return zone


def parse_tz(entries: list[str], offset_s: int = 0) -> TzSpec:
    """Parse ``--tz ZONE`` / ``--tz HOST=ZONE`` entries (repeatable); ``offset_s`` is the legacy
    ``--tz-offset`` (seconds east of UTC), used as default when no bare ZONE is given. Raises
    :class:`~stacklens.errors.MapError` on a bad zone or two defaults."""
    default, hosts = None, []
    for e in entries:
        host, sep, zone = e.rpartition("=")
        if sep and host:
            hosts.append((host, _check_zone(zone)))
        elif default is not None:
            raise MapError(f"--tz given two zones for all hosts ({default!r}, {e!r})")
        else:
            default = _check_zone(zone)
    if default is None and offset_s:
        sign = "-" if offset_s < 0 else "+"
        default = f"{sign}{abs(offset_s) // 3600:02d}:{abs(offset_s) % 3600 // 60:02d}"
    return TzSpec(default, tuple(hosts))


def _fixed_ns(zone: str) -> int | None:
    m = _FIXED.match(zone)
    if not m:
        return None
    sec = int(m.group(2)) * 3600 + int(m.group(3) or 0) * 60
    return (-sec if m.group(1) == "-" else sec) * _NS


def _to_utc(ts: pl.Expr, zone: str) -> pl.Expr:
    fixed = _fixed_ns(zone)
    if fixed is not None:
        return ts - fixed
    local = ts.cast(pl.Datetime("ns")).dt.replace_time_zone(
        zone, ambiguous="earliest", non_existent="null"
    )
    return local.dt.convert_time_zone("UTC").dt.replace_time_zone(None).cast(pl.Int64)


def apply_tz(events: pl.DataFrame, spec: TzSpec) -> pl.DataFrame:
    """``events`` with ``ts_ns`` of each host converted from its zone in ``spec`` to UTC (hosts
    without a zone unchanged). IANA zones follow DST; a local time that does not exist (the
    spring-forward hour) keeps the zone's standard offset."""
    if events.height == 0 or (spec.default is None and not spec.hosts):
        return events
    hosts = events.get_column("host").unique().to_list()
    expr = pl.col("ts_ns")
    for h in hosts:
        zone = spec.zone(h)
        if zone is None:
            continue
        conv = _to_utc(pl.col("ts_ns"), zone)
        if _fixed_ns(zone) is None:  # DST gap: fall back to the offset of January
            jan = ZoneInfo(zone).utcoffset(datetime(2020, 1, 15))
            jan_ns = int(jan.total_seconds()) * _NS if jan else 0
            conv = conv.fill_null(pl.col("ts_ns") - jan_ns)
        cond = pl.col("host").is_null() if h is None else pl.col("host") == h
        expr = pl.when(cond).then(conv).otherwise(expr)
    return events.with_columns(ts_ns=expr)


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
