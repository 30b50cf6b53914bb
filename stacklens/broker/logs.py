"""The log side of the broker cross-check: RPC sends as oslo.messaging's DEBUG lines tell them.

``amqpdriver.AMQPDriverBase._send`` logs, in the sending thread, ``Calling RPC method <m> on
target <topic>`` and then ``CALL msg_id: <id> exchange '<x>' topic '<t>'`` (calls) or ``CAST
unique_id: <id> ...`` (casts, fanouts: ``FANOUT topic '<t>'``). Ingest already extracts the
second line (``events.rpc_kind`` ``call``/``cast``, ``rpc_id``, ``rpc_topic``); the method comes
from the first, paired within one file, pid and request id (the nearest preceding line).
"""

from __future__ import annotations

import polars as pl

from stacklens.vocab import RPC_SENDS

__all__ = ["CALLING", "crosscheck", "log_rpc_sends"]

#: The amqpdriver line that names the method (oslo.messaging 5.x to 18.x).
CALLING = r"^Calling RPC method (\S+) on target (\S+)"


def log_rpc_sends(events: pl.DataFrame) -> pl.DataFrame:
    """RPC sends logged in ``events`` (schema :data:`stacklens.schema.EVENTS`): one row per
    ``CALL``/``CAST`` line with columns ``ts_ns``, ``host``, ``service``, ``pid``, ``kind``
    (call, cast), ``rpc_id`` (msg_id or unique_id), ``topic``, ``method`` (null when no
    ``Calling RPC method`` line precedes it), ``request_id``."""
    cols = ["ts_ns", "host", "service", "pid", "file", "line_no", "request_id", "message",
            "rpc_kind", "rpc_id", "rpc_topic"]
    ev = events.select(cols).filter(
        pl.col("rpc_kind").is_in(list(RPC_SENDS))
        | pl.col("message").str.starts_with("Calling RPC method "))
    ev = ev.with_columns(pl.col("message").str.extract(CALLING, 1).alias("method"),
                         pl.col("request_id").fill_null(""))
    ev = ev.sort("file", "pid", "request_id", "line_no").with_columns(
        pl.col("method").forward_fill().over("file", "pid", "request_id").alias("m_ff"),
        pl.col("method").is_not_null().cum_sum().over("file", "pid", "request_id").alias("n"),
    )
    sends = ev.filter(pl.col("rpc_kind").is_in(list(RPC_SENDS)))
    # a Calling line is used once: a send after two sends without one gets none
    sends = sends.with_columns(
        (pl.col("n") != pl.col("n").shift(1).over("file", "pid", "request_id")
         .fill_null(-1)).alias("fresh"))
    return sends.select(
        "ts_ns", "host", "service", "pid", pl.col("rpc_kind").alias("kind"), "rpc_id",
        pl.col("rpc_topic").alias("topic"),
        pl.when(pl.col("fresh")).then(pl.col("m_ff")).alias("method"),
        pl.when(pl.col("request_id") != "").then(pl.col("request_id")).alias("request_id"),
    ).sort("ts_ns")


def crosscheck(messages: pl.DataFrame, sends: pl.DataFrame,
               window_ns: tuple[int, int] | None = None) -> pl.DataFrame:
    """Per RPC method: publishes the broker saw (calls, casts, fanouts of ``messages``) beside
    sends the logs tell (:func:`log_rpc_sends`), matched by id (a call's msg_id, a cast's
    unique_id). ``window_ns``: the capture's [start, end) in ns: log sends outside it that the
    broker did not see are left out (they were sent before or after the capture). Columns:
    ``method``, ``broker`` (count), ``logs`` (count), ``matched`` (count of ids in both),
    ``broker_only``, ``logs_only`` (counts); sorted by method."""
    pub = messages.filter((pl.col("direction") == "publish")
                          & pl.col("kind").is_in(["call", "cast", "fanout"]))
    pub = pub.select("ts_ns", "method", pl.when(pl.col("kind") == "call")
                     .then(pl.col("msg_id")).otherwise(pl.col("unique_id")).alias("rpc_id"))
    logs = sends.select("ts_ns", "method", "rpc_id")
    both = pub.join(logs, on="rpc_id", how="full", coalesce=True, suffix="_log")
    if window_ns is not None:  # the broker saw all within the capture; logs run longer
        lo, hi = window_ns
        both = both.filter(pl.col("ts_ns").is_not_null()
                           | pl.col("ts_ns_log").is_between(lo, hi, closed="left"))
    both = both.with_columns(pl.coalesce("method", "method_log").alias("m"))
    return both.group_by(pl.col("m").fill_null("(none)").alias("method")).agg(
        pl.col("ts_ns").is_not_null().sum().alias("broker"),
        pl.col("ts_ns_log").is_not_null().sum().alias("logs"),
        (pl.col("ts_ns").is_not_null() & pl.col("ts_ns_log").is_not_null()).sum().alias(
            "matched"),
        (pl.col("ts_ns").is_not_null() & pl.col("ts_ns_log").is_null()).sum().alias(
            "broker_only"),
        (pl.col("ts_ns").is_null() & pl.col("ts_ns_log").is_not_null()).sum().alias(
            "logs_only"),
    ).sort("method")
