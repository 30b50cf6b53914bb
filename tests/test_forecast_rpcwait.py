"""oslo.messaging's reply polling in calibration and model (stacklens.forecast.rpcwait): the
poll is read from nova-compute's CALL lines, a caller's wait is the next multiple of 0.5 s,
the calls under a lock hold are taken out of its time, and a model that polls holds the
``compute_resources`` lock longer."""

from __future__ import annotations

import dataclasses
import statistics

import polars as pl
import pytest
import simpy

from stacklens.forecast.model import _Cloud, simulate, summary
from stacklens.forecast.rpcwait import caller_wait, calls_within, detect_reply_poll
from stacklens.forecast.run import knobs_for, resolve_model

MS = 1_000_000


def _compute_lines(waits_s: list[float]) -> pl.DataFrame:
    """nova-compute lines of one request: per call, ``CALL msg_id``, its own two lines, then
    the caller's next line ``waits_s`` later (oslo.messaging 14.8's format)."""
    rows, t = [], 0
    for i, w in enumerate(waits_s):
        for msg in (f"CALL msg_id: {i:032x} exchange 'nova' topic 'conductor'",
                    "Sending topic to nova with routing_key conductor",
                    f"Expecting reply to msg {i:032x} in queue reply_x"):
            rows.append((t, msg))
        t += int(w * 1000) * MS
        rows.append((t, "[instance: x] Claim successful on node fake-1"))
        t += 5 * MS
    return pl.DataFrame({"ts_ns": [r[0] for r in rows], "message": [r[1] for r in rows],
                         "service": "nova-compute", "request_id": "req-1", "pid": 7})


def test_polling_callers_are_detected_from_their_waits():
    polled = _compute_lines([0.503, 0.51, 1.004, 0.506] * 10)
    assert detect_reply_poll(polled)[0] == 0.5
    blocking = _compute_lines([0.031, 0.12, 0.262, 0.077, 0.4] * 10)
    poll, share, n = detect_reply_poll(blocking)
    assert (poll, n) == (0.0, 50) and share < 0.1
    # too few calls (DEBUG off): no claim either way
    assert detect_reply_poll(_compute_lines([0.5] * 5)) == (0.0, 0.0, 5)


def test_caller_wait_is_the_next_poll():
    r = pl.Series([0.01, 0.5, 0.51, 1.2])
    got = pl.select(caller_wait(pl.lit(r), 0.5)).to_series().to_list()
    assert got == pytest.approx([0.5, 0.5, 1.0, 1.5])
    assert pl.select(caller_wait(pl.lit(r), 0.0)).to_series().to_list() == r.to_list()


def test_calls_within_a_window():
    calls = pl.DataFrame({"trace_id": ["a", "a", "a", "b"], "call_id": [0, 1, 2, 3],
                          "start_ns": [100, 300, 900, 100], "end_ns": [200, 400, 1000, 200]})
    win = pl.DataFrame({"trace_id": ["a"], "key": [7], "w0_ns": [50], "w1_ns": [500]})
    got = calls_within(calls, win, 0.5)
    assert got["call_id"].to_list() == [0, 1]
    assert got["wait_s"].to_list() == [0.5, 0.5]


def test_reply_wait_resumes_at_the_next_poll():
    cal = dataclasses.replace(resolve_model(None)[0], rpc_poll_s=0.5)
    env = simpy.Environment()
    cloud = _Cloud(env, cal, knobs_for(cal))
    seen = []

    def caller(reply_s: float):
        t0 = env.now
        yield env.timeout(reply_s)
        w = yield from cloud.reply_wait(t0)
        seen.append((round(env.now - t0, 9), round(w, 9)))

    for r in (0.2, 0.7, 1.0):
        env.process(caller(r))
    env.run()
    assert sorted(seen) == [(0.5, 0.3), (1.0, 0.0), (1.0, 0.3)]


def test_a_polling_model_holds_the_lock_longer():
    base = dataclasses.replace(resolve_model(None)[0], rpc_poll_s=0.0, calls_per_claim_hold=0)
    polled = dataclasses.replace(base, rpc_poll_s=0.5, calls_per_claim_hold=4)
    k = knobs_for(base, computes=4, servers=40, concurrency=20)
    out = {}
    for name, cal in (("base", base), ("polled", polled)):
        res = [simulate(cal, k.replace(seed=s)) for s in (1, 2, 3)]
        out[name] = (statistics.median(summary(r)["create_p50_s"] for r in res),
                     statistics.median(r.busy["compute_resources lock"] * r.duration_s
                                       for r in res))  # lock-seconds per host
    assert out["polled"][0] > out["base"][0]
    assert out["polled"][1] > out["base"][1]
