"""A nova-api host that logs local time is named by a finding (issue 7, defect 8); UTC hosts
and plain queueing are not."""

from __future__ import annotations

import polars as pl

from stacklens.analyze.local_time import local_time_findings
from stacklens.store import RunStore

S = 1_000_000_000


def _store(tmp_path, shift_s: float, queue_s: list[float]) -> RunStore:
    n = len(queue_s)
    t0 = 1_767_000_000 * S
    submit = [t0 + i * S for i in range(n)]
    rid = [f"req-{i:08d}-0000-0000-0000-000000000000" for i in range(n)]
    st = RunStore(tmp_path / "run")
    st.write({
        "requests": pl.DataFrame({"name": [f"sl-{i}" for i in range(n)], "request_id": rid,
                                  "submit_ns": submit}),
        "traces": pl.DataFrame({"trace_id": rid, "request_id": rid}),
        "spans": pl.DataFrame({
            "trace_id": rid, "span_id": rid, "service": ["nova-api"] * n, "host": ["ctl"] * n,
            "start_ns": [s + int((q + shift_s) * S) for s, q in zip(submit, queue_s,
                                                                   strict=True)]}),
    })
    return st


def test_local_time_host_is_found(tmp_path):
    st = _store(tmp_path, 3600.0, [0.2, 5.0, 21.5, 40.0, 1.0])
    with st.connect() as con:
        f = local_time_findings(con)
    assert len(f) == 1 and f[0]["rule"] == "local_time"
    assert f[0]["evidence"] == {"host": "ctl", "offset_s": 3600, "pairs": 5}
    assert "--tz ctl=+01:00" in f[0]["text"] or "+01:00" in f[0]["text"]


def test_utc_and_queueing_are_not_local_time(tmp_path):
    for i, (shift, queue) in enumerate([(0.0, [0.2, 5.0, 21.5, 40.0, 1.0]),
                                        (300.0, [0.1, 0.2, 0.3, 0.4, 0.5])]):
        st = _store(tmp_path / str(i), shift, queue)
        with st.connect() as con:
            assert local_time_findings(con) == []
