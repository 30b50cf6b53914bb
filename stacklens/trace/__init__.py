"""Trace: canonical ``events`` -> ``spans``, ``flows``, ``traces``, ``breakdown``, ``phases``.

See :mod:`stacklens.trace.link` for how records are tied to requests,
:mod:`stacklens.trace.spans` for spans and flows, :mod:`stacklens.trace.classify` for
operations, outcomes and the latency breakdown.
"""

from __future__ import annotations

import polars as pl

from stacklens.schema import conform
from stacklens.trace.classify import adopt_orphan_markers, breakdown, classify_traces, phases
from stacklens.trace.clocks import correct_clocks
from stacklens.trace.link import link_events
from stacklens.trace.spans import build_flows, build_spans, timed_events
from stacklens.vocab import RPC_SENDS

__all__ = ["LINK_COLUMNS", "build_traces", "link_all", "trace_tables"]

#: ``events`` columns :func:`link_all` reads.
LINK_COLUMNS = (
    "ts_ns", "host", "service", "pid", "logger", "message", "request_id", "global_request_id",
    "instance_uuid", "http_method", "http_path", "http_status", "http_dur_s", "rpc_kind", "rpc_id",
)


def _span_operation() -> pl.Expr:
    api = pl.col("http_status").is_not_null()
    access = pl.concat_str([pl.col("http_method"), pl.lit(" "), pl.col("http_path")])
    return pl.coalesce(
        access.filter(api).first(),
        pl.concat_str([pl.lit("rpc "), pl.col("rpc_topic")]).filter(
            pl.col("rpc_kind").is_in(RPC_SENDS)
        ).first(),
        pl.col("logger").first(),
    )


def build_traces(events: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Build the trace-stage tables from a canonical ``events`` frame.

    Host clocks are first corrected per day from causal pairs (:mod:`stacklens.trace.clocks`).
    Returns ``{"spans", "flows", "traces", "breakdown", "phases", "clock_offsets"}`` frames
    conformed to
    :mod:`stacklens.schema`. Pure; raises nothing on odd data (events without any request id
    simply form no trace). :mod:`stacklens.trace.bounded` computes the same tables from a
    run folder in bounded memory.
    """
    linked, offsets = link_all(events)
    return {**trace_tables(linked), "clock_offsets": conform(offsets, "clock_offsets")}


def link_all(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The global steps of :func:`build_traces`: clock correction, linking, orphan adoption.

    Returns ``(linked, clock_offsets)``: ``linked`` is ``events`` on corrected time with
    ``eid`` (UInt32, the row number after clock correction, which groups
    the rows of several hosts by UTC day) first and ``req_local``, ``trace_id``
    (String) last, sorted by ``ts_ns``, ``eid``
    (:func:`~stacklens.trace.link.link_events`); ``clock_offsets`` is not yet conformed.
    Reads only ``ts_ns``, ``host``, ``service``, ``pid``, ``logger``, ``message``,
    ``request_id``, ``global_request_id``, ``instance_uuid``, ``rpc_kind``, ``rpc_id``,
    ``http_*`` (:data:`LINK_COLUMNS`); other columns are carried along."""
    events, offsets = correct_clocks(events)
    return adopt_orphan_markers(link_events(events)), offsets


def trace_tables(linked: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """``spans``, ``flows``, ``traces``, ``breakdown``, ``phases`` (conformed) from
    :func:`link_all`'s ``linked`` frame (records without a ``trace_id`` are ignored). Every
    step works within a trace, except flows, which pair RPC senders and receivers by
    ``rpc_id`` across traces: a subset of ``linked`` gives the same rows for its traces when
    it holds every trace that shares an ``rpc_id`` with one of them."""
    tev = timed_events(linked)
    spans = build_spans(tev, _span_operation())
    flows, spans = build_flows(tev, spans)
    traces = classify_traces(tev, spans)
    return {
        "spans": conform(spans, "spans"),
        "flows": conform(flows, "flows"),
        "traces": conform(traces, "traces"),
        "breakdown": conform(breakdown(tev, traces), "breakdown"),
        "phases": conform(phases(tev), "phases"),
    }
