"""The template-mining step, run after trace and before the report: Drain3 templates
(:mod:`stacklens.analyze.templates`) over the run's ERROR/CRITICAL records, and the template of
each failed trace's first error. The report reads the tables this step writes.

Two passes, in this order (Drain's clusters depend on the order of the messages): every
ERROR/CRITICAL record in row order (:func:`mine_errors`; it reads only ``events``, so the
pipeline runs it while the trace stage runs), then each failed trace's first error.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from stacklens.analyze.templates import TemplateMiner, error_text, needs_traceback
from stacklens.store import RunStore
from stacklens.vocab import ERROR_LEVELS

__all__ = ["mine_error_templates", "mine_errors", "mine_store", "mine_store_errors",
           "mine_store_failed"]


def mine_error_templates(events: pl.DataFrame, traces: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Mine Drain3 templates over ERROR/CRITICAL records (pure: no I/O).

    ``events``: :data:`stacklens.schema.EVENTS` (``level``, ``message``, ``continuation``,
    ``file``, ``line_no``); ``traces``: :data:`stacklens.schema.TRACES` (``trace_id``, ``error``,
    ``error_file``, ``error_line_no``). Returns ``templates`` (:data:`stacklens.schema.TEMPLATES`:
    template_id Int64, template String, n_events Int64) and ``error_templates`` (``trace_id``,
    ``template_id``, ``template``: the template of each failed trace's first error)."""
    miner = mine_errors(events)
    return _failed_templates(miner, events, traces)


def mine_errors(events: pl.DataFrame) -> TemplateMiner:
    """The miner after every ERROR/CRITICAL record of ``events`` (``level``, ``message``,
    ``continuation``), in row order: the first of the two passes of
    :func:`mine_error_templates`, which reads no trace table."""
    miner = TemplateMiner()
    errs = events.filter(pl.col("level").is_in(ERROR_LEVELS)).select("message", "continuation")
    for m, c in errs.iter_rows():
        if m is not None:
            miner.add(error_text(m, c))
    return miner


def _failed_templates(miner: TemplateMiner, events: pl.DataFrame, traces: pl.DataFrame
                      ) -> dict[str, pl.DataFrame]:
    """The second pass: ``templates`` as mined so far, then each failed trace's first error
    (its continuation from ``events``' ``file``, ``line_no``, ``continuation``) added in turn."""
    tpl = pl.DataFrame(
        miner.templates(), schema=["template_id", "template", "n_events"], orient="row"
    )
    failed = traces.filter(pl.col("error").is_not_null()).select(
        "trace_id", "error", "error_file", "error_line_no"
    ).join(  # the first error's traceback, for messages that are only on the following lines
        events.select(pl.col("file").alias("error_file"), pl.col("line_no").alias("error_line_no"),
                      "continuation"),
        on=["error_file", "error_line_no"], how="left", maintain_order="left",
    )
    ids = [miner.add(error_text(e, c))
           for e, c in failed.select("error", "continuation").iter_rows()]
    et = failed.with_columns(template_id=pl.Series(ids, dtype=pl.Int64)).with_columns(
        template=pl.Series([miner.template_of(i) for i in ids], dtype=pl.String)
    )
    return {"templates": tpl, "error_templates": et.select("trace_id", "template_id", "template")}


def mine_store(store: RunStore) -> dict[str, pl.DataFrame]:
    """Read ``events`` and ``traces`` from ``store``, mine them (:func:`mine_error_templates`),
    write tables ``templates`` and ``error_templates``, and return them: :func:`mine_store_errors`
    then :func:`mine_store_failed`.

    Only what the mining reads is loaded, so its memory follows the errors, not the logs: the
    ERROR/CRITICAL records and the failed traces' first-error lines (level, message, file,
    line), and a record's continuation only where :func:`~stacklens.analyze.templates.
    error_text` reads it (a trivial message: :func:`~stacklens.analyze.templates.
    needs_traceback`; the 30 M-line bench corpus's error records hold 1.25 GB of tracebacks,
    of which the text reads a few). The result equals :func:`mine_error_templates` over the
    whole tables.

    Raises :class:`~stacklens.errors.StoreError` when ingest or trace has not run."""
    return mine_store_failed(store, mine_store_errors(store))


def mine_store_errors(store: RunStore) -> TemplateMiner:
    """The first pass of :func:`mine_store` (:func:`mine_errors`): it reads ``events`` only,
    so it can run while the trace stage runs. Raises :class:`~stacklens.errors.StoreError`
    before ingest."""
    path = store.parquet_path("events")
    events = (
        pl.scan_parquet(path, row_index_name="_row")
        .select("_row", "level", "message")
        .filter(pl.col("level").is_in(ERROR_LEVELS))
        .collect(engine="streaming")
    )
    want = pl.Series([needs_traceback(m) for m in events.get_column("message")],
                     dtype=pl.Boolean)
    return mine_errors(_with_continuations(store, events, events.filter(want)))


def mine_store_failed(store: RunStore, miner: TemplateMiner) -> dict[str, pl.DataFrame]:
    """The second pass of :func:`mine_store` on ``miner`` (:func:`mine_store_errors`'): the
    failed traces' first errors; writes ``templates`` and ``error_templates`` and returns them.
    Raises :class:`~stacklens.errors.StoreError` before trace."""
    traces = store.read("traces", columns=["trace_id", "error", "error_file", "error_line_no"])
    # the continuations error_text reads here: the first-error lines of failed traces whose
    # error is trivial (joined by file, line); the others' are never read
    trivial_at = traces.filter(pl.col("error").is_not_null() & pl.col("error").map_elements(
        needs_traceback, return_dtype=pl.Boolean)).select(
        pl.col("error_file").alias("file"), pl.col("error_line_no").alias("line_no")).unique()
    lines = (
        pl.scan_parquet(store.parquet_path("events"), row_index_name="_row")
        .select("_row", "file", "line_no")
        .join(trivial_at.lazy(), on=["file", "line_no"], how="semi")
        .collect(engine="streaming")
    )
    mined = _failed_templates(miner, _with_continuations(store, lines, lines), traces)
    store.write(mined)
    return mined


def _with_continuations(store: RunStore, events: pl.DataFrame, at: pl.DataFrame
                        ) -> pl.DataFrame:
    """``events`` (with the ``_row`` of their record in ``events.parquet``) and a
    ``continuation`` column read for the rows of ``at`` (null elsewhere); ``_row`` dropped.
    No row of ``at`` (no trivial message, the usual case): no read."""
    if not at.height:
        return events.drop("_row").with_columns(continuation=pl.lit(None, pl.String))
    rows = at.get_column("_row").unique().sort().to_list()
    tb = pl.DataFrame({"_row": rows, "continuation": _continuations(
        store.parquet_path("events"), rows)}, schema={"_row": pl.UInt32, "continuation": pl.String})
    return events.join(tb, on="_row", how="left", maintain_order="left").drop("_row")


def _continuations(path: Path, rows: list[int]) -> list[str | None]:
    """``continuation`` of the ``rows`` (ascending file rows) of the events Parquet file
    ``path``, read one row group at a time and only from the row groups that hold one: a
    streaming scan filtered on the row number decoded the whole column (30 M-line bench corpus:
    1,386 rows wanted; mining's first pass peaked at 847 MiB, now at 323 MiB with one row
    group's column at a time). Python strings: the values do not keep a row group's buffers
    alive."""
    import pyarrow.parquet as papq

    pf = papq.ParquetFile(path)
    out: list[str | None] = []
    start, j = 0, 0
    for g in range(pf.metadata.num_row_groups):
        end = start + pf.metadata.row_group(g).num_rows
        take = []
        while j < len(rows) and rows[j] < end:
            take.append(rows[j] - start)
            j += 1
        if take:
            col = pf.read_row_group(g, columns=["continuation"]).column(0)
            out.extend(col[i].as_py() for i in take)  # a string_view column: no take kernel
        start = end
    return out
