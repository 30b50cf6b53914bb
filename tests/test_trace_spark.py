"""The trace stage on Spark (stacklens.trace.spark) gives the tables of the whole-frame path
(stacklens.trace.build_traces): same rows, values, dtypes and row order, on real log sets and
on the synthetic cross-trace events of test_trace_bounded. One local[2] session for the module."""

from __future__ import annotations

import shutil

import polars as pl
import pytest
from conftest import DATA, need
from polars.testing import assert_frame_equal
from test_trace_bounded import COLS, NAMES, _synthetic

from stacklens.errors import UserError
from stacklens.pipeline import ingest_step
from stacklens.store import RunStore
from stacklens.trace import build_traces

pytest.importorskip("pyspark", reason="PySpark not installed (pip install 'stacklens[spark]')")
if not shutil.which("java"):
    pytest.skip("no Java runtime for Spark (apt install openjdk-17-jre-headless)",
                allow_module_level=True)

from stacklens.trace.spark import trace_on_spark  # noqa: E402 - after the skips


@pytest.fixture(scope="module")
def spark():
    from stacklens.analyze.spark import local_session

    session = local_session(2)
    # small input splits, so one events file is read by several tasks (the join key, the
    # row in the file, must not depend on the split)
    session.conf.set("spark.sql.files.maxPartitionBytes", str(16 * 1024))
    yield session
    session.stop()


def _same(spark, events: pl.DataFrame, path: str, buckets: int) -> dict[str, pl.DataFrame]:
    whole = build_traces(events)
    got = trace_on_spark(spark, path, COLS, buckets=buckets)
    assert set(got) == set(NAMES)
    for name in NAMES:
        assert_frame_equal(got[name], whole[name], check_row_order=True, check_dtypes=True)
    return whole


@pytest.mark.parametrize(("logs", "buckets"), [("devstack-gate-cinder-ci-2016", 3),
                                                ("oslogmerger-osp7-router", 2),
                                                ("devstack-mitaka-kyuhwi", 4)])
def test_real_logs_identical(spark, tmp_path, logs: str, buckets: int) -> None:
    store = RunStore(tmp_path)
    ingest_step(store, [str(need(DATA / "oslo-logs" / logs))])
    whole = _same(spark, store.read("events", columns=COLS),
                  str(store.tables_dir / "events.parquet"), buckets)
    assert whole["traces"].height > 0


@pytest.mark.parametrize("buckets", [2, 4])
def test_synthetic_cross_trace_identical(spark, tmp_path, buckets: int) -> None:
    events = _synthetic()
    path = tmp_path / "events.parquet"
    events.write_parquet(path, row_group_size=64)  # several row groups, several splits
    assert spark.read.parquet(str(path)).rdd.getNumPartitions() > 2
    whole = _same(spark, events.select(COLS), str(path), buckets)
    span_trace = whole["spans"].select("span_id", "trace_id")
    cross = whole["flows"].join(span_trace.rename({"span_id": "dst_span_id", "trace_id": "_dst"}),
                                on="dst_span_id").filter(pl.col("_dst") != pl.col("trace_id"))
    assert cross.height > 0 and whole["clock_offsets"].height > 0


def test_no_traced_records(spark, tmp_path) -> None:
    events = _synthetic(3).with_columns(request_id=None, global_request_id=None,
                                        instance_uuid=None, rpc_id=None)
    path = tmp_path / "events.parquet"
    events.write_parquet(path)
    got = trace_on_spark(spark, str(path), COLS, buckets=2)
    assert all(got[n].height == 0 for n in NAMES if n != "clock_offsets")
    for name in NAMES:
        assert_frame_equal(got[name], build_traces(events.select(COLS))[name])


def test_bad_arguments(spark, tmp_path) -> None:
    with pytest.raises(UserError, match="one Parquet file"):
        trace_on_spark(spark, str(tmp_path), COLS)
    with pytest.raises(UserError, match="buckets=0"):
        trace_on_spark(spark, str(tmp_path / "events.parquet"), COLS, buckets=0)
