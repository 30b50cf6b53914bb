"""The analyses on Apache Spark, over a run folder's Parquet tables.

For runs whose tables outgrow one machine: the same section SQL as the report
(:data:`stacklens.analyze.queries.SECTIONS`, transpiled by :func:`stacklens.analyze.sql.for_engine`) run on a SparkSession over
``<run>/tables/*.parquet`` — a local folder, or any path Spark reads (``hdfs://``, ``s3a://``).
PySpark is an optional dependency (``pip install 'stacklens[spark]'``) and needs a Java 17+
runtime; on a cluster, submit a driver script that calls :func:`run_queries` with
``spark.master`` set by ``spark-submit``.
"""

from __future__ import annotations

import math
import os
import sys
from typing import Any

from stacklens.analyze.queries import QUERIES, SECTIONS
from stacklens.analyze.sql import for_engine
from stacklens.errors import UserError

__all__ = ["TABLE_NAMES", "local_session", "run_queries"]

#: Tables the analyses read (``templates`` and ``error_templates`` are written by the mining
#: step, :func:`stacklens.analyze.mining.mine_store`; ``requests`` by ``stacklens run``).
TABLE_NAMES = ("events", "ingest_stats", "quarantine", "spans", "flows", "traces", "breakdown",
               "phases", "templates", "error_templates", "clock_offsets", "requests")


def local_session(cores: int = 2) -> Any:
    """A SparkSession on ``local[cores]`` bound to 127.0.0.1, with UTC and a small shuffle, for
    tests and laptops.

    Raises :class:`~stacklens.errors.UserError` when PySpark is not installed."""
    # loopback only: Spark otherwise binds to whatever address the host name resolves to
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # workers run this interpreter (with stacklens and its dependencies), not the system one
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    try:
        from pyspark.sql import SparkSession
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise UserError("PySpark is not installed: pip install 'stacklens[spark]'") from e
    return (
        SparkSession.builder.master(f"local[{cores}]")
        .appName("stacklens")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(max(2, cores)))
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )


def _clean(v: Any) -> Any:
    return None if isinstance(v, float) and not math.isfinite(v) else v


def run_queries(spark: Any, tables_dir: str, names: list[str] | None = None) -> dict[str, list[dict]]:
    """Register each Parquet table under ``tables_dir`` as a view and run the sections' SQL.

    ``names``: section names (default: every section that needs no client records). Returns
    ``{section name: [row dicts]}`` with the same columns as the DuckDB run
    (:func:`stacklens.analyze.build.section_rows`), to be placed in a report with
    :meth:`stacklens.analyze.section.Section.shape`. Tables that are absent are skipped (a query
    that needs one fails with Spark's AnalysisException)."""
    base = tables_dir.rstrip("/")
    for t in TABLE_NAMES:
        try:
            spark.read.parquet(f"{base}/{t}.parquet").createOrReplaceTempView(t)
        except Exception as e:  # noqa: BLE001 - Spark raises its own types for missing paths
            if "PATH_NOT_FOUND" not in str(e) and "does not exist" not in str(e):
                raise
    out: dict[str, list[dict]] = {}
    sql = {s.name: s.sql for s in SECTIONS}
    for name in names or list(QUERIES):
        rows = spark.sql(for_engine(sql[name], "spark")).collect()
        out[name] = [{k: _clean(v) for k, v in r.asDict().items()} for r in rows]
    return out
