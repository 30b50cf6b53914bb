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

__all__ = ["build_traces"]


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
    simply form no trace).
    """
    events, offsets = correct_clocks(events)
    linked = adopt_orphan_markers(link_events(events))
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
        "clock_offsets": conform(offsets, "clock_offsets"),
    }
