"""Ingest: paths -> canonical ``events``, ``ingest_stats`` and ``quarantine`` tables.

Files are read and tokenized in a thread pool (Polars and zlib release the GIL). Each file's
format is detected from its first lines (:func:`~stacklens.ingest.formats.detect_format`); files
of no known format are listed in ``ingest_stats`` (kind ``unrecognized_file``) with their line
count, never silently dropped.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import polars as pl

from stacklens.errors import NoLogsFound
from stacklens.ingest.facts import add_facts
from stacklens.ingest.formats import LineFormat, detect_format
from stacklens.ingest.layout import FileNames, infer_layout, merged_names, service_from_loggers
from stacklens.ingest.names import _PROJECTS, NameMap, host_from_path
from stacklens.ingest.sources import SourceFile, display_name, find_files, read_bytes
from stacklens.ingest.timezone import TzSpec, apply_tz, parse_tz
from stacklens.ingest.tokenize import FileChunk, count_lines, tokenize_batch
from stacklens.schema import conform, empty
from stacklens.settings import positive_int

__all__ = [
    "EventSink",
    "IngestResult",
    "batch_bytes_setting",
    "ingest",
    "ingest_files",
    "layout_of",
    "within_window",
]

#: Receives the ``events`` rows batch by batch, in file order, each conformed to
#: :data:`~stacklens.schema.EVENTS` (streaming ingest: no whole-corpus frame is kept).
EventSink = Callable[[pl.DataFrame], None]

_SAMPLE_LINES = 400
#: default of ``STACKLENS_INGEST_BATCH_MIB``: files are tokenized together up to about this many
#: bytes of log text per batch
_BATCH_MIB = 32
_SAMPLE_LINE_CHARS = 4_096
_SAMPLE_HEAD_BYTES = 256 << 10
#: per host without ``--tz`` (ingest_stats ``timezone_assumption``)
HOST_TZ_ASSUMED = (
    "times assumed UTC: no zone in oslo.log lines; pass --tz HOST=ZONE if this host logs local time"
)
#: the run's summary without ``--tz`` (manifest, report); the first word is the zone shown
TIMEZONE_ASSUMPTION = (
    "UTC (assumed for every host: oslo.log lines carry no zone; pass --tz HOST=ZONE for a host "
    "that logs local time)"
)


def batch_bytes_setting() -> int:
    """Bytes of log text per tokenized batch: ``STACKLENS_INGEST_BATCH_MIB`` (MiB, an integer
    >= 1; default 32). Peak memory of a streaming ingest is about ``(workers + 3)`` batches
    (read, tokenized, waiting for the sink's thread and being written) times ~3 (text, Arrow
    columns, Parquet pages) plus the largest file read whole (files are not split), whatever the
    input size. Measured on 2 cores, ``stacklens ingest`` of the 10 M-line bench corpus, five
    pairs in turn: 32 MiB against 64 MiB (the default until session 32) the same wall (ratio
    0.997) and CPU, peak RSS 998 against 1,331 MiB (fewer fresh pages in flight); 16 MiB
    0.90-0.94 GB but 3-4 % slower (more per-batch work).
    Raises :class:`~stacklens.errors.UserError` for a value that is not a positive integer."""
    return positive_int("STACKLENS_INGEST_BATCH_MIB", _BATCH_MIB, unit="MiB") << 20


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
    timezone_summary: str = TIMEZONE_ASSUMPTION  # what the times are, in words; starts "UTC"
    #: records dropped by ``ingest(window_ns=...)`` (not in ``events``; one ``ingest_stats`` row)
    outside_window: int = 0
    #: rows of the events table; with a sink, ``events`` is empty and the rows went there
    records: int = 0


@dataclass
class _Read:
    """One file read and classified: a chunk to tokenize, or None (skipped), plus stats."""

    chunk: FileChunk | None
    fmt: LineFormat | None
    stats: list[tuple[str, str, str, int, str]]
    lines: int
    nbytes: int
    #: the file's name in ``events.file`` when it is a log (kept once ``chunk`` is dropped)
    log_file: str | None = None


@dataclass
class _Tokenized:
    events: pl.DataFrame | None
    quarantine: pl.DataFrame | None
    stats: list[tuple[str, str, str, int, str]]


def _sample_lines(data: bytes) -> list[str]:
    """The first lines of ``data`` for format detection, each cut to a few KiB (a 1 MB first
    line must not hide the records after it)."""
    # the lines the first 256 KiB hold whole (ended by a newline) in one split, often all;
    # the rest one by one
    parts = data[:_SAMPLE_HEAD_BYTES].split(b"\n", _SAMPLE_LINES)
    whole = parts[:-1]
    out = [p[:_SAMPLE_LINE_CHARS].decode("utf-8", "replace") for p in whole]
    pos = sum(len(p) for p in whole) + len(whole)
    while len(out) < _SAMPLE_LINES and pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end
        out.append(data[pos : min(end, pos + _SAMPLE_LINE_CHARS)].decode("utf-8", "replace"))
        pos = end + 1
    return out


def _read(src: SourceFile, names: NameMap, merged_seen: bool, fn: FileNames | None = None) -> _Read:
    path = display_name(str(src.path))
    rr = read_bytes(src.path)
    stats = [(path, k, sev, c, d) for k, sev, c, d in rr.problems]
    data = rr.data
    fmt = detect_format(_sample_lines(data))
    nlines = count_lines(data)
    if fmt is None:
        why = "binary file" if b"\0" in data[:8192] else "no oslo.log-style record lines"
        stats.append((path, "unrecognized_file", "info", nlines, why))
        return _Read(None, None, stats, nlines, len(data))
    if fmt.name == "oslo_merged" and not src.explicit and merged_seen:
        stats.append(
            (path, "merged_output_skipped", "info", nlines,
             "os-log-merger output beside its source logs; name it alone to ingest it")
        )
        return _Read(None, None, stats, nlines, len(data))
    fn = fn or infer_layout([(path, display_name(src.path.name))], names)[path]
    # syslog/journald lines name their host, but a collected ``<host>/var/log/...`` tree names
    # it too (stacklens collect's inventory name): the folder wins so that every file of one
    # machine shares one host whatever its hostname says
    host = fn.host if not fmt.per_line_host else (names.host(path) or host_from_path(path))
    if host is None and not fmt.per_line_host:
        host = display_name(src.root.resolve().name) or "localhost"
    service = names.service(path)
    if service is None and not fmt.per_line_service:
        service = fn.service
        stats.extend((path, k, sev, 1, d) for k, sev, d in fn.notes)
    # a non-UTF-8 name is counted once, by sources.py (kind non_utf8_name)
    year = datetime.fromtimestamp(src.path.stat().st_mtime, UTC).year
    stats.append((path, "format", "info", nlines, fmt.name))
    if fmt.name == "syslog":
        stats.append((path, "year_assumed", "info", 0, f"syslog time has no year; used {year}"))
    return _Read(FileChunk(path, data, host, service, year), fmt, stats, nlines, len(data), path)


def _merged(ev: pl.DataFrame, names: NameMap) -> tuple[pl.DataFrame, list]:
    """os-log-merger records: aliases -> hosts and services (:func:`merged_names`)."""
    keys = ev.select("file", "service").unique().drop_nulls().rows()
    got = merged_names(keys, names)
    table = pl.DataFrame(
        [(f, a, h, s) for (f, a), (h, s, _) in got.items()],
        schema=["file", "service", "_mh", "_ms"], orient="row",
    )
    ev = ev.join(table, on=["file", "service"], how="left", maintain_order="left")
    ev = ev.with_columns(
        host=pl.coalesce("_mh", "host"), service=pl.coalesce("_ms", "service")
    ).drop("_mh", "_ms")
    counts = dict(((f, a), n) for f, a, n in
                  ev.group_by("file", "service").len().rows()) if got else {}
    stats = [(f, *note[:2], counts.get((f, s), 0), note[2])
             for (f, a), (_, s, note) in got.items() if note]
    return ev, stats


def _bare_project_files(ev: pl.DataFrame, stats: list) -> pl.DataFrame:
    """Files named only by their project (``nova.log``): the binary from the loggers
    (:func:`service_from_loggers`), said in ``ingest_stats`` kind ``layout_inferred``."""
    bare = ev.filter(pl.col("service").is_in(list(_PROJECTS)))
    if bare.height == 0:
        return ev
    fix = {}
    for (f, proj), g in bare.group_by("file", "service"):
        counts = dict(g.group_by("logger").len().rows())
        svc, why = service_from_loggers(str(proj), counts)
        if svc:
            fix[f] = svc
            stats.append((f, "layout_inferred", "info", g.height,
                          f"file names only the project {proj}; service {svc} from its "
                          f"loggers ({why}); pass --service-map if wrong"))
    if not fix:
        return ev
    return ev.with_columns(service=pl.col("file").replace_strict(
        fix, default=pl.col("service"), return_dtype=pl.String))


def _tokenize(chunks: list[FileChunk], fmt: LineFormat, tz: TzSpec,
              names: NameMap | None = None) -> _Tokenized:
    tr = tokenize_batch(chunks, fmt)
    ev = tr.events
    if ev.height and fmt.name == "oslo_merged":
        ev, extra = _merged(ev, names or NameMap())
        tr.stats.extend(extra)
    if ev.height and not fmt.per_line_service:
        ev = _bare_project_files(ev, tr.stats)
    if ev.height:
        ev = add_facts(ev, tr.stats)
        ev = apply_tz(ev, tz)
        ev = conform(ev, "events")
    return _Tokenized(ev, tr.quarantine, tr.stats)


def _rel(f: SourceFile) -> str:
    try:
        return str(f.path.relative_to(f.root))
    except ValueError:
        return f.path.name


def layout_of(files: list[SourceFile], names: NameMap) -> dict[str, FileNames]:
    """Host and service of each file, inferred from all of ``files`` together (keys: the file
    path as stored in ``events.file``)."""
    return infer_layout([(display_name(str(f.path)), display_name(_rel(f))) for f in files], names)


def _tz_summary(spec: TzSpec) -> str:
    if spec.default is None and not spec.hosts:
        return TIMEZONE_ASSUMPTION
    given = [f"{h}={z}" for h, z in spec.hosts]
    if spec.default:
        given.append(f"other hosts={spec.default}")
    rest = "" if spec.default else "; other hosts assumed UTC (oslo.log lines carry no zone)"
    return f"UTC (converted from local time by --tz: {', '.join(given)}{rest})"


def _tz_rows(counts: list[tuple[str | None, int]], spec: TzSpec,
             ) -> list[tuple[str, str, str, int, str]]:
    """One ``timezone_assumption`` row per host (``counts``: (host, records) sorted), in words
    (never local time labelled UTC silently)."""
    rows = []
    for host, n in counts:
        zone = spec.zone(host)
        said = (f"times converted from {zone} to UTC (--tz)" if zone
                else HOST_TZ_ASSUMED)
        rows.append(("*", "timezone_assumption", "info", n, f"host {host}: {said}"))
    return rows


def ingest(
    paths: list[str],
    *,
    names: NameMap | None = None,
    tz_offset_s: int = 0,
    workers: int | None = None,
    on_file: Callable[[int, int, int], None] | None = None,
    batch_bytes: int | None = None,
    tz: list[str] | None = None,
    window_ns: tuple[int, int] | None = None,
    sink: EventSink | None = None,
) -> IngestResult:
    """Read every log under ``paths`` into the canonical tables.

    Files are read in a thread pool, grouped by format into batches of about ``batch_bytes``
    and each batch is tokenized in one vectorized pass (``batch_bytes`` None:
    :func:`batch_bytes_setting`). ``tz_offset_s`` is the logs' UTC offset
    in seconds (subtracted to give UTC); ``tz`` are ``--tz`` entries (``ZONE`` or ``HOST=ZONE``,
    IANA name or ``+HH:MM``, see :func:`~stacklens.ingest.timezone.parse_tz`). ``on_file(done, total, lines)`` is called after each
    file is read. Raises :class:`~stacklens.errors.InputNotFound` for a missing path and
    :class:`~stacklens.errors.NoLogsFound` when no file holds log records.

    ``window_ns = (start_ns, end_ns)`` (UTC ns, both ends included) keeps only the records whose
    ``ts_ns`` is inside (a run's time window; records without a time are dropped too) and adds
    one ``ingest_stats`` row ``("*", "outside_run_window", "info", n, ...)`` counting the others
    (also in :attr:`IngestResult.outside_window`; ``lines`` and ``files_read`` stay totals).

    ``sink``: streaming ingest; the events go to ``sink`` batch by batch in file order (the same
    rows, in the same order, as ``events`` without a sink), called on a thread of its own (one
    batch waits at most), and ``events`` comes back empty (:attr:`IngestResult.records` counts
    them); an exception of ``sink`` ends the ingest and is raised here. Memory then stays
    bounded by a few batches of ``batch_bytes`` per worker, whatever the input size.
    """
    if sink is not None:
        return ingest_files(
            list(find_files(list(paths))), names=names, tz_offset_s=tz_offset_s,
            workers=workers, on_file=on_file, batch_bytes=batch_bytes,
            inputs=[str(p) for p in paths], tz=tz, sink=sink, window_ns=window_ns,
        )
    res = ingest_files(
        list(find_files(list(paths))),
        names=names,
        tz_offset_s=tz_offset_s,
        workers=workers,
        on_file=on_file,
        batch_bytes=batch_bytes,
        inputs=[str(p) for p in paths],
        tz=tz,
    )
    return res if window_ns is None else within_window(res, window_ns)


def within_window(res: IngestResult, window_ns: tuple[int, int]) -> IngestResult:
    """``res`` with only the records inside ``window_ns = (start_ns, end_ns)`` (see
    :func:`ingest`); the dropped ones are counted in one ``outside_run_window`` stats row."""
    events = res.events
    inside = pl.col("ts_ns").is_between(*window_ns)
    n_out = events.height - events.filter(inside).height
    events = events.filter(inside)
    row = pl.DataFrame(
        [("*", "outside_run_window", "info", n_out, "records outside the run's time window")],
        schema=res.ingest_stats.schema, orient="row",
    )
    return replace(res, events=events, ingest_stats=pl.concat([res.ingest_stats, row]),
                   outside_window=n_out, records=events.height)


class _SinkThread:
    """``sink`` run on a thread of its own: Parquet encoding of one batch (~30 % of the main
    thread's time when it ran there) overlaps reading and tokenizing the next ones. ``put``
    blocks while ``depth`` batches wait (memory: at most ``depth + 1`` batches here); the first
    error of the sink is raised again by the next ``put`` or by ``close``."""

    def __init__(self, sink: EventSink, depth: int = 1):
        self.sink = sink
        self.q: queue.Queue[pl.DataFrame | None] = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, name="stacklens-sink", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (df := self.q.get()) is not None:
            if self.error is None:
                try:
                    self.sink(df)
                except BaseException as e:  # noqa: BLE001  # handed to the main thread
                    self.error = e
            del df

    def _raise(self) -> None:
        if self.error is not None:
            raise self.error

    def put(self, df: pl.DataFrame) -> None:
        self._raise()
        self.q.put(df)

    def close(self, quiet: bool = False) -> None:
        """Wait until every batch is written; raise the sink's error if it had one (unless
        ``quiet``: another error is on its way)."""
        self.q.put(None)
        self.thread.join()
        if not quiet:
            self._raise()


class _Collect:
    """The events of each tokenized batch, in order: kept (no sink) or handed to the sink
    (filtered to the window first); per-host counts for the ``timezone_assumption`` rows."""

    def __init__(self, sink: EventSink | None, window_ns: tuple[int, int] | None):
        self.sink = None if sink is None else _SinkThread(sink)
        self.window_ns = window_ns
        self.kept: list[pl.DataFrame] = []
        self.hosts: dict[str | None, int] = {}
        self.records = self.outside = 0

    def add(self, ev: pl.DataFrame | None) -> None:
        if ev is None or not ev.height:
            return
        if self.sink is None:
            self.kept.append(ev)
            return
        for host, n in ev.group_by("host").len().rows():
            self.hosts[host] = self.hosts.get(host, 0) + n
        if self.window_ns is not None:
            inside = ev.filter(pl.col("ts_ns").is_between(*self.window_ns))
            self.outside += ev.height - inside.height
            ev = inside
        self.records += ev.height
        if ev.height:
            self.sink.put(ev)

    def close(self, quiet: bool = False) -> None:
        """Wait for the sink to have every batch (raises its error, if any, unless ``quiet``)."""
        if self.sink is not None:
            self.sink.close(quiet)

    def any(self) -> bool:
        return bool(self.kept or self.hosts)

    def host_counts(self) -> list[tuple[str | None, int]]:
        """(host, records) sorted by host, nulls last (as ``sort("host", nulls_last=True)``)."""
        if self.sink is None:
            events = pl.concat(self.kept, how="vertical", rechunk=False)
            return events.group_by("host").len().sort("host", nulls_last=True).rows()
        # Python's str order is code-point order, the same as Polars' UTF-8 byte order
        return sorted(self.hosts.items(), key=lambda kv: (kv[0] is None, kv[0] or ""))


def ingest_files(
    files: list[SourceFile],
    *,
    names: NameMap | None = None,
    tz_offset_s: int = 0,
    workers: int | None = None,
    on_file: Callable[[int, int, int], None] | None = None,
    batch_bytes: int | None = None,
    inputs: list[str] | None = None,
    merged_seen: bool | None = None,
    tz: list[str] | None = None,
    layout: dict[str, FileNames] | None = None,
    sink: EventSink | None = None,
    window_ns: tuple[int, int] | None = None,
) -> IngestResult:
    """:func:`ingest` of files already found (a Spark partition gets its share this way).

    ``merged_seen`` says whether os-log-merger output sits beside other logs in the whole input
    (default: more than one file here). ``layout`` is :func:`~stacklens.ingest.layout.
    infer_layout` of the whole input (default: of ``files``; a partition must be given the
    whole input's, as hosts are inferred from all files together). ``sink`` and ``window_ns``
    (the window is applied only with a sink; else see :func:`within_window`): see
    :func:`ingest`."""
    t0 = time.perf_counter()
    batch_bytes = batch_bytes_setting() if batch_bytes is None else batch_bytes
    names = names or NameMap()
    tzspec = parse_tz(tz or [], tz_offset_s)
    if layout is None:
        layout = layout_of(files, names)
    # os-log-merger output is skipped when the folder also holds per-service logs
    merged_seen = len(files) > 1 if merged_seen is None else merged_seen
    workers = workers or max(1, min(len(files), os.cpu_count() or 1))
    reads: list[_Read] = []
    toks: list[Future[_Tokenized]] = []
    outs: list[_Tokenized] = []
    got = _Collect(sink, window_ns)

    def drain(keep: int) -> None:
        """Take finished batches in order until at most ``keep`` are in flight."""
        while len(outs) < len(toks) and (len(toks) - len(outs) > keep or toks[len(outs)].done()):
            o = toks[len(outs)].result()
            toks[len(outs)] = None  # type: ignore[call-overload]  # drop the frame once taken
            got.add(o.events)
            o.events = None
            outs.append(o)
    pending: dict[str, tuple[LineFormat, list[FileChunk]]] = {}
    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:

            def flush(name: str) -> None:
                fmt, chunks = pending.pop(name)
                toks.append(pool.submit(_tokenize, chunks, fmt, tzspec, names))

            # reads run ahead of tokenizing by at most 2 x workers files (bounded memory)
            ahead = 2 * workers
            futs: list[Future[_Read]] = []
            nxt = 0
            for i in range(len(files)):
                while nxt < len(files) and nxt < i + ahead:
                    futs.append(pool.submit(_read, files[nxt], names, merged_seen,
                                           layout.get(display_name(str(files[nxt].path)))))
                    nxt += 1
                r = futs[i].result()
                futs[i] = None  # type: ignore[call-overload]  # drop the bytes once batched
                chunk, r.chunk = r.chunk, None  # the batch holds the bytes, not the list of reads
                reads.append(r)
                if on_file:
                    on_file(i + 1, len(files), r.lines)
                if chunk is None or r.fmt is None:
                    continue
                fmt, chunks = pending.setdefault(r.fmt.name, (r.fmt, []))
                chunks.append(chunk)
                del chunk
                if sum(len(c.data) for c in chunks) >= batch_bytes:
                    flush(r.fmt.name)
                # at most `workers` batches tokenized ahead of the sink (bounded memory)
                drain(workers if sink is not None else len(toks))
            for name in list(pending):
                flush(name)
            drain(0)
    except BaseException:
        got.close(quiet=True)
        raise
    got.close()
    qs = [o.quarantine for o in outs if o.quarantine is not None and o.quarantine.height]
    stats = [s for r in reads for s in r.stats] + [s for o in outs for s in o.stats]
    settled = {s[0] for s in stats if s[1] == "layout_inferred"}
    # "no host while others name theirs" holds only if a file that is a log names its host
    logs_named = any(r.log_file is not None and layout.get(r.log_file, None) is not None
                     and layout[r.log_file].host for r in reads)
    stats = [s for s in stats if not (
        s[1] == "layout_ambiguous"
        and ((s[0] in settled and "names no known OpenStack service" in s[4])
             or (not logs_named and s[4].startswith("no host in the name or folder"))))]
    if not got.any():
        raise NoLogsFound(
            f"no OpenStack log records found under {', '.join(inputs or [])} "
            f"({len(files)} files looked at)"
        )
    # file order, not time order: the trace stage sorts what it needs (a global sort here cost
    # a copy of the largest table)
    events = (pl.concat(got.kept, how="vertical", rechunk=False) if got.kept
              else empty("events"))
    stats.extend(_tz_rows(got.host_counts(), tzspec))
    if sink is not None and window_ns is not None:
        stats.append(("*", "outside_run_window", "info", got.outside,
                      "records outside the run's time window"))
    quarantine = conform(pl.concat(qs), "quarantine") if qs else empty("quarantine")
    st = conform(
        pl.DataFrame(stats, schema=["file", "kind", "severity", "count", "detail"], orient="row"),
        "ingest_stats",
    )
    return IngestResult(
        events=events,
        ingest_stats=st,
        quarantine=quarantine,
        files_read=sum(r.log_file is not None for r in reads),
        files_skipped=sum(r.log_file is None for r in reads),
        lines=sum(r.lines for r in reads),
        bytes=sum(r.nbytes for r in reads),
        wall_s=time.perf_counter() - t0,
        inputs=inputs or [],
        timezone_summary=_tz_summary(tzspec),
        outside_window=got.outside,
        records=events.height if sink is None else got.records,
    )
