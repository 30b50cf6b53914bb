"""The compute_resources lock and the delete path in the forecast model (issue 9, calibration
format 3): holds sampled by kind from oslo.concurrency lock lines, the resource tracker's
periodic task, the client seeing a server gone before its resource cleanup, and the
``pipeline`` load index. Small deterministic models with constant stage times: no timing."""

from __future__ import annotations

import polars as pl
import pytest

from stacklens.forecast.calibrate import LOCK_STAGES, STAGES, Calibration, load_model
from stacklens.forecast.dist import LoadDist, fit
from stacklens.forecast.knobs import Knobs
from stacklens.forecast.model import simulate
from stacklens.forecast.run import shipped_model
from stacklens.forecast.samples import alloc_loops, lock_kinds

S = 1_000_000_000
RT = "nova.compute.resource_tracker.ResourceTracker"


def _released(fn: str, held_s: float) -> str:
    # oslo.concurrency lockutils (2025.1): 'Lock "%s" "released" by "%s" :: held %0.3fs'
    return f'Lock "compute_resources" "released" by "{RT}.{fn}" :: held {held_s:0.3f}s'


def test_holds_are_sampled_by_kind_and_the_periodic_interval_measured():
    rows = [  # (host, request_id, released at s, holder, held s)
        ("fake-1", "req-c1", 10.0, "instance_claim", 2.2),
        ("fake-1", "req-d1", 20.0, "update_usage", 1.6),
        ("fake-1", "req-p1", 3.1, "_update_available_resource", 3.1),
        ("fake-1", "req-p1", 0.0, "clean_compute_node_cache", 0.0),
        ("fake-1", "req-p2", 63.0, "_update_available_resource", 3.0),
        ("fake-2", "req-p3", 5.0, "_update_available_resource", 3.2),
        ("fake-2", "req-p4", 66.0, "_update_available_resource", 3.1),
        ("fake-2", "req-x", 30.0, "update_usage", 1.5),  # a delete the tracer did not link
    ]
    held = pl.DataFrame({
        "host": [r[0] for r in rows], "request_id": [r[1] for r in rows],
        "ts_ns": [int(r[2] * S) for r in rows],
        "message": [_released(r[3], r[4]) for r in rows],
        "lock_held_s": [r[4] for r in rows]})
    held = held.with_columns(acq_ns=pl.col("ts_ns") - (pl.col("lock_held_s") * S)
                             .cast(pl.Int64),
                             # the claim made one conductor call under the lock (one poll)
                             base_s=pl.when(pl.col("request_id") == "req-c1")
                             .then(pl.col("lock_held_s") - 0.5).otherwise(pl.col("lock_held_s")))
    got: dict[str, list[float]] = {}

    def add(stage, t0, dur):
        got.setdefault(stage, []).extend(dur.to_list())

    gaps = lock_kinds(held, pl.DataFrame({"trace_id": ["req-c1"]}),
                       pl.DataFrame({"trace_id": ["req-d1"]}), add)
    assert got["claim_held"] == [pytest.approx(1.7)]  # without its call
    assert got["delete_held"] == [1.6]
    # one sample per periodic run (holds of one request id summed); the unlinked
    # update_usage is neither a claim, a delete nor the periodic task
    assert sorted(got["periodic_held"]) == [3.0, 3.1, 3.1, 3.2]
    assert sorted(round(g, 1) for g in gaps) == [60.0, 61.1]


def _cal(every_s: float = 0.0, **stages: float) -> Calibration:
    base = {s: 0.0 for s in STAGES}
    base.update(api=0.1, build=1.0, teardown=1.0)
    base.update(stages)
    return Calibration(stages={k: LoadDist.constant(v) for k, v in base.items()},
                       conductor_calls=0, periodic_interval_s=every_s)


def test_client_sees_the_server_gone_before_the_resource_cleanup():
    # nova/compute/manager.py _delete_instance saves the instance DELETED, then
    # _complete_deletion runs the resource tracker's update_usage under the lock
    cal = _cal(delete_held=30.0, claim_held=0.5)
    k = Knobs(computes=1, servers=2, concurrency=1, poll_interval_s=0.0)
    res = simulate(cal, k)
    first, second = sorted(res.boots, key=lambda b: b.submit_s)
    d = next(x for x in res.deletes if x.i == first.i)
    assert d.gone_seen_s < d.end_s - 29.0  # the client did not wait for the cleanup
    assert second.submit_s == d.gone_seen_s  # its slot went to the next boot at once
    # the next boot's claim queues behind the cleanup's hold of the same host's lock
    assert second.end_s - second.start_s > 25.0
    assert res.duration_s == max(x.end_s for x in res.deletes)


def test_periodic_holds_delay_claims_and_stop_with_the_storm():
    # one boot at a time: the periodic run (first at a phase within 5 s) lands between claims
    k = Knobs(computes=1, servers=6, concurrency=1, poll_interval_s=0.0, delete=False)
    plain = simulate(_cal(claim_held=1.0), k)
    periodic = simulate(_cal(claim_held=1.0, periodic_held=20.0, every_s=5.0), k)
    end = max(b.end_s for b in periodic.boots)
    assert end > max(b.end_s for b in plain.boots) + 15.0
    assert periodic.duration_s == end  # no periodic run after the last boot
    assert 0.0 < periodic.busy["compute_resources lock"] <= 1.0
    # one host: its lock is the pool
    assert periodic.busy["compute_resources lock, busiest host"] == \
        periodic.busy["compute_resources lock"]


def test_periodic_runs_on_idle_hosts_are_counted_without_events():
    # a sleeping periodic task (lock free, nobody waiting) catches up when a claim comes or
    # the storm ends: idle hosts' locks are busy held / (held + every) of the time, as if
    # every run had been simulated
    k = Knobs(computes=4, servers=1, concurrency=1, poll_interval_s=0.0, delete=False)
    res = simulate(_cal(build=600.0, periodic_held=2.0, every_s=10.0), k)
    assert res.duration_s > 600.0
    assert 2.0 / 12.0 - 0.02 < res.busy["compute_resources lock"] < 2.0 / 12.0 + 0.02


def test_pipeline_load_slows_the_control_plane_in_a_burst_only():
    # to_compute measured 0.1 s with one boot in the control plane, 4 s with 20
    loads = [1.0] * 30 + [20.0] * 30
    durs = [0.1] * 30 + [4.0] * 30
    stages = {s: LoadDist.constant(0.0) for s in STAGES}
    stages.update(api=LoadDist.constant(0.05), build=LoadDist.constant(1.0),
                  to_compute=fit(loads, durs))
    cal = Calibration(stages=stages, conductor_calls=0, load="pipeline")
    k = Knobs(computes=20, servers=20, concurrency=20, poll_interval_s=0.0, delete=False,
              api_workers=20)
    burst = simulate(cal, k)
    one = simulate(cal, k.replace(concurrency=1))

    def hop(b) -> float:
        return b.stages["between components"] + b.stages.get("nova-conductor", 0.0)

    assert sorted(hop(b) for b in burst.boots)[10] > 2.0  # twenty in the control plane
    assert max(hop(b) for b in one.boots) < 0.5
    # the transit stays at its idle-cloud time; the slowdown is the conductor's
    assert max(b.stages["between components"] for b in burst.boots) < 0.5


def test_shipped_model_has_the_holds_by_kind():
    cal = load_model(shipped_model())
    assert set(STAGES + LOCK_STAGES) <= set(cal.stages)
    assert cal.load == "pipeline" and 30.0 <= cal.periodic_interval_s <= 90.0
    # a hold is its own time plus its conductor calls, each waited for on oslo.messaging's
    # 0.5 s reply poll (format 4): the lab's update_usage 1.6 s, instance_claim 2.2 s
    assert (cal.rpc_poll_s, cal.calls_per_claim_hold, cal.calls_per_delete_hold) == (0.5, 4, 3)
    claim = cal.stages["claim_held"].sample(0.5, 1.0, 8.0) + 4 * 0.5
    delete = cal.stages["delete_held"].sample(0.5, 1.0, 8.0) + 3 * 0.5
    assert 1.0 < delete < claim < 4.0


def _alloc_spans(trace: str, reads: list[tuple[str, float, float]]) -> pl.DataFrame:
    return pl.DataFrame({"trace_id": [trace] * len(reads), "service": ["placement-api"] * len(reads),
                         "operation": [r[0] for r in reads],
                         "start_ns": [int(r[1] * S) for r in reads],
                         "end_ns": [int(r[2] * S) for r in reads]})


def test_the_allocation_read_of_a_hold_is_measured_per_request():
    # nova 2025.1 _update_to_placement -> get_allocations_for_provider_tree under the lock:
    # GET /resource_providers/{rp}/allocations, then GET /allocations/{consumer} per consumer
    held = pl.DataFrame({"key": [0, 1, 2], "request_id": ["req-c1", "req-c2", "req-p1"],
                         "acq_ns": [10 * S, 20 * S, 30 * S], "ts_ns": [13 * S, 22 * S, 33 * S]})
    spans = pl.concat([
        _alloc_spans("req-c1", [
            ("GET /allocations/aaaaaaaa-0000-0000-0000-000000000001", 10.2, 10.3),  # own, before
            ("GET /resource_providers/rp-1/allocations", 11.0, 11.1),
            ("GET /allocations/aaaaaaaa-0000-0000-0000-000000000001", 11.2, 11.3),
            ("GET /allocations/aaaaaaaa-0000-0000-0000-000000000002", 11.4, 11.6),
            ("GET /allocations/aaaaaaaa-0000-0000-0000-000000000003", 11.7, 11.9),
            ("GET /allocations/aaaaaaaa-0000-0000-0000-000000000004", 13.5, 13.6)]),  # after
        _alloc_spans("req-c2", [("GET /resource_providers/rp-1/allocations", 20.5, 20.6)]),
        # a periodic task's own request id: no provider read linked, left out
        _alloc_spans("req-other", [("GET /resource_providers/rp-1/allocations", 31.0, 31.1)]),
    ])
    got = alloc_loops(held, spans).sort("key")
    assert got["key"].to_list() == [0, 1]
    assert got["n_reads"].to_list() == [3, 0]  # an empty provider: the provider read only
    assert got["loop_s"].to_list() == [pytest.approx(0.9), 0.0]


def test_holds_grow_with_the_allocations_the_scheduler_made_on_the_host():
    # three boots scheduled onto one host before the first claim (compute_pre 1 s): each
    # claim reads the provider plus three allocations, claimed or not (0.4 s); once they are
    # deleted, nothing is left to read
    k = Knobs(computes=1, servers=3, concurrency=3, poll_interval_s=0.0, delete=False,
              api_workers=3)
    plain = simulate(_cal(claim_held=0.0, compute_pre=1.0), k)
    read = simulate(_cal(claim_held=0.0, compute_pre=1.0, alloc_read=0.1), k)
    held = read.busy["compute_resources lock"] * read.duration_s
    assert held == pytest.approx(3 * 0.4)
    assert plain.busy["compute_resources lock"] == 0.0
    deleted = simulate(_cal(claim_held=0.0, compute_pre=1.0, alloc_read=0.1, delete_held=0.0),
                       k.replace(delete=True))
    # claims 3 x 0.4 s, then the deletes' update_usage: 3, 2 and 1 allocations left at most
    extra = deleted.busy["compute_resources lock"] * deleted.duration_s - 3 * 0.4
    assert 3 * 0.2 - 1e-9 <= extra <= 3 * 0.4 + 1e-9


def test_the_calls_before_the_build_are_made_on_the_conductor():
    # nova 2025.1 build_and_run_instance: object_class_action_versions, then the instance's
    # save ("Starting instance..."), before the build phase: each an RPC call to the
    # conductor whose caller resumes at its next 0.5 s reply poll (format 8: ``pre_calls``)
    import dataclasses

    k = Knobs(computes=1, servers=1, concurrency=1, poll_interval_s=0.0, delete=False)
    base = dataclasses.replace(_cal(conductor_call=0.02), rpc_poll_s=0.5)
    none, two = simulate(base, k), simulate(dataclasses.replace(base, pre_calls=2), k)
    (b0,), (b2,) = none.boots, two.boots
    assert (b2.end_s - b2.start_s) - (b0.end_s - b0.start_s) == pytest.approx(2 * 0.5)
    assert b2.stages["nova-conductor"] - b0.stages.get("nova-conductor", 0.0) == pytest.approx(0.04)
    assert b2.stages["nova-compute"] == pytest.approx(b0.stages["nova-compute"])
    back = Calibration.from_json(dataclasses.replace(base, pre_calls=2).to_json())
    assert back.pre_calls == 2
    doc = base.to_json()
    del doc["pre_calls"]
    assert Calibration.from_json(doc).pre_calls == 0  # a format-7 model keeps them in its stage
