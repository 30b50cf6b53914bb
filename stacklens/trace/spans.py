"""Spans (one service's part of one trace) and flows (causal edges between spans).

A span groups the linked events of one trace in one process (service, host, pid), cut at each
RPC message the process receives (so a conductor answering ten calls of one build shows ten
spans, as OSProfiler would draw them). Its start is the earliest
of: its first record, the receipt of the first RPC message it handled, and for a wsgi access
line or a client (tempest ``rest_client``) line, the line's time minus its logged duration. Its
end is its last record; ``end_exact`` says whether that record marks a completion (an access
line, a client line, an RPC reply sent, a ``Took N seconds to build instance``) rather than
merely the last thing logged.

Flows: one per RPC message id whose sender and receiver spans are both known (``rpc_call``,
``rpc_cast``), and one from a client span to the API span of the same request (``http``).
A span's parent is the sender of its earliest incoming flow, else the trace's root span.
"""

from __future__ import annotations

import polars as pl

__all__ = ["build_flows", "build_spans", "timed_events"]

_COMPLETION = (
    pl.col("http_status").is_not_null()
    | (pl.col("rpc_kind") == "reply_send")
    | pl.col("took_what").str.starts_with("build instance")
)


def _span_id() -> pl.Expr:
    """``<trace>:<service>@<host>/<pid>.<episode>``: an episode starts at each RPC receipt."""
    return pl.concat_str(
        [
            pl.col("trace_id"), pl.lit(":"), pl.col("service"), pl.lit("@"), pl.col("host"),
            pl.lit("/"), pl.col("pid").cast(pl.String).fill_null("-"), pl.lit("."),
            pl.col("_episode").cast(pl.String),
        ]
    )


def timed_events(linked: pl.DataFrame) -> pl.DataFrame:
    """Linked events of traces plus one synthetic start event per access/client line (at
    ``ts_ns - http_dur_s``), with ``span_id``. Columns: those of ``linked`` plus ``span_id``,
    ``synthetic`` (Boolean)."""
    ev = linked.filter(pl.col("trace_id").is_not_null()).with_columns(synthetic=pl.lit(False))
    starts = ev.filter(pl.col("http_dur_s").is_not_null()).with_columns(
        ts_ns=pl.col("ts_ns") - (pl.col("http_dur_s") * 1e9).cast(pl.Int64),
        synthetic=pl.lit(True),
        level=pl.lit("START"),
        http_status=pl.lit(None, dtype=pl.Int32),
        http_dur_s=pl.lit(None, dtype=pl.Float64),
        message=pl.lit("(request start = logged time - logged duration)"),
    )
    tev = pl.concat([ev, starts]).sort("trace_id", "ts_ns", "eid")
    # each RPC message received starts a new span of the receiving process (OSProfiler draws
    # one span per RPC handled); records before the first receipt form episode 0
    receipt = pl.col("rpc_kind").is_in(["recv_call", "recv_cast"]).fill_null(False)
    tev = tev.with_columns(
        _episode=receipt.cast(pl.Int32).cum_sum().over("trace_id", "service", "host", "pid")
    )
    return tev.with_columns(span_id=_span_id()).drop("_episode")


def build_spans(tev: pl.DataFrame, operation_of_span: pl.Expr) -> pl.DataFrame:
    """Spans from :func:`timed_events` output. ``operation_of_span`` is an aggregation
    expression naming each span's operation. Columns as :data:`stacklens.schema.SPANS` (parent
    filled by :func:`build_flows`)."""
    is_err = pl.col("level").is_in(["ERROR", "CRITICAL"])
    return (
        tev.group_by("span_id", maintain_order=True)
        .agg(
            pl.col("trace_id").first(),
            pl.col("request_id").drop_nulls().first(),
            pl.col("host").first(),
            pl.col("service").first(),
            pl.col("pid").drop_nulls().first(),
            operation_of_span.alias("operation"),
            pl.col("ts_ns").min().alias("start_ns"),
            pl.col("ts_ns").max().alias("end_ns"),
            _COMPLETION.sort_by("ts_ns").last().alias("end_exact"),
            is_err.any().alias("_err"),
            pl.col("message").filter(is_err).first().alias("error"),
            (~pl.col("synthetic")).sum().cast(pl.Int64).alias("n_events"),
        )
        .with_columns(
            status=pl.when(pl.col("_err")).then(pl.lit("error")).otherwise(pl.lit("ok")),
            end_exact=pl.col("end_exact").fill_null(False),
        )
        .drop("_err")
    )


def build_flows(tev: pl.DataFrame, spans: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Flows between spans and the spans with ``parent_span_id`` set.

    Returns ``(flows, spans)``; flows have :data:`stacklens.schema.FLOWS` columns."""
    send = tev.filter(pl.col("rpc_kind").is_in(["call", "cast"])).select(
        "trace_id",
        "rpc_id",
        pl.col("span_id").alias("src_span_id"),
        pl.col("ts_ns").alias("send_ns"),
        pl.concat_str([pl.lit("rpc_"), pl.col("rpc_kind")]).alias("kind"),
        pl.col("rpc_topic").alias("_topic"),
    )
    # the receiving span: a logged receipt, else the span that sent the reply
    recv = (
        tev.filter(pl.col("rpc_kind").is_in(["recv_call", "recv_cast", "reply_send"]))
        .sort(pl.col("rpc_kind") == "reply_send", "ts_ns")
        .group_by("rpc_id", maintain_order=True)
        .agg(
            pl.col("span_id").first().alias("dst_span_id"),
            pl.col("ts_ns").filter(pl.col("rpc_kind") != "reply_send").first().alias("recv_ns"),
        )
    )
    rpc = send.join(recv, on="rpc_id", how="inner").filter(
        pl.col("src_span_id") != pl.col("dst_span_id")
    )
    client = tev.filter(pl.col("logger").str.ends_with("rest_client") & pl.col("synthetic"))
    api = tev.filter(~pl.col("logger").str.ends_with("rest_client") & pl.col("synthetic"))
    http = client.select(
        "trace_id", pl.col("span_id").alias("src_span_id"), pl.col("ts_ns").alias("send_ns")
    ).join(
        api.select(
            "trace_id", pl.col("span_id").alias("dst_span_id"), pl.col("ts_ns").alias("recv_ns")
        ),
        on="trace_id",
    ).with_columns(kind=pl.lit("http"), rpc_id=pl.lit(None, dtype=pl.String))
    flows = pl.concat([rpc, http], how="diagonal_relaxed").unique(
        ["src_span_id", "dst_span_id", "rpc_id"], keep="first", maintain_order=True
    )
    first_in = (
        flows.sort("send_ns")
        .group_by("dst_span_id", maintain_order=True)
        .agg(
            pl.col("src_span_id").first().alias("parent_span_id"),
            # a span that handles an RPC message is named after it: "call conductor"
            pl.concat_str([pl.col("kind").str.replace("rpc_", ""), pl.lit(" "), pl.col("_topic")])
            .first()
            .alias("_handled"),
        )
        .rename({"dst_span_id": "span_id"})
    )
    root = (
        spans.sort("start_ns")
        .group_by("trace_id", maintain_order=True)
        .agg(pl.col("span_id").first().alias("_root"))
    )
    spans = (
        spans.join(first_in, on="span_id", how="left")
        .join(root, on="trace_id", how="left")
        .with_columns(
            parent_span_id=pl.when(pl.col("span_id") == pl.col("_root"))
            .then(None)
            .otherwise(pl.coalesce("parent_span_id", "_root")),
            operation=pl.when(pl.col("_handled").is_not_null() & (pl.col("operation") != "http"))
            .then(pl.col("_handled"))
            .otherwise(pl.col("operation")),
        )
        .drop("_root", "_handled")
    )
    # a receipt can precede the span's first record: start the span there
    recv_start = (
        flows.filter(pl.col("recv_ns").is_not_null())
        .group_by("dst_span_id")
        .agg(pl.col("recv_ns").min().alias("_r"))
        .rename({"dst_span_id": "span_id"})
    )
    spans = (
        spans.join(recv_start, on="span_id", how="left")
        .with_columns(start_ns=pl.min_horizontal("start_ns", "_r"))
        .drop("_r")
    )
    return flows, spans
