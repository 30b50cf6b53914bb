"""The native episode kernel (``stacklens_native.episodes``, ``native/src/episodes.rs``) gives
the episodes of the Python reference (``stacklens.trace.spans._assign``) on random sequences of
groups, RPC kinds and ids, markers and access lines, and the trace stage gives the same
tables with it and without it (``STACKLENS_NATIVE=0``) on the real devstack-gate job."""

from __future__ import annotations

import os

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

if os.environ.get("STACKLENS_REQUIRE_NATIVE") == "1":  # CI: a missing extension fails here
    import stacklens_native as _native
else:
    _native = pytest.importorskip("stacklens_native",
                                  reason="stacklens_native is not built (pip install .)")

if not hasattr(_native, "episodes"):
    if os.environ.get("STACKLENS_REQUIRE_NATIVE") == "1":
        raise AssertionError("stacklens_native has no episodes kernel: rebuild it (pip install .)")
    pytest.skip("stacklens_native is older than this checkout (pip install . rebuilds it)",
                allow_module_level=True)

from conftest import DEVSTACK, need  # noqa: E402

from stacklens.ingest.pipeline import ingest  # noqa: E402
from stacklens.trace import build_traces  # noqa: E402
from stacklens.trace.spans import _assign, _episode_numbers  # noqa: E402
from stacklens.vocab import RpcKind  # noqa: E402

KINDS = [None, RpcKind.RECV_CALL.value, RpcKind.RECV_CAST.value, RpcKind.REPLY_SEND.value,
         RpcKind.CALL.value, RpcKind.CAST.value, "reply_recv"]
row = st.tuples(
    st.integers(0, 3),  # group step: 0 stays in the group
    st.sampled_from(KINDS),
    st.sampled_from([None, "a" * 32, "b" * 32, "c" * 32]),
    st.booleans(),
    st.booleans(),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(row, max_size=60))
def test_native_kernel_equals_the_reference(rows):
    group, g = [], 0
    for step, *_ in rows:
        g += step
        group.append(g)
    nar = pl.DataFrame({
        "_g": pl.Series(group, dtype=pl.Int64),
        "_k": pl.Series([r[1] for r in rows], dtype=pl.String),
        "_r": pl.Series([r[2] for r in rows], dtype=pl.String),
        "_m": pl.Series([r[3] for r in rows], dtype=pl.Boolean),
        "_a": pl.Series([r[4] for r in rows], dtype=pl.Boolean),
    })
    want = _assign(*(nar[c].to_list() for c in ("_g", "_k", "_r", "_m", "_a")))
    assert _episode_numbers(nar).to_list() == want


def test_trace_tables_identical_without_the_kernel(monkeypatch):
    events = ingest([str(need(DEVSTACK))]).events
    native = build_traces(events)
    monkeypatch.setenv("STACKLENS_NATIVE", "0")
    python = build_traces(events)
    for name in ("spans", "flows", "traces", "breakdown", "phases"):
        assert_frame_equal(native[name], python[name])


def test_columns_of_the_null_type():
    # frames built without an RPC column's dtype (all values missing) take the kernel too
    nar = pl.DataFrame({"_g": [1, 1, 2], "_k": [None] * 3, "_r": [None] * 3,
                        "_m": [False, True, False], "_a": [False, False, True]})
    assert nar.schema["_k"] == pl.Null
    want = _assign(*(nar[c].to_list() for c in ("_g", "_k", "_r", "_m", "_a")))
    assert _episode_numbers(nar).to_list() == want == [1, 2, 3]
