"""The analyses give the same numbers on Spark (local[2]) as on DuckDB, on the real devstack job."""

from __future__ import annotations

import math
import shutil

import polars as pl
import pytest

from stacklens.analyze.queries import QUERIES
from stacklens.analyze.sql import for_engine


def _norm(rows: list[dict]) -> list[tuple]:
    """Rows in a stable order (floats rounded for sorting only)."""
    def key(r: dict) -> str:
        return repr(tuple(round(v, 6) if isinstance(v, float) else v for v in r.values()))
    return [tuple(r.values()) for r in sorted(rows, key=key)]


def _same(a: list[tuple], b: list[tuple]) -> bool:
    """Equal rows; floats equal to 1e-9 relative (the engines sum in different orders, so the
    last digit of a mean may differ)."""
    def eq(x, y) -> bool:
        if isinstance(x, float) and isinstance(y, float):
            return math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-12)
        return x == y
    return len(a) == len(b) and all(
        len(r) == len(s) and all(eq(x, y) for x, y in zip(r, s, strict=True))
        for r, s in zip(a, b, strict=True))


def test_percentiles_are_exact_on_spark():
    sql = for_engine("SELECT percentile_cont(0.95) WITHIN GROUP (ORDER BY dur_s) AS p FROM t", "spark")
    assert "PERCENTILE(dur_s, 0.95)" in sql and "APPROX" not in sql
    with pytest.raises(ValueError):
        for_engine("SELECT 1", "oracle")


def test_every_query_transpiles():
    for q in QUERIES.values():
        assert for_engine(q, "spark")


def test_spark_matches_duckdb_on_real_logs(devstack_run):
    pytest.importorskip("pyspark", reason="PySpark not installed (pip install 'stacklens[spark]')")
    if not shutil.which("java"):
        pytest.skip("no Java runtime for Spark (apt install openjdk-17-jre-headless)")
    from stacklens.analyze.build import section_rows
    from stacklens.analyze.spark import local_session, run_queries

    store, _ = devstack_run
    spark = local_session(2)
    try:
        got = run_queries(spark, str(store.tables_dir))
    finally:
        spark.stop()
    with store.connect() as con:
        want = {name: section_rows(con, name) for name in QUERIES}
    for name in QUERIES:
        assert [list(r) for r in got[name]] == [list(r) for r in want[name]], f"{name}: columns differ"
        assert _same(_norm(got[name]), _norm(want[name])), f"{name}: values differ"
    assert sum(r["traces"] for r in got["summary"]) > 1000


def test_ingest_on_spark_matches_local_ingest(tmp_path):
    pytest.importorskip("pyspark", reason="PySpark not installed (pip install 'stacklens[spark]')")
    if not shutil.which("java"):
        pytest.skip("no Java runtime for Spark (apt install openjdk-17-jre-headless)")
    from conftest import DATA, need

    from stacklens.analyze.spark import local_session
    from stacklens.ingest.pipeline import ingest
    from stacklens.ingest.spark import collect, ingest_on_spark

    logs = need(DATA / "oslo-logs" / "devstack-mitaka-kyuhwi")
    local = ingest([str(logs)])
    spark = local_session(2)
    try:
        tables = ingest_on_spark(spark, [str(logs)], partitions=4)
        got = {name: collect(df, name) for name, df in tables.items()}
    finally:
        spark.stop()
    key = ["file", "line_no"]
    assert got["events"].sort(key).equals(local.events.sort(key))
    assert got["quarantine"].sort(key).equals(local.quarantine.sort(key))
    want_stats = local.ingest_stats.filter(pl.col("kind") != "timezone_assumption")
    cols = ["file", "kind"]
    assert got["ingest_stats"].sort(cols).equals(want_stats.sort(cols))
