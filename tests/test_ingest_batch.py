"""Batch size of the streaming ingest: ``STACKLENS_INGEST_BATCH_MIB`` is read and checked, and
the tables do not depend on the batch size (small batches, many row groups, same rows; the
order of the ``ingest_stats`` rows follows the batches, as it always did)."""

from __future__ import annotations

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
    assert batch_bytes_setting() == 64 << 20
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
