"""Time zones of hosts whose logs carry local time.

oslo.log formats ``%(asctime)s.%(msecs)03d`` with ``logging.Formatter.converter = time.localtime``
(oslo.log ``formatters.py``, every release; ``log_date_format`` has no ``%z``): a host with
``TZ`` set logs local time without saying so. This module parses ``--tz`` specs, converts
those hosts' times to UTC. Detecting a local-time offset from evidence is
:mod:`stacklens.zoneguess`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from stacklens.errors import MapError

__all__ = ["TzSpec", "apply_tz", "parse_tz"]

_NS = 1_000_000_000
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
