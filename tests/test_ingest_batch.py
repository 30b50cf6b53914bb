"""Batch size of the streaming ingest: ``STACKLENS_INGEST_BATCH_MIB`` is read and checked, and
the tables do not depend on the batch size (small batches, many row groups, same rows; the
order of the ``ingest_stats`` rows follows the batches, as it always did)."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import DATA, need
from polars.testing import assert_frame_equal

from stacklens.errors import UserError
from stacklens.ingest.pipeline import batch_bytes_setting, ingest
from stacklens.pipeline import ingest_step
from stacklens.store import RunStore

MITAKA = DATA / "oslo-logs" / "devstack-mitaka-kyuhwi"


def test_batch_setting(monkeypatch):
    monkeypatch.delenv("STACKLENS_INGEST_BATCH_MIB", raising=False)
    assert batch_bytes_setting() == 32 << 20
    monkeypatch.setenv("STACKLENS_INGEST_BATCH_MIB", " 8 ")
    assert batch_bytes_setting() == 8 << 20
    for bad in ("0", "-3", "1.5", "lots"):
        monkeypatch.setenv("STACKLENS_INGEST_BATCH_MIB", bad)
        with pytest.raises(UserError, match="STACKLENS_INGEST_BATCH_MIB"):
            batch_bytes_setting()


def test_small_batches_same_tables(tmp_path, monkeypatch):
    """Batches of 1 MiB streamed into Parquet row groups give the tables of one whole-input
    batch kept in memory."""
    need(MITAKA)
    whole = ingest([str(MITAKA)], batch_bytes=1 << 40)
    monkeypatch.setenv("STACKLENS_INGEST_BATCH_MIB", "1")
    store = RunStore(tmp_path / "run")
    section = ingest_step(store, [str(MITAKA)])
    assert section.records == whole.events.height > 0
    assert_frame_equal(store.read("events"), whole.events)
    # the same rows; their order follows the batches (tokenizer rows come per batch)
    cols = ["file", "kind", "detail", "severity", "count"]
    assert_frame_equal(store.read("ingest_stats").sort(cols), whole.ingest_stats.sort(cols))
    assert_frame_equal(store.read("quarantine"), whole.quarantine)


def _oslo_logs(root, files=6, lines=400):
    """Synthetic nova-api logs in oslo.log's default format (2025.1 ``logging_context_format_
    string``): ``files`` files of ``lines`` records each."""
    for f in range(files):
        d = root / f"host{f % 2}" / "var" / "log" / "nova"
        d.mkdir(parents=True, exist_ok=True)
        rows = [f"2025-03-01 10:{f:02d}:{i // 60 % 60:02d}.{i:06d} 12{f} INFO nova.api "
                f"[req-{f:08d}-0000-4000-8000-{i:012d} u p - - -] GET /v2.1/servers/{i} "
                f"status: 200 len: 12 time: 0.0{i % 10}" for i in range(lines)]
        (d / f"nova-api-{f}.log").write_text("\n".join(rows) + "\n")


def test_sink_gets_every_batch_in_order(tmp_path):
    """The sink runs on a thread of its own: it still gets every batch, in file order."""
    _oslo_logs(tmp_path)
    whole = ingest([str(tmp_path)], batch_bytes=1 << 40)
    got = []
    res = ingest([str(tmp_path)], batch_bytes=16 << 10, sink=got.append)
    assert len(got) > 3 and res.records == whole.events.height == 6 * 400
    assert_frame_equal(pl.concat(got), whole.events)


def test_sink_error_is_raised(tmp_path):
    """An error of the sink (a full disk, say) ends the ingest with that error, no hang."""
    _oslo_logs(tmp_path)
    seen = []

    def sink(df):
        seen.append(df.height)
        if len(seen) == 2:
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        ingest([str(tmp_path)], batch_bytes=16 << 10, sink=sink)
    assert len(seen) == 2
