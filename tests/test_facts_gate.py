"""``add_facts`` runs the fact patterns only on the records whose message holds one of their
literals and puts the fact columns beside the batch's own columns (no join): it must give
the same frame and the same ``duration_out_of_range`` rows as the patterns run on every
record (``_add_facts_all``), on real logs of three releases and on synthetic batches where few
records hold a fact, nulls and odd durations included."""

from __future__ import annotations

import polars as pl
import pytest
from conftest import DATA, need
from polars.testing import assert_frame_equal

from stacklens.ingest.facts import _add_facts_all, add_facts
from stacklens.ingest.pipeline import ingest

_FACT_PREFIXES = ("http_", "took_", "rpc_", "lock_")


def _without_facts(ev: pl.DataFrame) -> pl.DataFrame:
    return ev.select(c for c in ev.columns if not c.startswith(_FACT_PREFIXES))


def _same(ev: pl.DataFrame) -> None:
    got_stats: list = []
    want_stats: list = []
    got = add_facts(ev, got_stats)
    want = _add_facts_all(ev, want_stats)
    assert_frame_equal(got, want, check_column_order=False)
    assert sorted(got_stats) == sorted(want_stats)


@pytest.mark.parametrize("folder", [
    "devstack-gate-cinder-ci-2016", "devstack-mitaka-kyuhwi", "oslogmerger-osp7-router",
])
def test_gated_facts_equal_the_patterns_on_every_record(folder):
    ev = _without_facts(ingest([str(need(DATA / "oslo-logs" / folder))]).events)
    assert ev.height > 10_000
    for i in range(0, ev.height, 50_000):  # batches as the ingest makes them
        _same(ev.slice(i, 50_000))


def test_gated_facts_on_a_sparse_synthetic_batch():
    plain = [f"plain record {i} with no fact" for i in range(40)]
    facts = [
        '10.0.0.1 "GET /v2.1/servers HTTP/1.1" status: 200 len: 10 time: 0.5000000',
        '10.0.0.1 "GET /v2.1/servers HTTP/1.1" status: 200 len: 10 time: nan',
        "Took 12.30 seconds to spawn the instance on the hypervisor.",
        "Took -1 seconds to build instance.",
        "CALL msg_id: 0123456789abcdef0123456789abcdef exchange 'nova' topic 'conductor'",
        "received reply msg_id: 0123456789abcdef0123456789abcdef",
        'Lock "compute_resources" acquired by "nova.compute.x" :: waited 1.250s',
        "Request (ServersTest:test_x): 202 POST http://10.0.0.1:8774/v2.1/servers 1.301s",
        "GET http://10.0.0.1:8776/v2/p/volumes",
        "http://10.0.0.1:8776/v2/p/volumes returned with HTTP 200",
    ]
    messages = plain[:20] + facts + plain[20:] + [None]
    n = len(messages)
    ev = pl.DataFrame({
        "message": messages,
        "logger": ["tempest.lib.common.rest_client" if m and m.startswith("Request") else "nova.x"
                   for m in messages],
        "file": ["a.log"] * (n // 2) + ["b.log"] * (n - n // 2),
        "line_no": list(range(1, n + 1)),
        "ts_ns": [10**18 + i * 10**9 for i in range(n)],
        "request_id": ["req-1"] * n,
    }, schema_overrides={"message": pl.String})
    _same(ev)
    got = add_facts(ev)
    assert got.filter(pl.col("rpc_id").is_not_null()).height == 2
    assert got["took_s"].drop_nulls().to_list() == [12.3]
    # cinder's start and end lines pair (file b.log has no access line): method and duration
    ended = got.filter(pl.col("message").str.ends_with("returned with HTTP 200"))
    assert ended.select("http_method", "http_path", "http_status", "http_dur_s").row(0) == (
        "GET", "/v2/p/volumes", 200, 1.0)
