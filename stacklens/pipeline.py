"""The pipeline as a library: ``ingest -> trace -> analyze -> report`` over one run folder.

Each step reads the previous step's tables from a :class:`~stacklens.store.RunStore`, writes its
own tables and its manifest section (:mod:`stacklens.manifest`), and returns that section; it
prints nothing. Progress goes to an optional callback (:data:`OnProgress`), so the CLI, a test or
a notebook decide how to show it. Because every step starts from the store, any step can be
replayed alone (vegeta's ``attack | encode | report``):

>>> store = RunStore("run")                                   # doctest: +SKIP
>>> ingest_step(store, ["logs/"]); trace_step(store)          # doctest: +SKIP
>>> report = report_step(store)                               # doctest: +SKIP

Steps: :func:`ingest_step` (logs -> events), :func:`trace_step` (events -> traces, spans, flows,
breakdown, phases, clock offsets), :func:`mine_step` (error templates; :func:`trace_and_mine_step`
runs the two overlapped), :func:`report_step` (tables -> report.json, report.html; reads
only). ``stacklens analyze`` is :func:`analyze_logs`; ``stacklens run`` drives the load
(:mod:`stacklens.drive`) and then runs the same steps with the run's window.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from stacklens.ingest.names import NameMap
from stacklens.ingest.pipeline import ingest
from stacklens.ingest.tokenize import native_wanted
from stacklens.manifest import IngestSection, ReportSection, TraceSection
from stacklens.schema import TABLES
from stacklens.store import RunStore, TableWriter

# The trace, mining and report stages' modules are imported in the steps that run them: an
# ingest alone does not need them, and they were ~0.2 s of its start (session 33).

__all__ = [
    "IngestOptions",
    "OnProgress",
    "StageProgress",
    "analyze_logs",
    "ingest_step",
    "mine_step",
    "report_step",
    "trace_and_mine_step",
    "trace_step",
]


@dataclass(frozen=True)
class IngestOptions:
    """How to read the logs. ``host_map``/``service_map``: ``GLOB=NAME`` entries
    (:class:`~stacklens.ingest.names.NameMap`); ``tz_offset_s``: UTC offset of every host's
    clock in seconds; ``tz``: ``ZONE`` or ``HOST=ZONE`` entries (IANA or ``+HH:MM``);
    ``workers``: files read in parallel (None: cores); ``window_ns``: keep only records in
    ``[start, end]`` (ns since epoch, UTC), the rest counted as ``outside_run_window``."""

    host_map: Sequence[str] = ()
    service_map: Sequence[str] = ()
    tz_offset_s: int = 0
    tz: Sequence[str] = ()
    workers: int | None = None
    window_ns: tuple[int, int] | None = None


@dataclass(frozen=True)
class StageProgress:
    """One progress event: ``stage`` (``ingest``, ``trace``, ``report``), units ``done`` of
    ``total`` (files for ingest; None when unknown) and physical ``lines`` read so far."""

    stage: str
    done: int
    total: int | None
    lines: int = 0


#: ``events`` columns the trace stage never reads (:func:`trace_step` leaves them on disk).
_NOT_TRACED = ("continuation",)

#: A progress callback; called often, must be cheap.
OnProgress = Callable[[StageProgress], None]


def ingest_step(store: RunStore, paths: Sequence[str], opts: IngestOptions | None = None,
                on_progress: OnProgress | None = None) -> IngestSection:
    """Read ``paths`` (files, folders, ``.gz``) into the ``events``, ``ingest_stats`` and
    ``quarantine`` tables of ``store`` and write the manifest's ``ingest`` section (returned).

    Raises :class:`~stacklens.errors.NoLogsFound` when no OpenStack record is found and
    :class:`~stacklens.errors.MapError` for a bad map entry."""
    opts = opts or IngestOptions()
    lines = [0]

    def on_file(done: int, total: int, n_lines: int) -> None:
        lines[0] += n_lines
        if on_progress is not None:
            on_progress(StageProgress("ingest", done, total, lines[0]))

    # streaming: events go to Parquet row groups batch by batch while the next are read
    with store.writer("events") as events:
        res = ingest(list(paths), names=NameMap(list(opts.host_map), list(opts.service_map)),
                     tz_offset_s=opts.tz_offset_s, workers=opts.workers, on_file=on_file,
                     tz=list(opts.tz), window_ns=opts.window_ns, sink=events.write)
    store.write({"ingest_stats": res.ingest_stats, "quarantine": res.quarantine})
    section = IngestSection(
        files_read=res.files_read, files_skipped=res.files_skipped, lines=res.lines,
        bytes=res.bytes, records=res.records, quarantined=res.quarantine.height,
        wall_s=round(res.wall_s, 3),
        lines_per_s=round(res.lines / res.wall_s) if res.wall_s else None,
        timezone_assumption=res.timezone_summary, tz_offset_s=opts.tz_offset_s,
        tz=list(opts.tz), window_ns=opts.window_ns, native=native_wanted(),
    )
    store.write_section("ingest", section, inputs=res.inputs)
    return section


def trace_step(store: RunStore, on_progress: OnProgress | None = None,
               after_clocks: Callable[[], None] | None = None) -> TraceSection:
    """Rebuild every request from the store's ``events``: writes ``spans``, ``flows``,
    ``traces``, ``breakdown``, ``phases``, ``clock_offsets`` and the manifest's ``trace``
    section (returned). Memory: :mod:`stacklens.trace.bounded` (``STACKLENS_TRACE_MEM_MIB``);
    ``after_clocks()`` is called once its clock offsets, its memory peak, are found
    (``iter_traces_bounded``).
    Raises :class:`~stacklens.errors.StoreError` before ingest,
    :class:`~stacklens.errors.UserError` on a bad memory setting."""
    from stacklens.trace.bounded import iter_traces_bounded

    t0 = time.perf_counter()
    events = store.parquet_path("events")  # StoreError before ingest
    # every column but the continuation text, the largest, which no trace rule reads
    cols = [c for c in TABLES["events"] if c not in _NOT_TRACED]
    n_buckets = 1

    def bucket_done(done: int, total: int) -> None:
        nonlocal n_buckets
        n_buckets = total
        if on_progress is not None:
            on_progress(StageProgress("trace", done, total))

    rows: dict[str, int] = {}
    # each part appended and dropped as soon as it is merged: one part in memory
    out: TableWriter | None = None
    try:
        for name, df in iter_traces_bounded(events, cols, on_bucket=bucket_done,
                                            after_clocks=after_clocks):
            if out is None or out.name != name:
                if out is not None:
                    out.close()
                out = store.writer(name)
            out.write(df)
            rows[name] = rows.get(name, 0) + df.height
            del df
    except BaseException:
        if out is not None:
            out.abort()
        raise
    if out is not None:
        out.close()
    section = TraceSection(traces=rows["traces"], spans=rows["spans"], flows=rows["flows"],
                           wall_s=round(time.perf_counter() - t0, 3), buckets=n_buckets)
    store.write_section("trace", section)
    return section


def mine_step(store: RunStore) -> int:
    """Mine error templates (Drain3) over the store's ERROR/CRITICAL records and failed
    traces: writes ``templates`` and ``error_templates``; returns the number of templates.
    Raises :class:`~stacklens.errors.StoreError` before trace."""
    from stacklens.analyze.mining import mine_store

    tables = mine_store(store)
    return int(tables["templates"].height)


def trace_and_mine_step(store: RunStore, on_progress: OnProgress | None = None
                        ) -> TraceSection:
    """:func:`trace_step` and :func:`mine_step`, with mining's first pass (the ERROR records'
    templates, which read only ``events``: :func:`~stacklens.analyze.mining.mine_store_errors`)
    in a thread beside the trace stage once its clock offsets are found; the tables are those
    of the two steps in turn.

    Why: Drain3 is pure Python (one core) and the trace stage keeps 2 cores ~1.6 busy, so
    mining's 2 s (10 M-line bench corpus: 60.6 k ERROR records, 35.0 k failed traces) mostly
    fits in the gap. After the clock offsets, not beside them: they are the stage's memory
    peak (the clock frame and its rules), and mining's first pass held ~440 MiB at 100 M lines
    (5 s), most of it kept until the second pass. Raises what the two steps raise (the trace
    stage's error first)."""
    from stacklens.analyze.mining import mine_store_errors, mine_store_failed

    with ThreadPoolExecutor(1, thread_name_prefix="stacklens-mine") as pool:
        errors: list[Future[Any]] = []

        def start() -> None:
            if not errors:
                errors.append(pool.submit(mine_store_errors, store))
        try:
            section = trace_step(store, on_progress, after_clocks=start)
        except BaseException:
            for f in errors:
                f.cancel()
            raise
        start()
        miner = errors[0].result()
    mine_store_failed(store, miner)
    return section


def report_step(store: RunStore, html: bool = True) -> dict[str, Any]:
    """Run the declared report sections over a traced, mined store and write ``report.json``
    (and the self-contained ``report.html``) into the run folder; returns the report dict
    (:mod:`stacklens.analyze.build`). A run folder from before template mining was its own
    step gets it here first. Raises :class:`~stacklens.errors.StoreError` before trace."""
    from stacklens.analyze.build import build_report
    from stacklens.report.html import render_html
    from stacklens.report.json_out import render_json

    if not store.has("error_templates"):
        mine_step(store)
    report = build_report(store)
    files = {"report.json": render_json(report)}
    if html:
        files["report.html"] = render_html(report)
    for name, text in files.items():
        (store.path / name).write_text(text, encoding="utf-8")
    store.write_section("report", ReportSection(
        report_format_version=report.get("format_version"),
        findings=len(report.get("findings") or []), files=sorted(files)))
    return report


def analyze_logs(store: RunStore, paths: Sequence[str], opts: IngestOptions | None = None,
                 on_progress: OnProgress | None = None, html: bool = True,
                 ) -> tuple[IngestSection, TraceSection, dict[str, Any]]:
    """:func:`ingest_step`, :func:`trace_step`, :func:`mine_step` and :func:`report_step` in
    one go; returns the two sections and the report."""
    ing = ingest_step(store, paths, opts, on_progress)
    tr = trace_and_mine_step(store, on_progress)
    return ing, tr, report_step(store, html=html)
