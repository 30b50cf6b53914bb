"""``ingest(window_ns=...)``: the run window filter inside ingest (it was in ``cli/_stages.py``):
records outside ``[start_ns, end_ns]`` are dropped and counted in one ``ingest_stats`` row."""

from __future__ import annotations

from polars.testing import assert_frame_equal

from stacklens.ingest.pipeline import ingest

_LINES = [
    "2016-06-28 13:56:10.000 1 INFO nova.api [-] before",
    "2016-06-28 13:56:12.000 1 INFO nova.api [-] inside 1",
    "2016-06-28 13:56:13.000 1 INFO nova.api [-] inside 2",
    "2016-06-28 13:56:20.000 1 INFO nova.api [-] after",
]
_T12 = 1_467_122_172_000_000_000  # 2016-06-28 13:56:12 UTC in ns


def test_window_keeps_inside_and_counts_outside(tmp_path):
    log = tmp_path / "node1" / "nova-api.log"
    log.parent.mkdir()
    log.write_text("\n".join(_LINES) + "\n")
    whole = ingest([str(tmp_path)])
    res = ingest([str(tmp_path)], window_ns=(_T12, _T12 + 1_000_000_000))
    assert res.events.get_column("message").to_list() == ["inside 1", "inside 2"]
    assert res.outside_window == 2 and whole.outside_window == 0
    assert res.lines == whole.lines and res.files_read == whole.files_read
    last = res.ingest_stats.row(-1)
    assert last == ("*", "outside_run_window", "info", 2, "records outside the run's time window")
    assert_frame_equal(res.ingest_stats.head(-1), whole.ingest_stats)
    assert res.ingest_stats.schema == whole.ingest_stats.schema
