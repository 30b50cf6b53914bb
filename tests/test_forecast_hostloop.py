"""host_loops: the scheduler's per-host refresh timed from its DEBUG lines (nova
HostState._locked_update, one line per host per scheduling request)."""

from __future__ import annotations

import polars as pl
import pytest

from stacklens.forecast.samples import HOST_UPDATE_LINE, host_loops

S = 1_000_000_000
MS = 1_000_000


def _spans(rows: list[tuple[str, str, int, int]]) -> pl.DataFrame:
    return pl.DataFrame(
        [("nova-scheduler", "call scheduler", t, r, a, b) for t, r, a, b in rows],
        schema=["service", "operation", "trace_id", "request_id", "start_ns", "end_ns"],
        orient="row")


def _events(rows: list[tuple[str, int, str]]) -> pl.DataFrame:
    return pl.DataFrame([("nova-scheduler", r, ts, m) for r, ts, m in rows],
                        schema=["service", "request_id", "ts_ns", "message"], orient="row")


def test_per_host_time_from_first_to_last_line() -> None:
    line = f"{HOST_UPDATE_LINE}: ComputeNode(host='fake-1')"
    spans = _spans([("t1", "req-1", 10 * S, 11 * S),
                    ("t1", "req-1", 20 * S, 21 * S),  # a reschedule: same request id
                    ("t2", "req-2", 30 * S, 31 * S)])  # one host: unknown, left out
    events = _events(
        [("req-1", 10 * S + 100 * MS + i * 20 * MS, line) for i in range(4)]
        + [("req-1", 20 * S + 50 * MS + i * 30 * MS, line) for i in range(8)]
        + [("req-1", 10 * S + 500 * MS, "Starting with 4 host(s)"),
           ("req-2", 30 * S + 10 * MS, line)])
    got = host_loops(events, spans).sort("span_start_ns")
    assert got["trace_id"].to_list() == ["t1", "t1"]
    assert got["n_hosts"].to_list() == [4, 8]
    assert got["first_ns"].to_list() == [10 * S + 100 * MS, 20 * S + 50 * MS]
    assert got["per_host_s"].to_list() == pytest.approx([0.020, 0.030])
    assert got["loop_s"].to_list() == pytest.approx([0.080, 0.240])


def test_no_debug_lines_no_loops() -> None:
    spans = _spans([("t1", "req-1", 10 * S, 11 * S)])
    events = _events([("req-1", 10 * S + MS, "Starting with 4 host(s)")])
    assert host_loops(events, spans).height == 0
