"""The trace stage on Apache Spark: :func:`stacklens.trace.build_traces`'s tables with the
per-trace work spread over Spark's Python workers (issue 12).

The split is :mod:`stacklens.trace.bounded`'s. Pass 1 (:func:`~stacklens.trace.bounded.
link_pass`: clock correction, linking and orphan adoption over narrow columns, then traces
sharing an RPC id joined and packed into buckets) runs on the driver, in Polars, from the
events Parquet file: this is the part that is not distributed, and its memory is the
driver's. It reads every record of the file (narrow columns), not only the traced ones: its
peak was ~840 B per record on the 1 M-line bench corpus (+516 MiB for 645,580 records, of
which 395,150 traced), and :mod:`stacklens.trace.bounded` notes ~1.5 GiB for the 10.5 M
records of the 30 M-line corpus (~150 B per record). Its outcome per traced record (bucket ``_b``,
corrected ``ts_ns``, ``eid``, ``req_local``, ``trace_id``) is shipped to Spark and joined to
the events Spark reads itself; ``groupBy("_b").applyInArrow`` then runs the unchanged
:func:`~stacklens.trace.trace_tables` on each bucket in a worker, and the driver collects the
buckets' tables and puts them in the whole-frame path's row order
(:func:`~stacklens.trace.bucketmerge.merge_buckets`). The result is identical to
:func:`~stacklens.trace.build_traces` and :func:`~stacklens.trace.bounded.build_traces_bounded`:
rows, values, dtypes and row order.

The join key is the record's row in the events file (``_row``, 0-based), on the driver
Polars' ``with_row_index`` over the file, in Spark the Parquet reader's hidden
``_metadata.row_index``: both count the file's rows in storage order, whatever the row groups
and however Spark splits the file into partitions, so the key is unique and both sides agree
on it. ``(file, line_no)`` is not a key: ``file`` and ``line_no`` may be null (events
imported from other formats, synthetic events), and an archive of several logs gives one
``file`` for several members whose line numbers restart. The row is a key of one file only,
so the events must be one Parquet file (a run folder's ``tables/events.parquet``), not a
folder of part files.

What goes where: the keys (~30 B per traced record in Polars, its ids categorical; strings
once shipped) travel from the driver to Spark once, as a local relation, so the driver's JVM holds them too
(``spark.driver.memory``); they are joined by sort-merge, never broadcast. Each bucket's
traced records (all the ``columns``) sit in one Python worker at a time, so more buckets mean
smaller workers, as in :mod:`stacklens.trace.bounded`, down to the largest component of
traces sharing RPC ids (one bucket cannot be split). The output tables come back to the driver
as Arrow IPC blobs (exact dtypes, no Spark type mapping) and are returned as Polars frames,
ready for :meth:`stacklens.store.RunStore.write`. PySpark is optional
(``pip install 'stacklens[spark]'``) and needs Java 17+. On a cluster, the driver reads the
events file at a file-system path (local or mounted), the executors at ``spark_path`` (for
example the same file under ``hdfs://``), and the executors must be able to import stacklens.

Cost: on one machine this is slower than :mod:`stacklens.trace.bounded` (the 645,580 records
of the 1 M-line bench corpus, 4 buckets: 15.5 s on ``local[2]`` with a warm session, 4.9 s
bounded; the keys' trip to the JVM, the join's shuffle of every record and the Arrow hops to
the Python workers cost more than they save on two cores). It is for the runs whose per-bucket
work outgrows one machine, not for speed on one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from stacklens.errors import UserError
from stacklens.schema import EVENTS, TABLES, conform
from stacklens.trace import trace_tables
from stacklens.trace.bounded import bucket_count, link_pass
from stacklens.trace.bucketmerge import merge_buckets

__all__ = ["DEFAULT_COLUMNS", "TABLE_NAMES", "trace_on_spark"]

#: The events columns traced by default: all but ``continuation``, which no trace rule reads
#: (what :func:`stacklens.pipeline.trace_step` passes to the bounded stage).
DEFAULT_COLUMNS: tuple[str, ...] = tuple(c for c in EVENTS if c != "continuation")
#: The tables :func:`trace_on_spark` returns.
TABLE_NAMES = ("spans", "flows", "traces", "breakdown", "phases", "clock_offsets")
#: The tables a bucket's worker returns.
_BUCKET_TABLES = ("spans", "flows", "traces", "breakdown", "phases")
#: Rows per Arrow IPC blob a worker returns (a Spark binary value is capped at 2 GiB).
_BLOB_ROWS = 100_000
#: What a worker returns, one row per blob: bucket, table name, blob number within the
#: bucket's table, the blob (an Arrow IPC stream of that slice of the table).
_ENVELOPE_DDL = "_b int, _table string, _part int, ipc binary"
#: What pass 1 hands a worker per record besides the events' columns (Spark has no unsigned
#: integers: ``eid`` travels as Int64 and is cast back to UInt64 in the worker; its values,
#: :func:`~stacklens.trace.reqonly.order_key`'s, are below 2**63).
_KEY_TYPES = {"eid": pl.UInt64, "req_local": pl.String, "trace_id": pl.String}


def trace_on_spark(
    spark: Any,
    events_path: str,
    columns: Sequence[str] | None = None,
    buckets: int | None = None,
    *,
    spark_path: str | None = None,
) -> dict[str, pl.DataFrame]:
    """The trace-stage tables of the events Parquet file ``events_path`` (canonical
    ``events`` columns), with the per-bucket work on ``spark`` (a SparkSession).

    ``columns``: the events columns to trace (default :data:`DEFAULT_COLUMNS`; ``ts_ns`` and
    :data:`~stacklens.trace.LINK_COLUMNS` must be among them). ``buckets``: how many groups
    the traces are packed into (default: the larger of
    :func:`~stacklens.trace.bounded.bucket_count` of the file's rows, which bounds a
    worker's memory as the bounded stage bounds the process's, and Spark's default
    parallelism, so every core has work). ``spark_path``: where the executors read the same
    file (default ``events_path``).

    Returns ``{"spans", "flows", "traces", "breakdown", "phases", "clock_offsets"}``: Polars
    frames conformed to :mod:`stacklens.schema`, identical (rows, dtypes, row order) to
    :func:`~stacklens.trace.build_traces` of the same columns.

    Raises :class:`~stacklens.errors.UserError` when ``events_path`` is not one Parquet file
    or ``buckets`` is below 1, ``OSError`` when the driver cannot read it, and Spark's own
    exceptions (``pyspark.errors.PySparkException`` and subclasses) when a job fails, for
    example when the executors cannot read ``spark_path``."""
    import pyarrow.parquet as papq

    cols = list(columns) if columns is not None else list(DEFAULT_COLUMNS)
    path = Path(events_path)
    if path.is_dir():
        raise UserError(f"{events_path}: expected one Parquet file (the join key is the row "
                        "in the file), not a folder")
    if buckets is not None and buckets < 1:
        raise UserError(f"buckets={buckets}: expected a positive integer")
    n_rows = papq.ParquetFile(path).metadata.num_rows
    b = buckets or max(bucket_count(n_rows), int(spark.sparkContext.defaultParallelism))
    keys, offsets = link_pass(path, cols, b)
    env = _bucket_tables(spark, spark_path or str(path), cols, keys)
    del keys
    return {**merge_buckets(_unpack(env.toArrow())),
            "clock_offsets": conform(offsets, "clock_offsets")}


def _bucket_tables(spark: Any, spark_path: str, columns: list[str], keys: pl.DataFrame) -> Any:
    """The Spark DataFrame of the buckets' tables (:data:`_ENVELOPE_DDL`): the events at
    ``spark_path`` joined on ``_row`` to pass 1's ``keys`` (its ``ts_ns`` replacing the
    file's), grouped by bucket, each group through :func:`_run_bucket`."""
    from pyspark.sql import functions as F

    shipped = keys.select(
        pl.col("_row", "eid").cast(pl.Int64), "ts_ns",
        pl.col("req_local", "trace_id").cast(pl.String),
        pl.col("_b").cast(pl.Int32),
    )
    keys_sdf = spark.createDataFrame(shipped.to_arrow())
    events = spark.read.parquet(spark_path).select(
        *[F.col(c) for c in columns if c != "ts_ns"],
        F.col("_metadata.row_index").alias("_row"),
    )
    spec = {"columns": columns}
    return (
        # a sort-merge join: Spark would otherwise broadcast the keys (a local relation, small
        # by its estimate) and run out of driver memory building the hash table
        events.join(keys_sdf.hint("merge"), on="_row", how="inner")
        .drop("_row")
        .groupBy("_b")
        .applyInArrow(lambda key, table: _run_bucket(key, table, spec), _ENVELOPE_DDL)
    )


def _run_bucket(key: tuple[Any, ...], table: pa.Table, spec: dict[str, Any]) -> pa.Table:
    """In a worker: one bucket's joined records (the events' ``columns`` with ``ts_ns``
    corrected, ``eid``, ``req_local``, ``trace_id``, ``_b``) into
    :func:`~stacklens.trace.link_all`'s column order and row order (``ts_ns``, ``eid``), run
    through :func:`~stacklens.trace.trace_tables`; returns the tables as envelope rows."""
    b = key[0].as_py()
    columns: list[str] = spec["columns"]
    frame = pl.from_arrow(table)
    assert isinstance(frame, pl.DataFrame)  # a table, never a single column
    schema = {"eid": pl.UInt64, **{c: TABLES["events"][c] for c in columns},
              "req_local": pl.String, "trace_id": pl.String}
    linked = frame.select([pl.col(c).cast(t) for c, t in schema.items()]).sort("ts_ns", "eid")
    rows: dict[str, list[Any]] = {"_b": [], "_table": [], "_part": [], "ipc": []}
    for name, df in trace_tables(linked).items():
        for part, chunk in enumerate(_slices(df)):
            rows["_b"].append(b)
            rows["_table"].append(name)
            rows["_part"].append(part)
            rows["ipc"].append(_to_ipc(chunk))
    return pa.table({
        "_b": pa.array(rows["_b"], pa.int32()),
        "_table": pa.array(rows["_table"], pa.string()),
        "_part": pa.array(rows["_part"], pa.int32()),
        "ipc": pa.array(rows["ipc"], pa.binary()),
    })


def _slices(df: pl.DataFrame) -> Iterator[pl.DataFrame]:
    """``df`` in slices of :data:`_BLOB_ROWS` rows; an empty frame is one empty slice (so the
    driver sees the bucket's schema even when it holds no rows of that table)."""
    if not df.height:
        yield df
        return
    yield from df.iter_slices(_BLOB_ROWS)


def _to_ipc(df: pl.DataFrame) -> bytes:
    sink = pa.BufferOutputStream()
    table = df.to_arrow()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return bytes(sink.getvalue().to_pybytes())


def _from_ipc(blob: bytes) -> pl.DataFrame:
    frame = pl.from_arrow(pa.ipc.open_stream(blob).read_all())
    assert isinstance(frame, pl.DataFrame)
    return frame


def _unpack(env: pa.Table) -> dict[str, list[pl.DataFrame]]:
    """The envelope rows collected on the driver -> ``{table: [frames]}``, each bucket's
    blobs in order, buckets in order (:func:`~stacklens.trace.bucketmerge.merge_buckets` needs
    each bucket's rows in the order :func:`~stacklens.trace.trace_tables` gave them)."""
    order = pl.DataFrame(env.select(["_b", "_table", "_part"])).with_row_index("_i").sort(
        "_b", "_table", "_part")
    blobs = env.column("ipc")
    parts: dict[str, list[pl.DataFrame]] = {}
    for i, name in order.select("_i", "_table").iter_rows():
        if name not in _BUCKET_TABLES:
            raise ValueError(f"unexpected table {name!r} from a Spark worker")
        parts.setdefault(name, []).append(_from_ipc(blobs[i].as_py()))
    return parts
