"""Records that linking reads through their request id alone, kept out of the bounded trace
stage's global pass as per-request-id aggregates (issue 12).

A record with a ``request_id`` and no ``global_request_id``, ``instance_uuid``, ``rpc_kind``,
``rpc_id`` or ``http_status`` (:data:`REQ_ONLY`; 5.65 M of the 6.60 M keyed records of the
30 M-line bench corpus) is read by the global pass's steps only through its request id:

- :func:`~stacklens.trace.link.link_events` gives it ``req_local = request_id`` and ``trace_id
  = coalesce(global id of its request id, request_id)``, the global id taken from records
  that carry one (never such a record); no other record's link depends on it (RPC senders,
  global ids and instance windows are read from records with an RPC kind, a global id or an
  instance);
- :func:`~stacklens.trace.classify.adopt_orphan_markers` reads it only through its trace's
  earliest corrected time (a trace's first API line and first instance come from other
  records);
- bucket packing counts it in its trace's component (a component is a set of traces joined
  by ``rpc_id``, which it has none of).

So the global pass links the other records and holds, for these, one row per request id:
:func:`req_only_ids`. The split gives each such record its keys from that row
(:func:`req_only_keys`), batch by batch, from a map by request id (:class:`ReqOnlyMap`).
``eid``, the records' order on equal time, is an order key (:func:`order_key`) that every
record gets the same way, in or out of the pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import cast

import polars as pl

from stacklens.trace.clocks import _DAY_NS
from stacklens.trace.link import id_lookup

__all__ = ["READS", "REQ_ONLY", "ReqOnlyMap", "day_ranks", "order_key", "req_only_ids",
           "req_only_keys", "shifted"]

#: The records linking reads through their request id alone (module docstring); it reads
#: the columns of :data:`READS` but ``host`` and ``ts_ns``.
REQ_ONLY = (pl.col("request_id").is_not_null() & pl.col("global_request_id").is_null()
            & pl.col("instance_uuid").is_null() & pl.col("rpc_kind").is_null()
            & pl.col("rpc_id").is_null() & pl.col("http_status").is_null())
#: What :func:`req_only_keys` reads of the events besides ``_row``.
READS = ("host", "ts_ns", "request_id", "global_request_id", "instance_uuid", "rpc_kind",
         "rpc_id", "http_status")


def shifted(lf: pl.LazyFrame, offsets: pl.DataFrame) -> pl.LazyFrame:
    """``lf`` (``host``, ``ts_ns``) with ``ts_ns`` corrected by the applied ``clock_offsets``
    per (host, UTC day of the uncorrected time), as :func:`~stacklens.trace.skew.
    apply_offsets` does, and ``_day`` (Int64, that day: ``ts_ns // 86,400 s`` before the
    shift; null without a time). A join of the few (host, day) shifts, which streams."""
    lf = lf.with_columns(_day=pl.col("ts_ns") // _DAY_NS)
    if not offsets.height:
        return lf
    shift = offsets.filter(pl.col("applied")).select(
        "host",
        _day=pl.col("day").str.to_date().cast(pl.Int64),
        _shift=(pl.col("offset_s") * 1e9).round().cast(pl.Int64),
    )
    return (lf.join(shift.lazy(), on=["host", "_day"], how="left", maintain_order="left")
            .with_columns(ts_ns=pl.col("ts_ns") + pl.col("_shift").fill_null(0))
            .drop("_shift"))


def day_ranks(path: Path, offsets: pl.DataFrame) -> pl.DataFrame | None:
    """The order of the UTC days in :func:`~stacklens.trace.clocks.correct_clocks`' row order,
    which groups the records by UTC day (of the uncorrected time), days in order of their first
    record in the events file ``path``: ``_day`` (Int64; null for the records without a time,
    a day of its own) -> ``_rank`` (UInt64, from 0). None when there are no offsets: the
    records then stay in file order."""
    if not offsets.height:
        return None
    first = (pl.scan_parquet(path, row_index_name="_row")
             .select("_row", _day=pl.col("ts_ns") // _DAY_NS)
             .group_by("_day").agg(pl.col("_row").min())
             .collect(engine="streaming"))
    return first.sort("_row").select("_day", _rank=pl.int_range(pl.len(), dtype=pl.UInt64))


def order_key(days: pl.DataFrame | None) -> pl.Expr:
    """``eid`` (UInt64) of a record from its ``_row`` (the row in the events file) and ``_day``
    (:func:`shifted`): its place in ``correct_clocks``' row order, ``rank of its day * 2**32 +
    _row`` (rows fit 32 bits: Polars' row index is UInt32), so that records compare alike
    whichever subset of them is numbered. ``days``: :func:`day_ranks`."""
    row = pl.col("_row").cast(pl.UInt64)
    if days is None:
        return row.alias("eid")
    # a null day is a key of its own (replace_strict maps null as a value)
    rank = pl.col("_day").replace_strict(days.get_column("_day"), days.get_column("_rank"),
                                         return_dtype=pl.UInt64)
    return (rank * pl.lit(1 << 32, dtype=pl.UInt64) + row).alias("eid")


def req_only_ids(path: Path, offsets: pl.DataFrame) -> pl.DataFrame:
    """Per request id of the :data:`REQ_ONLY` records of the events file ``path``: ``request_id``
    (Categorical), ``n`` (UInt32, its records), ``t0`` (Int64, their earliest corrected
    ``ts_ns``; null when none has a time). One streaming group-by: memory grows with the
    request ids, not the records."""
    lf = pl.scan_parquet(path).filter(REQ_ONLY).select("host", "ts_ns", "request_id")
    return (shifted(lf, offsets)
            .group_by("request_id")
            .agg(n=pl.len().cast(pl.UInt32), t0=pl.col("ts_ns").min())
            .collect(engine="streaming")
            .with_columns(pl.col("request_id").cast(pl.Categorical)))


@dataclass(frozen=True)
class ReqOnlyMap:
    """What :func:`req_only_keys` needs of the global pass: ``days`` (:func:`day_ranks`),
    ``offsets`` (``clock_offsets``), ``bucket_by_code`` (UInt32: a request id's bucket at its
    categorical code; Polars' categories are global to the process, so a batch's ids cast to
    Categorical have the same codes) and ``remapped`` (``request_id`` -> ``trace_id``,
    Categorical: the ids whose trace is another id's, link rule 2; usually few)."""

    days: pl.DataFrame | None
    offsets: pl.DataFrame
    bucket_by_code: pl.Series
    remapped: pl.DataFrame

    @classmethod
    def of(cls, ids: pl.DataFrame, days: pl.DataFrame | None,
           offsets: pl.DataFrame) -> ReqOnlyMap:
        """From ``ids`` (``request_id``, ``trace_id``: Categorical, ``_b``: UInt32)."""
        codes = ids.get_column("request_id").to_physical()
        size = int(cast(int, codes.max())) + 1 if ids.height else 0
        by_code = pl.zeros(size, dtype=pl.UInt32, eager=True).scatter(codes, ids.get_column("_b"))
        remapped = ids.filter(pl.col("trace_id") != pl.col("request_id")).select(
            "request_id", "trace_id")
        return cls(days, offsets, by_code, remapped)


def req_only_keys(records: pl.LazyFrame, m: ReqOnlyMap) -> pl.LazyFrame:
    """The keys of the :data:`REQ_ONLY` records of ``records`` (rows of the events file with
    ``_row`` and :data:`READS`), in their order:
    ``_row``, ``eid`` (:func:`order_key`), ``ts_ns`` (corrected), ``req_local``
    (``request_id``), ``trace_id`` (Categorical) and ``_b`` (UInt32) as the global pass gave
    their request ids (``m``). A lookup by categorical code, not a join: a join built a hash
    table of every request id per batch (~25 ms a batch at 100 M lines)."""
    lf = shifted(records.filter(REQ_ONLY).select(
        "_row", "host", "ts_ns", pl.col("request_id").cast(pl.Categorical)), m.offsets)
    return lf.select(
        "_row", order_key(m.days), "ts_ns", req_local="request_id",
        trace_id=pl.coalesce(id_lookup("request_id", m.remapped, "trace_id"), "request_id"),
        _b=pl.lit(m.bucket_by_code).gather(pl.col("request_id").to_physical()))
