"""The template-mining step, run after trace and before the report: Drain3 templates
(:mod:`stacklens.analyze.templates`) over the run's ERROR/CRITICAL records, and the template of
each failed trace's first error. The report reads the tables this step writes.
"""

from __future__ import annotations

import polars as pl

from stacklens.analyze.templates import TemplateMiner, error_text
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

    Only the records the mining reads are loaded (the ERROR/CRITICAL records and the failed
    traces' first-error lines, five columns), so its memory follows the errors, not the logs:
    the result equals :func:`mine_error_templates` over the whole tables.

    Raises :class:`~stacklens.errors.StoreError` when ingest or trace has not run."""
    traces = store.read("traces", columns=["trace_id", "error", "error_file", "error_line_no"])
    where = traces.filter(pl.col("error").is_not_null()).select(
        pl.col("error_file").alias("file"), pl.col("error_line_no").alias("line_no")
    ).unique()
    cols = ["level", "message", "continuation", "file", "line_no"]
    ev = store.scan("events").select(cols)
    events = pl.concat([
        ev.filter(pl.col("level").is_in(ERROR_LEVELS)),
        ev.filter(~pl.col("level").is_in(ERROR_LEVELS) | pl.col("level").is_null())
        .join(where.lazy(), on=["file", "line_no"], how="semi"),
    ]).collect()
    mined = mine_error_templates(events, traces)
    store.write(mined)
    return mined
