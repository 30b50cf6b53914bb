"""Linking events into traces: which user action does each log record belong to?

Keys, in order (field-notes section 3):

1. ``request_id``: a service's request context. In nova, the RPC context carries it, so
   conductor, scheduler and compute log the API's id; tempest logs it as the response's
   ``x-compute-request-id``.
2. ``global_request_id`` (Pike on): the caller's id beside the callee's own; a request with a
   global id joins the global id's trace.
3. RPC ids: oslo.messaging logs the receipt of a call/cast (``received message msg_id: X``)
   and of a reply without any context; the sender's ``CALL msg_id: X`` / ``CAST unique_id: X``
   line names the request, so receipts join the sender's trace, and so does the reply sent
   for that message id (``sending reply msg_id: X``), even when logged under another context.
4. ``instance_uuid``: records tagged ``[instance: X]`` but without a request id (lifecycle
   events, periodic tasks) join the trace that touched the instance and whose window encloses
   the record.

The trace id is the root request id (the id the client saw), so traces are stable across runs.
"""

from __future__ import annotations

import polars as pl

from stacklens.vocab import RPC_SENDS

__all__ = ["global_ids", "id_lookup", "link_events"]

_RECEIPTS = ("recv_call", "recv_cast", "reply_recv")


def link_events(events: pl.DataFrame, *, sort: bool = True) -> pl.DataFrame:
    """Return ``events`` (canonical columns) plus ``eid`` (row number, UInt32; an ``eid``
    column of ``events`` is kept instead: any key in the order of its rows), ``trace_id``
    (String; null for records that belong to no request) and ``req_local`` (String: the
    record's own ``request_id``, for an RPC receipt without one the sender's; the request a
    process was serving, used to cut spans), sorted by ``ts_ns``, ``eid`` (``sort=False``: in
    ``events``' order, ``eid`` ascending; the sort copies every column)."""
    ev = events if "eid" in events.columns else events.with_row_index("eid")
    # 3. receipts inherit the sender's request id
    senders = (
        ev.filter(pl.col("rpc_kind").is_in(RPC_SENDS) & pl.col("request_id").is_not_null())
        .group_by("rpc_id")
        .agg(pl.col("request_id").first().alias("_sender_req"))
    )
    # a reply is sent for the call it answers, whatever context the thread had left over
    # (oslo.messaging logs ``sending reply`` with a stale thread-local context in old releases)
    # (the id maps are applied as a new column, not joined: a join copies every column)
    ev = ev.with_columns(_sender_req=id_lookup("rpc_id", senders, "_sender_req")).with_columns(
        _req=pl.when(pl.col("request_id").is_null() & pl.col("rpc_kind").is_in(_RECEIPTS))
        .then(pl.col("_sender_req"))
        .when((pl.col("rpc_kind") == "reply_send") & pl.col("_sender_req").is_not_null())
        .then(pl.col("_sender_req"))
        .otherwise(pl.col("request_id"))
    )
    # 2. global request ids
    glob = global_ids(ev).rename({"request_id": "_req", "global_request_id": "_glob"})
    ev = ev.with_columns(_glob=id_lookup("_req", glob, "_glob"))
    ev = ev.with_columns(trace_id=pl.coalesce("_glob", "_req"))
    # 4. instance-tagged records without a request: the enclosing trace of that instance
    windows = (
        ev.filter(pl.col("trace_id").is_not_null() & pl.col("instance_uuid").is_not_null())
        .group_by("trace_id", "instance_uuid")
        .agg(pl.col("ts_ns").min().alias("_t0"), pl.col("ts_ns").max().alias("_t1"))
        .sort("_t0")
    )
    orphans = ev.filter(pl.col("trace_id").is_null() & pl.col("instance_uuid").is_not_null())
    if orphans.height and windows.height:
        hit = (
            orphans.select("eid", "instance_uuid", "ts_ns")
            .sort("ts_ns")
            .join_asof(
                windows.rename({"trace_id": "_t"}),
                left_on="ts_ns",
                right_on="_t0",
                by="instance_uuid",
                strategy="backward",
                check_sortedness=False,
            )
            .filter(pl.col("ts_ns") <= pl.col("_t1"))
            .select("eid", "_t")
        )
        ev = ev.with_columns(trace_id=pl.coalesce("trace_id", id_lookup("eid", hit, "_t")))
    ev = ev.rename({"_req": "req_local"}).drop("_sender_req", "_glob")
    return ev.sort("ts_ns", "eid") if sort else ev


def global_ids(events: pl.DataFrame) -> pl.DataFrame:
    """Link rule 2's map: per ``request_id`` of the records of ``events`` that carry both ids,
    the first ``global_request_id`` in row order (columns ``request_id``,
    ``global_request_id``). A request with a global id joins the global id's trace."""
    return (
        events.filter(pl.col("global_request_id").is_not_null() & pl.col("request_id").is_not_null())
        .group_by("request_id")
        .agg(pl.col("global_request_id").first())
    )


def id_lookup(key: str, table: pl.DataFrame, value: str) -> pl.Expr:
    """``table[value]`` where ``table[key]`` equals column ``key`` (unique keys; null where
    none matches or ``key`` is null), as a left join gives, without copying the other
    columns."""
    table = table.filter(pl.col(key).is_not_null())  # replace_strict would match a null key
    return pl.col(key).replace_strict(table.get_column(key), table.get_column(value),
                                      default=None, return_dtype=table.schema[value])
