"""Ingest: paths -> canonical ``events``, ``ingest_stats`` and ``quarantine`` tables.

Files are read and tokenized in a thread pool (Polars and zlib release the GIL). Each file's
format is detected from its first lines (:func:`~stacklens.ingest.formats.detect_format`); files
of no known format are listed in ``ingest_stats`` (kind ``unrecognized_file``) with their line
count, never silently dropped.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime

import polars as pl

from stacklens.errors import NoLogsFound
from stacklens.ingest.facts import add_facts
from stacklens.ingest.formats import detect_format
from stacklens.ingest.names import NameMap, host_from_path, service_from_name
from stacklens.ingest.sources import SourceFile, find_files, read_bytes
from stacklens.ingest.tokenize import tokenize
from stacklens.schema import conform, empty

__all__ = ["IngestResult", "ingest"]

_SAMPLE_LINES = 400
_SAMPLE_LINE_CHARS = 4_096
TIMEZONE_ASSUMPTION = "UTC (oslo.log timestamps carry no zone; pass --tz-offset to shift)"


@dataclass
class IngestResult:
    """The three ingest tables (see :mod:`stacklens.schema`) plus run totals."""

    events: pl.DataFrame
    ingest_stats: pl.DataFrame
    quarantine: pl.DataFrame
    files_read: int = 0
    files_skipped: int = 0
    lines: int = 0
    bytes: int = 0
    wall_s: float = 0.0
    inputs: list[str] = field(default_factory=list)


@dataclass
class _FileOut:
    events: pl.DataFrame | None
    quarantine: pl.DataFrame | None
    stats: list[tuple[str, str, str, int, str]]
    lines: int
    nbytes: int
    read: bool


def _sample_lines(data: bytes) -> list[str]:
    """The first lines of ``data`` for format detection, each cut to a few KiB (a 1 MB first
    line must not hide the records after it)."""
    out, pos = [], 0
    while len(out) < _SAMPLE_LINES and pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        out.append(data[pos : min(end, pos + _SAMPLE_LINE_CHARS)].decode("utf-8", "replace"))
        pos = end + 1
    return out


def _one_file(src: SourceFile, names: NameMap, tz_offset_s: int, merged_seen: bool) -> _FileOut:
    path = str(src.path)
    rr = read_bytes(src.path)
    stats = [(path, k, sev, c, d) for k, sev, c, d in rr.problems]
    data = rr.data
    sample = _sample_lines(data)
    fmt = detect_format(sample)
    nlines = data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)
    if fmt is None:
        why = "binary file" if b"\0" in data[:8192] else "no oslo.log-style record lines"
        stats.append((path, "unrecognized_file", "info", nlines, why))
        return _FileOut(None, None, stats, nlines, len(data), False)
    if fmt.name == "oslo_merged" and not src.explicit and merged_seen:
        stats.append(
            (path, "merged_output_skipped", "info", nlines,
             "os-log-merger output beside its source logs; name it alone to ingest it")
        )
        return _FileOut(None, None, stats, nlines, len(data), False)
    host = names.host(path) or host_from_path(path)
    if host is None and not fmt.per_line_host:
        host = src.root.resolve().name or "localhost"
    service = names.service(path)
    if service is None and not fmt.per_line_service:
        service = service_from_name(path)
    year = datetime.fromtimestamp(src.path.stat().st_mtime, UTC).year
    tr = tokenize(data, fmt, file=path, host=host, service=service, year=year)
    stats += [(path, k, sev, c, d) for k, sev, c, d in tr.stats]
    stats.append((path, "format", "info", tr.lines, fmt.name))
    if fmt.name == "syslog":
        stats.append((path, "year_assumed", "info", 0, f"syslog time has no year; used {year}"))
    ev = tr.events
    if ev.height:
        ev = add_facts(ev)
        if tz_offset_s:
            ev = ev.with_columns(pl.col("ts_ns") - tz_offset_s * 1_000_000_000)
        ev = conform(ev, "events")
    return _FileOut(ev, tr.quarantine, stats, tr.lines, len(data), True)


def ingest(
    paths: list[str],
    *,
    names: NameMap | None = None,
    tz_offset_s: int = 0,
    workers: int | None = None,
    on_file: Callable[[int, int, int], None] | None = None,
) -> IngestResult:
    """Read every log under ``paths`` into the canonical tables.

    ``tz_offset_s`` is the logs' UTC offset in seconds (subtracted to give UTC). ``on_file(done,
    total, lines)`` is called after each file. Raises :class:`~stacklens.errors.InputNotFound` for
    a missing path and :class:`~stacklens.errors.NoLogsFound` when no file holds log records.
    """
    t0 = time.perf_counter()
    names = names or NameMap()
    files = list(find_files(paths))
    # os-log-merger output is skipped when the folder also holds per-service logs
    merged_seen = len(files) > 1
    workers = workers or max(1, min(len(files), os.cpu_count() or 1))
    outs: list[_FileOut] = []
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futs = [pool.submit(_one_file, f, names, tz_offset_s, merged_seen) for f in files]
        for i, fut in enumerate(futs, 1):
            out = fut.result()
            outs.append(out)
            if on_file:
                on_file(i, len(files), out.lines)
    evs = [o.events for o in outs if o.events is not None and o.events.height]
    qs = [o.quarantine for o in outs if o.quarantine is not None and o.quarantine.height]
    stats = [s for o in outs for s in o.stats]
    stats.append(("*", "timezone_assumption", "info", 0, TIMEZONE_ASSUMPTION))
    if not evs:
        raise NoLogsFound(
            f"no OpenStack log records found under {', '.join(map(str, paths))} "
            f"({len(files)} files looked at)"
        )
    # file order, not time order: the trace stage sorts what it needs (a global sort here cost
    # a copy of the largest table)
    events = pl.concat(evs, how="vertical", rechunk=False)
    quarantine = conform(pl.concat(qs), "quarantine") if qs else empty("quarantine")
    st = conform(
        pl.DataFrame(stats, schema=["file", "kind", "severity", "count", "detail"], orient="row"),
        "ingest_stats",
    )
    return IngestResult(
        events=events,
        ingest_stats=st,
        quarantine=quarantine,
        files_read=sum(o.read for o in outs),
        files_skipped=sum(not o.read for o in outs),
        lines=sum(o.lines for o in outs),
        bytes=sum(o.nbytes for o in outs),
        wall_s=time.perf_counter() - t0,
        inputs=[str(p) for p in paths],
    )
