"""The template-mining step, run after trace and before the report: Drain3 templates
(:mod:`stacklens.analyze.templates`) over the run's ERROR/CRITICAL records, and the template of
each failed trace's first error. The report reads the tables this step writes.
"""

from __future__ import annotations

import polars as pl

from stacklens.analyze.templates import TemplateMiner, error_text, needs_traceback
from stacklens.store import RunStore
from stacklens.vocab import ERROR_LEVELS

__all__ = ["mine_error_templates", "mine_store"]


def mine_error_templates(events: pl.DataFrame, traces: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Mine Drain3 templates over ERROR/CRITICAL records (pure: no I/O).

    ``events``: :data:`stacklens.schema.EVENTS` (``level``, ``message``, ``continuation``,
    ``file``, ``line_no``); ``traces``: :data:`stacklens.schema.TRACES` (``trace_id``, ``error``,
    ``error_file``, ``error_line_no``). Returns ``templates`` (:data:`stacklens.schema.TEMPLATES`:
    template_id Int64, template String, n_events Int64) and ``error_templates`` (``trace_id``,
    ``template_id``, ``template``: the template of each failed trace's first error)."""
    miner = TemplateMiner()
    errs = events.filter(pl.col("level").is_in(ERROR_LEVELS)).select("message", "continuation")
    for m, c in errs.iter_rows():
        if m is not None:
            miner.add(error_text(m, c))
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
    write tables ``templates`` and ``error_templates``, and return them.

    Only what the mining reads is loaded, so its memory follows the errors, not the logs: the
    ERROR/CRITICAL records and the failed traces' first-error lines (level, message, file,
    line), and a record's continuation only where :func:`~stacklens.analyze.templates.
    error_text` reads it (a trivial message: :func:`~stacklens.analyze.templates.
    needs_traceback`; the 30 M-line bench corpus's error records hold 1.25 GB of tracebacks,
    of which the text reads a few). The result equals :func:`mine_error_templates` over the
    whole tables.

    Raises :class:`~stacklens.errors.StoreError` when ingest or trace has not run."""
    traces = store.read("traces", columns=["trace_id", "error", "error_file", "error_line_no"])
    failed = traces.filter(pl.col("error").is_not_null())
    where = failed.select(
        pl.col("error_file").alias("file"), pl.col("error_line_no").alias("line_no")
    ).unique()
    path = store.parquet_path("events")

    def ev() -> pl.LazyFrame:
        # a scan per branch: Polars caches a subplan two branches share, which held every
        # record's columns before either filtered
        return pl.scan_parquet(path, row_index_name="_row").select(
            "_row", "level", "message", "file", "line_no")

    events = pl.concat([
        ev().filter(pl.col("level").is_in(ERROR_LEVELS)),
        ev().filter(~pl.col("level").is_in(ERROR_LEVELS) | pl.col("level").is_null())
        .join(where.lazy(), on=["file", "line_no"], how="semi"),
    ]).collect(engine="streaming")
    # the continuations error_text reads: records of a trivial message, and the first-error
    # lines of failed traces whose error is trivial (their continuation joins by file, line)
    trivial_at = failed.filter(pl.col("error").map_elements(
        needs_traceback, return_dtype=pl.Boolean)).select(
        pl.col("error_file").alias("file"), pl.col("error_line_no").alias("line_no"))
    want = pl.Series([needs_traceback(m) for m in events.get_column("message")],
                     dtype=pl.Boolean)
    at = events.join(trivial_at.unique(), on=["file", "line_no"], how="semi").get_column("_row")
    rows = events.filter(want).get_column("_row").append(at).unique()
    tb = (
        pl.scan_parquet(path, row_index_name="_row")
        .filter(pl.col("_row").is_in(rows.implode()))
        .select("_row", "continuation")
        .collect(engine="streaming")
    )
    # rebuilt from Python strings: the read's strings share whole row groups' buffers
    tb = tb.with_columns(continuation=pl.Series(tb.get_column("continuation").to_list(),
                                                dtype=pl.String))
    events = events.join(tb, on="_row", how="left", maintain_order="left").drop("_row")
    mined = mine_error_templates(events, traces)
    store.write(mined)
    return mined
