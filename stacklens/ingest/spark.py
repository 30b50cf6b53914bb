"""Ingest on Apache Spark: the same tokenizer, run in Spark's Python workers.

The driver lists the files (:func:`~stacklens.ingest.sources.find_files`), Spark spreads them
over partitions, and each partition runs :func:`~stacklens.ingest.pipeline.ingest_files` on its
share through ``mapInArrow``; no tokenizing logic is written twice. The three ingest tables come
back as Spark DataFrames (write them with ``.write.parquet`` to HDFS/S3 for the analyses of
:mod:`stacklens.analyze.spark`). Files must be readable from every worker at the same path
(local mode, or a shared file system). PySpark is optional: ``pip install 'stacklens[spark]'``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa

from stacklens.errors import NoLogsFound
from stacklens.ingest.names import NameMap
from stacklens.ingest.pipeline import ingest_files
from stacklens.ingest.sources import SourceFile, find_files
from stacklens.schema import EVENTS, INGEST_STATS, QUARANTINE, Columns, Dtype, conform

__all__ = ["collect", "ingest_on_spark"]

_PARTS = ("events", "ingest_stats", "quarantine")
# one envelope schema for the three tables: the union of their columns plus ``_table``
_ENVELOPE: Columns = {"_table": pl.String, **EVENTS}
for _name, _t in {**QUARANTINE, **INGEST_STATS}.items():
    _ENVELOPE.setdefault(_name, _t)


_SPARK_TYPES: dict[Dtype, str] = {pl.String: "string", pl.Int64: "bigint", pl.Int32: "int", pl.Float64: "double",
                pl.Boolean: "boolean"}


def _envelope_ddl() -> str:
    """The envelope as a Spark DDL schema string (``mapInArrow`` wants Spark types)."""
    return ", ".join(f"`{c}` {_SPARK_TYPES[t]}" for c, t in _ENVELOPE.items())


def _to_envelope(name: str, df: pl.DataFrame) -> pa.RecordBatch:
    cols = [
        (pl.lit(name) if c == "_table" else pl.col(c).cast(t) if c in df.columns
         else pl.lit(None, dtype=t)).alias(c)
        for c, t in _ENVELOPE.items()
    ]
    return df.select(cols).to_arrow().to_batches()[0] if df.height else None


def _partition(batches: Iterator[pa.RecordBatch], opts: dict[str, Any]) -> Iterator[pa.RecordBatch]:
    files = [
        SourceFile(path=Path(r["path"]), root=Path(r["root"]), explicit=r["explicit"])
        for b in batches
        for r in b.to_pylist()
    ]
    if not files:
        return
    try:
        res = ingest_files(
            files, names=NameMap(opts["host_map"], opts["service_map"]),
            tz_offset_s=opts["tz_offset_s"], merged_seen=opts["merged_seen"], workers=1,
        )
    except NoLogsFound:
        return
    stats = res.ingest_stats.filter(pl.col("kind") != "timezone_assumption")
    for name, df in (("events", res.events), ("ingest_stats", stats), ("quarantine", res.quarantine)):
        for chunk in df.iter_slices(100_000):
            batch = _to_envelope(name, chunk)
            if batch is not None:
                yield from pa.Table.from_batches([batch]).combine_chunks().to_batches()


def ingest_on_spark(
    spark: Any,
    paths: list[str],
    *,
    names: NameMap | None = None,
    tz_offset_s: int = 0,
    partitions: int | None = None,
) -> dict[str, Any]:
    """Ingest ``paths`` on ``spark``; returns Spark DataFrames ``{"events", "ingest_stats",
    "quarantine"}`` with the columns of :mod:`stacklens.schema` (rows in no particular order).

    Raises :class:`~stacklens.errors.InputNotFound` for a missing path."""
    from pyspark.sql import functions as F

    names = names or NameMap()
    files = list(find_files(paths))
    rows = [(str(f.path), str(f.root), f.explicit) for f in files]
    opts = {"host_map": names.host_map, "service_map": names.service_map,
            "tz_offset_s": tz_offset_s, "merged_seen": len(files) > 1}
    n = partitions or max(1, spark.sparkContext.defaultParallelism)
    paths_df = spark.createDataFrame(rows, "path string, root string, explicit boolean").repartition(n)
    spec = json.loads(json.dumps(opts))
    env = paths_df.mapInArrow(lambda it: _partition(it, spec), _envelope_ddl()).cache()
    schemas = {"events": EVENTS, "ingest_stats": INGEST_STATS, "quarantine": QUARANTINE}
    return {name: env.filter(F.col("_table") == name).select(*schemas[name]) for name in _PARTS}


def collect(df: Any, name: str) -> pl.DataFrame:
    """A Spark DataFrame of canonical table ``name`` as a Polars frame (small tables, tests)."""
    frame = pl.from_arrow(df.toArrow())
    assert isinstance(frame, pl.DataFrame)  # a table, never a single column
    return conform(frame, name)
