"""Samples of one traced run for calibration: per stage of the boot workflow, (load, seconds,
start ns) of each occurrence, and what else one run tells the model (conductor calls per boot
and per lock hold, the RPC reply poll, the ``compute_resources`` holds by kind, the services'
CPU per sample interval, measured headline numbers). The stages and how each is measured:
:mod:`stacklens.forecast.calibrate`; :func:`stacklens.forecast.calibrate.calibrate` pools
these over runs and fits the model.
"""

from __future__ import annotations

import bisect
from typing import Any

import polars as pl

from stacklens.errors import UserError
from stacklens.forecast.cpu import (
    host_cpu_seconds,
    placement_calls,
    process_counts,
    run_cpu_seconds,
)
from stacklens.forecast.demand import RegressionRows, interval_rows
from stacklens.forecast.rpcwait import caller_wait, calls_within, detect_reply_poll
from stacklens.store import RunStore

__all__ = [
    "ALLOC_STAGES", "HOST_STAGES", "HOST_UPDATE_LINE", "LOCK_STAGES", "OPTIONAL_STAGES",
    "PERIODIC_HOLDERS", "STAGES", "alloc_loops", "host_loops", "lock_kinds", "run_samples",
]

STAGES = ("api", "to_conductor", "conductor", "scheduler", "to_compute", "compute_pre",
          "conductor_call", "build", "finish", "delete_api", "delete_to_compute", "teardown",
          "cleanup", "delete_rest", "lock_held")
#: Stages a version-3 model adds; a model without them draws every hold from ``lock_held``
#: and simulates no periodic holds.
LOCK_STAGES = ("claim_held", "delete_held", "periodic_held")
#: Stages a version-5 model adds: ``scheduler_host``, seconds per host of the scheduler's
#: refresh of every host's state in one request (:func:`host_loops`); a model without it
#: grows the scheduler's time with the hosts by the ``scheduler_per_host_s`` knob only.
HOST_STAGES = ("scheduler_host",)
#: Stages a version-6 model adds: ``alloc_read``, seconds per placement request of the
#: resource tracker's read of its provider's allocations under a claim's or a delete's
#: ``compute_resources`` hold (:func:`alloc_loops`); ``claim_held`` and ``delete_held`` are
#: then the holds without that loop. A model without it draws the holds whole.
ALLOC_STAGES = ("alloc_read",)
#: Stages a model may lack (older formats, runs that do not show them).
OPTIONAL_STAGES = LOCK_STAGES + HOST_STAGES + ALLOC_STAGES
#: Stages run by the controller's services and the RPC between them (nova-api,
#: nova-conductor, nova-scheduler, placement-api, the broker): a calibration keeps, per load
#: bin, the builds in flight at their samples' starts, and the model scales their times by
#: the builds it has in flight against those (:meth:`~stacklens.forecast.dist.LoadDist.
#: contention`): a bigger cloud runs more builds at the same ``pipeline``, whose conductor
#: calls and placement reads share the controller with these stages. A compute's own stages
#: run on its host, which a bigger cloud does not share more.
CONTROLLER_STAGES = ("api", "to_conductor", "conductor", "scheduler", "scheduler_host",
                     "to_compute", "conductor_call", "alloc_read", "delete_api",
                     "delete_to_compute")
#: placement-api span names of the resource tracker's allocation read (nova 2025.1
#: ``SchedulerReportClient.get_allocations_for_provider_tree``): the provider's allocations,
#: then one request per consumer found there.
_RP_ALLOCS = r"^GET /resource_providers/[^/?]+/allocations"
_CONSUMER_ALLOCS = r"^GET /allocations/[^/?]+"
#: nova.scheduler.host_manager ``HostState._locked_update``'s DEBUG line, one per host per
#: scheduling request (``_get_host_states``): the same words in the ``update(compute_node,
#: service)`` form (Mitaka's devstack log in the shared data) and in 2025.1's ``update(compute,
#: service, aggregates, inst_dict)``. Havana's and Icehouse's ``update_from_compute_node``
#: logs nothing there: their runs calibrate no ``scheduler_host`` (the knob alone).
HOST_UPDATE_LINE = "Update host state from compute node"
#: Holders of the ``compute_resources`` lock that are the resource tracker's periodic task
#: (``nova/compute/resource_tracker.py``; named in oslo.concurrency's "acquired by" lines).
PERIODIC_HOLDERS = ("_update_available_resource", "clean_compute_node_cache")


def _in_flight(starts: list[int], ends: list[int], at: list[int],
               waits: list[tuple[int, int]] | None = None) -> list[int]:
    """Intervals in flight (start <= t < end) at each time of ``at`` (all ns), minus the
    ``waits`` intervals in progress then (at least 0)."""
    s, e = sorted(starts), sorted(ends)
    ws, we = sorted(w[0] for w in waits or []), sorted(w[1] for w in waits or [])
    out = []
    for t in at:
        n = bisect.bisect_right(s, t) - bisect.bisect_right(e, t)
        n -= bisect.bisect_right(ws, t) - bisect.bisect_right(we, t)
        out.append(max(0, n))
    return out


def _first(spans: pl.DataFrame, service: str, op_prefix: str | None = None) -> pl.DataFrame:
    f = pl.col("service") == service
    if op_prefix:
        f = f & pl.col("operation").str.starts_with(op_prefix)
    return (spans.filter(f).sort("start_ns").group_by("trace_id", maintain_order=True)
            .agg(pl.col("start_ns").first().alias(f"{service}_s"),
                 pl.col("end_ns").first().alias(f"{service}_e"),
                 pl.col("host").first().alias(f"{service}_host")))


def _load_intervals(store: RunStore, creates: pl.DataFrame,
                    load: str) -> tuple[list[int], list[int]]:
    """(starts, ends) in ns of what counts as load: the client's slots (``client``: from the
    create's submit to the server gone, or its last client time; the ``requests`` table of
    ``stacklens run``) or the server's creates in flight (``server``: ``traces``)."""
    if load in ("client", "active") and store.has("requests"):
        rq = store.read("requests").filter(pl.col("submit_ns").is_not_null())
        end = pl.coalesce("gone_ns", "delete_accepted_ns", "delete_ns", "active_ns",
                          "accepted_ns")
        rq = rq.filter(end.is_not_null()).select("submit_ns", end.alias("end_ns"))
        if rq.height:
            return rq["submit_ns"].to_list(), rq["end_ns"].to_list()
    return creates["start_ns"].to_list(), creates["end_ns"].to_list()


def host_loops(events: pl.DataFrame, spans: pl.DataFrame) -> pl.DataFrame:
    """The scheduler's refresh of every host's state from the database in each scheduling
    request (nova ``HostManager._get_host_states``, the per-host work the field notes name in
    "scheduler saturation"): one :data:`HOST_UPDATE_LINE` per host inside the request's
    ``call scheduler`` span. Columns: ``trace_id`` (str), ``span_start_ns`` (the span's start,
    Int64), ``first_ns`` (the first line, Int64), ``n_hosts`` (lines, UInt32),
    ``per_host_s`` (Float64: last minus first line over ``n_hosts - 1``, the time one host
    takes) and ``loop_s`` (``n_hosts * per_host_s``: the loop, counting the first host's
    share before its line). Requests with fewer than two lines (one host, DEBUG off) are
    left out: their loop is unknown, not zero."""
    sp = spans.filter((pl.col("service") == "nova-scheduler")
                      & (pl.col("operation") == "call scheduler")
                      & pl.col("request_id").is_not_null()).select(
        "trace_id", "request_id", pl.col("start_ns").alias("span_start_ns"), "end_ns")
    lines = events.filter((pl.col("service") == "nova-scheduler")
                          & pl.col("message").str.starts_with(HOST_UPDATE_LINE)
                          ).select("request_id", "ts_ns")
    got = (sp.join(lines, on="request_id")
           .filter(pl.col("ts_ns").is_between(pl.col("span_start_ns"), pl.col("end_ns")))
           .group_by("trace_id", "span_start_ns")
           .agg(pl.col("ts_ns").min().alias("first_ns"), pl.col("ts_ns").max().alias("last_ns"),
                pl.len().alias("n_hosts"))
           .filter(pl.col("n_hosts") >= 2))
    per = (pl.col("last_ns") - pl.col("first_ns")) / 1e9 / (pl.col("n_hosts") - 1)
    return got.select("trace_id", "span_start_ns", "first_ns", "n_hosts",
                      per.alias("per_host_s"), (per * pl.col("n_hosts")).alias("loop_s"))


def alloc_loops(held: pl.DataFrame, spans: pl.DataFrame) -> pl.DataFrame:
    """The resource tracker's read of its provider's allocations inside each
    ``compute_resources`` hold. nova 2025.1's ``ResourceTracker._update_to_placement`` (every
    ``_update``: the claim, ``update_usage``, the periodic task; under the lock) calls
    ``get_allocations_for_provider_tree``: ``GET /resource_providers/{uuid}/allocations``,
    then ``GET /allocations/{consumer}`` for every consumer found there, including the boots
    the scheduler has claimed on the host and the compute has not (yet). So a hold grows with
    the host's allocations, not its instances. ``held``: lock events with ``key``,
    ``request_id`` (the trace), ``acq_ns`` and ``ts_ns`` (the release); ``spans``: the run's
    spans (placement-api's carry the caller's trace). Columns: ``key`` (the hold's), ``n_reads``
    (UInt32: the consumers read, so the provider's allocations), ``loop_s`` (Float64: from
    the provider read's start to the last consumer read's end) and ``l0_ns`` (Int64: the
    provider read's start). Holds whose trace shows no provider read (the periodic task's own
    request ids, INFO lines missing) are left out."""
    sp = spans.filter(pl.col("service") == "placement-api").select(
        pl.col("trace_id").alias("request_id"), "operation", "start_ns", "end_ns")
    h = held.select("key", "request_id", "acq_ns", "ts_ns")
    first = (h.join(sp.filter(pl.col("operation").str.contains(_RP_ALLOCS)), on="request_id")
             .filter(pl.col("start_ns").is_between(pl.col("acq_ns"), pl.col("ts_ns")))
             .group_by("key").agg(pl.col("start_ns").min().alias("l0_ns")))
    reads = (h.join(first, on="key")
             .join(sp.filter(pl.col("operation").str.contains(_CONSUMER_ALLOCS)), on="request_id")
             .filter((pl.col("start_ns") >= pl.col("l0_ns")) & (pl.col("end_ns") <= pl.col("ts_ns")))
             .group_by("key").agg(pl.len().alias("n_reads"), pl.col("end_ns").max()))
    out = first.join(reads, on="key", how="left").with_columns(
        pl.col("n_reads").fill_null(0).cast(pl.UInt32),
        loop_s=(pl.col("end_ns").fill_null(pl.col("l0_ns")) - pl.col("l0_ns")) / 1e9)
    return out.select("key", "n_reads", "loop_s", "l0_ns")


def run_samples(store: RunStore, load: str = "pipeline",
                stage_load: dict[str, str] | None = None) -> dict[str, Any]:
    """Samples per stage from one traced run folder: ``(load, seconds, start ns, builds)``,
    each stage's load by its index in ``stage_load``, else ``load``; ``builds`` the builds in
    their build phase at the sample's start (the ``work`` index less ``pipeline``)."""
    tr = store.read("traces").filter(pl.col("outcome").is_in(["success", "retried"]))
    spans = store.read("spans")
    ph = store.read("phases")
    creates = tr.filter(pl.col("operation") == "server.create")
    deletes = tr.filter(pl.col("operation") == "server.delete")
    if creates.height == 0:
        raise UserError(f"{store.path}: no successful server.create traces to calibrate from")
    stage_load = stage_load or {}
    out: dict[str, list[tuple[float, float, int, float]]] = {
        s: [] for s in STAGES + OPTIONAL_STAGES}
    by_index: dict[str, tuple[list[int], list[int], list[tuple[int, int]]]] = {}

    def add(stage: str, t0: pl.Series, dur_s: pl.Series) -> None:
        ok = [(a, d) for a, d in zip(t0.to_list(), dur_s.to_list(), strict=True)
              if a is not None and d is not None]
        at = [a for a, _ in ok]

        def count(index: str) -> list[int]:  # by_index is filled below, before use
            return _in_flight(*by_index[index][:2], at, by_index[index][2])

        index = stage_load.get(stage, load)
        loads = count(index)
        # the builds in their build phase then (``work`` less ``pipeline``)
        pipe = loads if index == "pipeline" else count("pipeline")
        building = [max(0, w - p) for w, p in zip(count("work"), pipe, strict=True)]
        out[stage].extend((float(x), float(d), int(a), float(b))
                          for x, (a, d), b in zip(loads, ok, building, strict=True))

    c = creates.select("trace_id", "start_ns", "end_ns")
    for svc, op in (("nova-api", "POST"), ("nova-conductor", "cast conductor"),
                    ("nova-scheduler", "call scheduler"), ("nova-compute", None)):
        c = c.join(_first(spans.filter(pl.col("trace_id").is_in(c["trace_id"].implode())),
                          svc, op), on="trace_id", how="left")
    events = store.read("events")
    poll_s, poll_share, poll_n = detect_reply_poll(events)
    calls_all = (spans.filter((pl.col("service") == "nova-conductor")
                              & (pl.col("operation") == "call conductor"))
                 .select("trace_id", "start_ns", "end_ns").with_row_index("call_id"))
    calls = calls_all.filter(pl.col("trace_id").is_in(c["trace_id"].implode()))
    build = ph.filter(pl.col("phase") == "build").select(
        "trace_id", pl.col("start_ns").alias("b_s"), pl.col("end_ns").alias("b_e"))
    c = c.join(build, on="trace_id", how="left")
    loops = host_loops(events, spans).filter(pl.col("trace_id").is_in(c["trace_id"].implode()))
    c = c.join(loops.select("trace_id", pl.col("span_start_ns").alias("nova-scheduler_s"),
                            "loop_s"), on=["trace_id", "nova-scheduler_s"], how="left")
    ev = events.filter(pl.col("lock_name") == "compute_resources")
    lk = ev.group_by(pl.col("request_id").alias("trace_id")).agg(
        (pl.col("lock_waited_s").fill_null(0.0).sum()
         + pl.col("lock_held_s").fill_null(0.0).sum()).alias("lock_s"),
        pl.col("lock_held_s").is_not_null().sum().alias("n_locks"))
    # each hold without the conductor calls made under it (their callers' waits: rpcwait)
    held = ev.filter(pl.col("lock_held_s").is_not_null()).with_row_index("key").with_columns(
        acq_ns=pl.col("ts_ns") - (pl.col("lock_held_s") * 1e9).cast(pl.Int64))
    in_holds = calls_within(calls_all, held.select(
        pl.col("request_id").alias("trace_id"), "key", pl.col("acq_ns").alias("w0_ns"),
        pl.col("ts_ns").alias("w1_ns")), poll_s)
    held = held.join(in_holds.group_by("key").agg(pl.len().alias("hold_calls"),
                                                  pl.col("wait_s").sum()),
                     on="key", how="left").with_columns(
        pl.col("hold_calls").fill_null(0),
        own_s=(pl.col("lock_held_s") - pl.col("wait_s").fill_null(0.0)).clip(lower_bound=0.0))
    # ... and without its read of the provider's allocations (drawn per read: alloc_read),
    # where the read went on to the consumers: a release whose holds read the provider alone
    # shows no growth with the allocations, and keeps that request in its holds
    loops_rt = alloc_loops(held, spans).filter(pl.col("n_reads") > 0)
    held = held.join(loops_rt, on="key", how="left").with_columns(
        base_s=(pl.col("own_s") - pl.col("loop_s").fill_null(0.0)).clip(lower_bound=0.0))
    # the build's own calls: in its phase, not under a hold
    in_build = calls_within(calls_all.filter(~pl.col("call_id").is_in(
        in_holds["call_id"].implode())), build.select(
        "trace_id", pl.col("trace_id").alias("key"), pl.col("b_s").alias("w0_ns"),
        pl.col("b_e").alias("w1_ns")), poll_s)
    inside = in_build.group_by(pl.col("key").alias("trace_id")).agg(
        pl.len().alias("n_calls"), pl.col("wait_s").sum().alias("calls_s"))
    # the calls before the build phase, from the compute's receipt of the cast (nova 2025.1
    # build_and_run_instance: the instance's saves before _do_build_and_run_instance's work)
    pre_w = c.filter(pl.col("nova-compute_s").is_not_null() & pl.col("b_s").is_not_null())
    in_pre = calls_within(calls_all, pre_w.select(
        "trace_id", pl.col("trace_id").alias("key"), pl.col("nova-compute_s").alias("w0_ns"),
        pl.col("b_s").alias("w1_ns")), poll_s).group_by(pl.col("key").alias("trace_id")).agg(
        pl.len().alias("n_pre_calls"), pl.col("wait_s").sum().alias("pre_calls_s"))
    c = (c.join(inside, on="trace_id", how="left").join(lk, on="trace_id", how="left")
         .join(in_pre, on="trace_id", how="left"))
    c = c.with_columns(pl.col("n_calls").fill_null(0), pl.col("calls_s").fill_null(0.0),
                       pl.col("lock_s").fill_null(0.0), pl.col("n_locks").fill_null(0),
                       pl.col("n_pre_calls").fill_null(0), pl.col("pre_calls_s").fill_null(0.0))
    ns = 1e9
    api_s, api_e = pl.col("nova-api_s"), pl.col("nova-api_e")
    cd_s = pl.col("nova-conductor_s")
    sc_s, sc_e = pl.col("nova-scheduler_s"), pl.col("nova-scheduler_e")
    cp_s = pl.col("nova-compute_s")
    d = c.select(
        "trace_id", "nova-api_s", "nova-api_e", "nova-conductor_s", "nova-scheduler_s",
        "nova-scheduler_e", "nova-compute_s", "b_s", "b_e", "nova-compute_host", "n_calls", "n_locks",
        "n_pre_calls",
        api=(api_e - api_s) / ns, to_conductor=(cd_s - api_e) / ns,
        conductor=(sc_s - cd_s) / ns,
        scheduler=((sc_e - sc_s) / ns - pl.col("loop_s").fill_null(0.0)).clip(lower_bound=0.0),
        to_compute=((cp_s - sc_e) / ns - (caller_wait((sc_e - sc_s) / ns, poll_s)
                                           - (sc_e - sc_s) / ns)).clip(lower_bound=0.0),
        compute_pre=((pl.col("b_s") - cp_s) / ns - pl.col("pre_calls_s")).clip(lower_bound=0.0),
        build=((pl.col("b_e") - pl.col("b_s")) / ns - pl.col("calls_s")
               - pl.col("lock_s")).clip(lower_bound=0.0),
        finish=(pl.col("end_ns") - pl.col("b_e")) / ns)
    def intervals(index: str) -> tuple[list[int], list[int], list[tuple[int, int]]]:
        """(starts, ends, waits) in ns of what load ``index`` counts (module docstring of
        :mod:`stacklens.forecast.calibrate`); ``waits`` are taken off while in progress."""
        starts, ends = _load_intervals(store, creates, index)
        waits: list[tuple[int, int]] = []
        if index in ("pipeline", "work"):  # boots between the API and a compute
            api_started = d.filter(pl.col("nova-api_s").is_not_null())
            starts = api_started["nova-api_s"].to_list()
            ends = api_started.select(pl.coalesce("nova-compute_s", "b_s", "nova-api_e")
                                      ).to_series().to_list()
        if index == "work":  # and the builds in their build phase (a slot taken, not done)
            built = d.filter(pl.col("b_s").is_not_null() & pl.col("b_e").is_not_null())
            starts += built["b_s"].to_list()
            ends += built["b_e"].to_list()
            # less their waits for the compute_resources lock (queued behind other claims)
            lw = ev.filter((pl.col("lock_waited_s") > 0)
                           & pl.col("request_id").is_in(built["trace_id"].implode()))
            waits += [(t - int(w * 1e9), t)
                      for t, w in lw.select("ts_ns", "lock_waited_s").rows()]
        if index == "active":  # queued at a compute, not working
            lw = ev.filter(pl.col("lock_waited_s") > 0)
            waits += [(t - int(w * 1e9), t)
                      for t, w in lw.select("ts_ns", "lock_waited_s").rows()]
            sw = d.filter(pl.col("b_s") > pl.col("nova-compute_s"))
            waits += [(a, b) for a, b in sw.select("nova-compute_s", "b_s").rows()]
        return starts, ends, waits

    by_index.update({i: intervals(i)
                     for i in {load, *stage_load.values(), "pipeline", "work"}})
    starts, ends, _ = by_index[load]
    # builds that found a free build slot: fewer than 10 others building on the host
    rows = d.filter(pl.col("b_s").is_not_null()).select(
        "trace_id", "nova-compute_host", "nova-compute_s", "b_e").rows()
    free = set()
    for tid, host, t, _ in rows:
        busy = sum(1 for _, h2, s2, e2 in rows if h2 == host and s2 < t < e2)
        if busy < 10:
            free.add(tid)
    for stage, t0 in (("api", "nova-api_s"), ("to_conductor", "nova-api_e"),
                      ("conductor", "nova-conductor_s"), ("scheduler", "nova-scheduler_s"),
                      ("to_compute", "nova-scheduler_e"), ("build", "b_s"), ("finish", "b_e")):
        x = d.filter(pl.col(stage).is_not_null() & (pl.col(stage) >= 0))
        add(stage, x[t0], x[stage])
    x = d.filter(pl.col("trace_id").is_in(list(free)) & pl.col("compute_pre").is_not_null())
    add("compute_pre", x["nova-compute_s"], x["compute_pre"])
    add("conductor_call", calls["start_ns"], (calls["end_ns"] - calls["start_ns"]) / ns)
    add("scheduler_host", loops["first_ns"], loops["per_host_s"])
    add("lock_held", held["acq_ns"], held["own_s"])
    add("alloc_read", loops_rt["l0_ns"], loops_rt["loop_s"] / (loops_rt["n_reads"] + 1))
    periodic_gaps = lock_kinds(held, creates, deletes, add)
    # delete path
    dl = deletes.select("trace_id", "start_ns", "end_ns", "dur_s")
    for svc, op in (("nova-api", "DELETE"), ("nova-compute", None)):
        dl = dl.join(_first(spans.filter(pl.col("trace_id").is_in(dl["trace_id"].implode())),
                            svc, op), on="trace_id", how="left")
    for p in ("teardown", "resource_cleanup"):
        dl = dl.join(ph.filter(pl.col("phase") == p).select(
            "trace_id", pl.col("dur_s").alias(p)), on="trace_id", how="left")
    dl = dl.join(lk, on="trace_id", how="left").with_columns(
        pl.col("lock_s").fill_null(0.0), pl.col("n_locks").fill_null(0))
    dl = dl.with_columns(
        delete_api=(pl.col("nova-api_e") - pl.col("nova-api_s")) / ns,
        delete_to_compute=(pl.col("nova-compute_s") - pl.col("nova-api_e")) / ns,
        teardown=pl.col("teardown").fill_null(0.0),
        cleanup=(pl.col("resource_cleanup").fill_null(0.0) - pl.col("lock_s"))
        .clip(lower_bound=0.0))
    dl = dl.with_columns(delete_rest=pl.col("dur_s") - pl.col("delete_api").fill_null(0.0)
                         - pl.col("delete_to_compute").fill_null(0.0) - pl.col("teardown")
                         - pl.col("resource_cleanup").fill_null(0.0))
    for stage in ("delete_api", "delete_to_compute", "teardown", "cleanup", "delete_rest"):
        x = dl.filter(pl.col(stage).is_not_null())
        add(stage, x["start_ns"], x[stage].clip(lower_bound=0.0))
    bd = store.read("breakdown").join(
        creates.select("trace_id", "dur_s"), on="trace_id")
    comp = bd.group_by("component").agg(pl.col("dur_s").median().alias("p50_s"))
    sched_bd = bd.filter(pl.col("component").is_in(["nova-scheduler", "placement-api"]))
    # placement's share of the scheduler's time outside the host loop (the loop is its own)
    share = sched_bd.group_by("trace_id").agg(
        pl.col("dur_s").filter(pl.col("component") == "placement-api").sum().alias("p"),
        pl.col("dur_s").sum().alias("all")).join(
        loops.group_by("trace_id").agg(pl.col("loop_s").sum()), on="trace_id", how="left"
    ).select((pl.col("p") / (pl.col("all") - pl.col("loop_s").fill_null(0.0)))
             .clip(0.0, 1.0).alias("share"))["share"].drop_nans().drop_nulls()
    dur = creates["dur_s"]
    window_s = (max(ends) - min(starts)) / 1e9
    w0 = int(creates["start_ns"].min())  # type: ignore[arg-type]
    w1 = int(pl.concat([creates["end_ns"], deletes["end_ns"]]).max())  # type: ignore[arg-type]
    cpu_rows: RegressionRows | None = None
    cpu = host_cpu = None
    procs: dict[str, int] = {}
    if store.has("resource_samples"):
        rsamp = store.read("resource_samples")
        cpu = run_cpu_seconds(rsamp, w0, w1)
        host_cpu = host_cpu_seconds(rsamp, w0, w1)
        cpu_rows = interval_rows(rsamp, {k: [(p[2], p[1]) for p in v] for k, v in out.items()},
                                 w0, w1)
        procs = process_counts(rsamp)
    return {
        "samples": out,
        "cpu_s": cpu, "host_cpu_s": host_cpu, "cpu_window_s": (w1 - w0) / 1e9,
        "cpu_rows": cpu_rows,
        "processes": procs,
        "placement_calls": placement_calls(events, w0, w1),
        "reply_poll": (poll_s, poll_share, poll_n),
        "hold_calls": {kind: held.filter(pl.col("request_id").is_in(ids["trace_id"].implode()))
                       ["hold_calls"].to_list()
                       for kind, ids in (("claim", creates), ("delete", deletes))},
        "n_calls": d.filter(pl.col("b_s").is_not_null())["n_calls"].to_list(),
        "n_pre_calls": d.filter(pl.col("b_s").is_not_null())["n_pre_calls"].to_list(),
        "placement_share": share.to_list(),
        "n_locks_build": d.filter(pl.col("b_s").is_not_null())["n_locks"].to_list(),
        "n_locks_delete": dl["n_locks"].to_list(),
        "periodic_gaps_s": periodic_gaps,
        "measured": {
            "creates": creates.height,
            "create_p50_s": float(dur.quantile(0.5, "linear") or 0.0),
            "create_p95_s": float(dur.quantile(0.95, "linear") or 0.0),
            "delete_p50_s": float(deletes["dur_s"].quantile(0.5, "linear") or 0.0)
            if deletes.height else None,
            "throughput_per_min": creates.height / window_s * 60 if window_s > 0 else None,
            "component_p50_s": {r[0]: r[1] for r in comp.sort("component").rows()},
            "hosts": dict(sorted(d.group_by("nova-compute_host").len().rows(),
                                 key=lambda r: str(r[0]))),
        },
    }


def lock_kinds(held: pl.DataFrame, creates: pl.DataFrame, deletes: pl.DataFrame,
                add: Any) -> list[float]:
    """Sample the ``compute_resources`` holds by kind (module docstring: ``claim_held``,
    ``delete_held``, ``periodic_held``) through ``add(stage, start_ns, dur_s)``; returns the
    gaps (s) between consecutive periodic runs on each host. ``held``: lock events with
    ``acq_ns`` (acquired, ns) and ``base_s`` (the hold less its conductor calls' waits and
    its read of the provider's allocations, :func:`alloc_loops`: a claim's or a delete's own
    time; the periodic task's are whole)."""
    for stage, ids in (("claim_held", creates), ("delete_held", deletes)):
        x = held.filter(pl.col("request_id").is_in(ids["trace_id"].implode()))
        add(stage, x["acq_ns"], x["base_s"])
    holder = pl.col("message").str.extract(r'by "(?:[\w.]*\.)?(\w+)"')
    per = (held.filter(holder.is_in(list(PERIODIC_HOLDERS))
                       & ~pl.col("request_id").is_in(
                           pl.concat([creates["trace_id"], deletes["trace_id"]]).implode()))
           .group_by("host", "request_id")
           .agg(pl.col("acq_ns").min(), pl.col("lock_held_s").sum())
           .sort("host", "acq_ns"))
    add("periodic_held", per["acq_ns"], per["lock_held_s"])
    gaps = per.with_columns(gap=pl.col("acq_ns").diff().over("host") / 1e9)["gap"]
    return [float(g) for g in gaps.drop_nulls().to_list() if g > 0]
