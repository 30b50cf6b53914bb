"""``mine_store`` reads only the records the mining uses (ERROR/CRITICAL records and the failed
traces' first-error lines) and gives exactly what ``mine_error_templates`` gives over the whole
tables: on the real log sets and on a store whose failed trace's first error is a WARNING record
whose message is trivial (``LOG.exception('Error')``-like), mined from its traceback."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import DATA, need
from polars.testing import assert_frame_equal

from stacklens.analyze.mining import mine_error_templates, mine_store
from stacklens.errors import StoreError
from stacklens.pipeline import ingest_step, trace_and_mine_step, trace_step
from stacklens.schema import EVENTS, TRACES, conform
from stacklens.store import RunStore


def _whole(store: RunStore) -> dict[str, pl.DataFrame]:
    return mine_error_templates(store.read("events"), store.read("traces"))


@pytest.mark.parametrize("name", ["devstack-gate-cinder-ci-2016", "oslogmerger-osp7-router"])
def test_real_logs_same_as_whole_tables(tmp_path, name):
    store = RunStore(tmp_path)
    ingest_step(store, [str(need(DATA / "oslo-logs" / name))])
    trace_step(store)
    got = mine_store(store)
    for k, want in _whole(store).items():
        assert_frame_equal(got[k], want, check_row_order=True)
    assert got["templates"].height > 0


def test_mining_beside_the_trace_stage_gives_the_same_tables(tmp_path):
    """trace_and_mine_step (mining's first pass in a thread beside the trace stage) writes the
    tables of trace_step then mine_step."""
    logs = str(need(DATA / "oslo-logs" / "devstack-gate-cinder-ci-2016"))
    a, b = RunStore(tmp_path / "a"), RunStore(tmp_path / "b")
    ingest_step(a, [logs])
    ingest_step(b, [logs])
    assert trace_and_mine_step(a).traces == trace_step(b).traces
    mine_store(b)
    for name in ("templates", "error_templates", "traces", "spans", "breakdown"):
        assert_frame_equal(a.read(name), b.read(name), check_row_order=True)


def test_a_trace_error_is_raised_and_mining_waited_for(tmp_path):
    """Before ingest both steps fail: the trace stage's error is the one raised."""
    with pytest.raises(StoreError):
        trace_and_mine_step(RunStore(tmp_path))


def test_failed_trace_on_a_warning_line_keeps_its_traceback(tmp_path):
    store = RunStore(tmp_path)
    rows = [{c: None for c in EVENTS} | r for r in [
        {"level": "INFO", "message": "all fine", "file": "a.log", "line_no": 1},
        {"level": "ERROR", "message": "Failed to allocate network(s) for x", "file": "a.log",
         "line_no": 2},
        {"level": "WARNING", "message": "Error",
         "continuation": "Traceback (most recent call last):\nNoValidHost: none",
         "file": "b.log", "line_no": 7},
        {"level": None, "message": "no level at all", "file": "b.log", "line_no": 8},
    ]]
    store.write({"events": conform(pl.DataFrame(rows, schema=EVENTS), "events")})
    traces = [{c: None for c in TRACES} | {"trace_id": f"req-{i}", **r} for i, r in enumerate([
        {"error": "Error", "error_file": "b.log",
         "error_line_no": 7},
        {"error": "Failed to allocate network(s) for x", "error_file": "a.log",
         "error_line_no": 2},
        {},
    ])]
    store.write({"traces": conform(pl.DataFrame(traces, schema=TRACES), "traces")})
    got = mine_store(store)
    for k, want in _whole(store).items():
        assert_frame_equal(got[k], want, check_row_order=True)
    assert got["error_templates"].height == 2
    # the trivial message is mined from its traceback, which only the WARNING line holds
    assert "NoValidHost" in got["error_templates"]["template"][0]


def test_before_trace_says_so(tmp_path):
    with pytest.raises(StoreError):
        mine_store(RunStore(tmp_path))


def test_only_the_continuations_the_text_reads_are_loaded_and_the_result_is_the_same(tmp_path):
    """mine_store reads a continuation only where error_text uses it (a trivial message); an
    ERROR record with a real message and a long traceback is mined from its message, one with
    an empty message from its traceback's exception line, as over the whole tables."""
    store = RunStore(tmp_path)
    tb = "Traceback (most recent call last):\n" + "  File \"x.py\", line 1\n" * 500
    rows = [{c: None for c in EVENTS} | r for r in [
        {"level": "ERROR", "message": "Instance failed to spawn", "file": "c.log", "line_no": 1,
         "continuation": tb + "libvirtError: internal error"},
        {"level": "ERROR", "message": "", "file": "c.log", "line_no": 2,
         "continuation": tb + "ValueError: boom"},
        {"level": "CRITICAL", "message": "Error", "file": "c.log", "line_no": 3,
         "continuation": None},
        {"level": "ERROR", "message": "", "file": "c.log", "line_no": 4,
         "continuation": tb + "ValueError: boom"},
    ]]
    store.write({"events": conform(pl.DataFrame(rows, schema=EVENTS), "events")})
    traces = [{c: None for c in TRACES} | {"trace_id": "req-0", "error": "",
                                           "error_file": "c.log", "error_line_no": 2}]
    store.write({"traces": conform(pl.DataFrame(traces, schema=TRACES), "traces")})
    got = mine_store(store)
    for k, want in _whole(store).items():
        assert_frame_equal(got[k], want, check_row_order=True)
    texts = " ".join(got["templates"]["template"].to_list())
    assert "ValueError" in texts and "libvirtError" not in texts


def test_continuations_read_row_group_by_row_group(tmp_path):
    """``_continuations`` gives each wanted row's value across row-group boundaries (first and
    last row of a group, several rows in one group, groups with none, the file's last row)."""
    from stacklens.analyze.mining import _continuations

    n = 50
    vals = [None if i % 3 == 0 else f"Traceback line {i}\n  File x" for i in range(n)]
    path = tmp_path / "events.parquet"
    pl.DataFrame({"continuation": vals}, schema={"continuation": pl.String}).write_parquet(
        path, row_group_size=7)
    import pyarrow.parquet as papq

    assert papq.ParquetFile(path).metadata.num_row_groups == 8
    rows = [0, 1, 6, 7, 13, 14, 20, 41, 48, 49]
    assert _continuations(path, rows) == [vals[i] for i in rows]
    assert _continuations(path, []) == []
