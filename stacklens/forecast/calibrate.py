"""Calibration: per-stage service times of the boot workflow, measured in real runs.

``stacklens forecast calibrate RUN... -o model.json`` reads the canonical tables of traced run
folders (``traces``, ``spans``, ``phases``, ``breakdown``, ``events``: :mod:`stacklens.schema`)
and writes a calibration model: one :class:`~stacklens.forecast.dist.LoadDist` per stage below,
the settings of the runs (knobs), what the runs measured (for comparison), and provenance.

Stages of one boot (``server.create`` trace) and how each is measured, from span and phase
timestamps of the same trace (span names of stacklens.trace; nova 2025.1 code paths):

==================  =======================================================================
``api``             nova-api span of ``POST /v2.1/servers`` (quota, instance record, cast)
``to_conductor``    conductor span start - api span end (RPC cast transit and queue)
``conductor``       scheduler span start - conductor span start (schedule_and_build_instances
                    before select_destinations)
``scheduler``       the ``call scheduler`` span (select_destinations, placement queries and
                    the allocation claim; ``placement_share`` of it is placement-api's)
``to_compute``      compute span start - scheduler span end (reply, conductor, cast), minus
                    the conductor's wait for its next reply poll
``compute_pre``     build phase start - compute span start, for builds that did not wait for
                    the build semaphore (fewer than max_concurrent_builds in progress on the
                    host): the work before the semaphore; the wait itself is simulated
``conductor_call``  each ``call conductor`` span of nova-compute's build (object saves,
                    instance updates); the count per boot outside a lock hold is
                    ``conductor_calls``, under a claim's / delete's hold
                    ``calls_per_claim_hold`` / ``calls_per_delete_hold``
``build``           build phase ("Took N seconds to build instance") minus its conductor calls
                    (the callers' waits: with reply polling the next multiple of 0.5 s,
                    :mod:`stacklens.forecast.rpcwait`) and its ``compute_resources`` lock
                    waits and holds: nova-compute's own work inside the semaphore
``lock_held``       each hold of the ``compute_resources`` lock (oslo_concurrency "released
                    ... held N s" lines of the trace's request id) minus the waits for the
                    conductor calls made under it; ``locks_per_build`` and
                    ``locks_per_delete`` holds per boot and per delete (median)
``claim_held``      the holds under a ``server.create`` trace (the resource tracker's
                    ``instance_claim``: 2.1-2.6 s each in the 2025.1 lab)
``delete_held``     the holds under a ``server.delete`` trace (``update_usage``: 1.6 s)
``periodic_held``   per run of the resource tracker's periodic task on a host (holds by
                    ``_update_available_resource`` or ``clean_compute_node_cache``, the holder
                    oslo.concurrency names in its lock lines; summed per request id): 3.1 s in
                    the lab; ``periodic_interval_s`` is the median time between two runs on a
                    host (nova's ``update_resources_interval``, default 0: every 60 s)
``finish``          trace end - build end
==================  =======================================================================

Delete (``server.delete`` trace): ``delete_api`` (nova-api span), ``delete_to_compute``
(compute span start - api span end), ``teardown`` and ``cleanup`` (phases ``teardown`` and
``resource_cleanup`` minus the delete's lock waits and holds: the latter runs under the
``compute_resources`` lock), ``delete_rest``
(the rest of the trace).

Load of a sample (``load``): ``pipeline`` (default), the creates between their nova-api start
and their arrival at a compute (nova-compute span start) at the sample's start: the boots the
control plane (API, conductor, scheduler, placement, RPC) is working on, which is what slows
the shared controller down in a burst and drops to a few once the burst is through. A
closed-loop storm keeps the client's slots full all the time, so the other indices are almost
constant in a calibration run and cannot show how a stage slows with load; on the lab runs
(five at K=4, C=20 -> five at 2K, 2C) ``pipeline`` predicted create p50 / p95 / throughput
+1 / -15 / +15 %, ``client`` +80 / -35 / +45 %. ``client``: the client's requests in flight
(a slot is held from the create's submit until the server is gone: the ``requests`` table
that ``stacklens run`` writes). ``server``: the ``server.create`` traces in flight (the fallback of ``client``
for runs without client records). ``active``: ``client`` minus the boots queued at a compute
(build semaphore, ``compute_resources`` lock waits).

CPU (``cpu``, :mod:`stacklens.forecast.cpu`), opt-in with ``cores`` (``--cores``): when every
run has ``resource_samples`` (psutil per service process, ``stacklens run --capture``), each
stage's CPU demand per service by regression over the sample intervals
(:mod:`stacklens.forecast.demand`; ``demand="utilisation"``: the utilisation law over the
storm, with a background demand per boot), for the simulated shared CPU of ``cores`` cores.
Without ``cores``, or when a run has no samples, the model has no ``cpu`` section, simulates as
before (stage times drawn at the current load, extrapolated by the fitted line) and says why in
``provenance["cpu"]``.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from stacklens.errors import UserError
from stacklens.forecast.cpu import (
    CpuModel,
    fit_demands,
    placement_calls,
    process_counts,
    run_cpu_seconds,
)
from stacklens.forecast.demand import RegressionRows, fit_regression, interval_rows
from stacklens.forecast.dist import LoadDist, fit
from stacklens.forecast.rpcwait import caller_wait, calls_within, detect_reply_poll
from stacklens.store import RunStore

__all__ = [
    "CALIBRATION_FORMAT_VERSION",
    "Calibration",
    "LOCK_STAGES",
    "STAGES",
    "calibrate",
    "load_model",
    "run_settings",
]

#: Calibration file format. History: 1 (issue 9): stages, knobs, measured, provenance;
#: 2: optional ``cpu`` section (shared CPU: demands, background, stretch; a version 1 file
#: reads as a model without it); 3: the ``compute_resources`` holds by kind
#: (:data:`LOCK_STAGES`) and ``periodic_interval_s`` (optional: older files read without);
#: 4: ``rpc_poll_s`` and the conductor calls under a claim's and a delete's hold
#: (:mod:`stacklens.forecast.rpcwait`; older files read as 0: no polling, no calls).
CALIBRATION_FORMAT_VERSION = 4

STAGES = ("api", "to_conductor", "conductor", "scheduler", "to_compute", "compute_pre",
          "conductor_call", "build", "finish", "delete_api", "delete_to_compute", "teardown",
          "cleanup", "delete_rest", "lock_held")
#: Stages a version-3 model adds; a model without them draws every hold from ``lock_held``
#: and simulates no periodic holds.
LOCK_STAGES = ("claim_held", "delete_held", "periodic_held")
#: Holders of the ``compute_resources`` lock that are the resource tracker's periodic task
#: (``nova/compute/resource_tracker.py``; named in oslo.concurrency's "acquired by" lines).
PERIODIC_HOLDERS = ("_update_available_resource", "clean_compute_node_cache")
#: nova's default spacing of ``update_available_resource`` (``update_resources_interval`` 0:
#: oslo.service's default periodic spacing, 60 s), when a run is too short to measure it.
DEFAULT_PERIODIC_S = 60.0


@dataclass(frozen=True)
class Calibration:
    """A calibration model: ``stages`` (name -> LoadDist, seconds), ``conductor_calls``
    (per boot, median), ``placement_share`` (fraction of the scheduler stage spent in
    placement-api), ``locks_per_build`` / ``locks_per_delete`` (compute_resources lock holds
    per boot / delete, median), ``periodic_interval_s`` (s between two runs of the resource
    tracker's periodic task on a host; 0: not simulated), ``knobs`` (settings
    of the runs, e.g. computes, concurrency), ``measured`` (p50/p95, throughput, component
    p50s of the runs), ``provenance`` (lab, release, date, commit, runs), ``cpu`` (the shared
    CPU, :class:`~stacklens.forecast.cpu.CpuModel`; None: runs without resource samples),
    ``rpc_poll_s`` (the RPC caller's reply poll, s; 0: the caller resumes at once:
    :mod:`stacklens.forecast.rpcwait`), ``calls_per_claim_hold`` / ``calls_per_delete_hold``
    (conductor calls made under a claim's / a delete's ``compute_resources`` hold, median;
    the ``*_held`` and ``lock_held`` stages are the holds without them)."""

    stages: dict[str, LoadDist]
    conductor_calls: int = 12
    placement_share: float = 0.0
    locks_per_build: int = 1
    locks_per_delete: int = 1
    periodic_interval_s: float = 0.0
    load: str = "pipeline"  # load index of the bins (module docstring)
    attribution: dict[str, float] = field(default_factory=dict)  # see forecast.attribution
    knobs: dict[str, Any] = field(default_factory=dict)
    measured: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    cpu: CpuModel | None = None
    rpc_poll_s: float = 0.0
    calls_per_claim_hold: int = 0
    calls_per_delete_hold: int = 0

    def to_json(self) -> dict[str, Any]:
        """The JSON document written by ``forecast calibrate``."""
        return {"format_version": CALIBRATION_FORMAT_VERSION, "provenance": self.provenance,
                "knobs": self.knobs, "measured": self.measured,
                "conductor_calls": self.conductor_calls,
                "placement_share": round(self.placement_share, 4),
                "locks_per_build": self.locks_per_build,
                "locks_per_delete": self.locks_per_delete,
                "periodic_interval_s": round(self.periodic_interval_s, 3), "load": self.load,
                "rpc_poll_s": self.rpc_poll_s,
                "calls_per_claim_hold": self.calls_per_claim_hold,
                "calls_per_delete_hold": self.calls_per_delete_hold,
                "attribution": {k: round(v, 4) for k, v in self.attribution.items()},
                **({"cpu": self.cpu.to_json()} if self.cpu is not None else {}),
                "stages": {k: v.to_json() for k, v in self.stages.items()}}

    @staticmethod
    def from_json(d: dict[str, Any], where: str = "model") -> Calibration:
        """Read a calibration document. Raises :class:`~stacklens.errors.UserError` on a
        newer format or a document that is not a calibration model."""
        try:
            v = int(d.get("format_version", 0))
            if v > CALIBRATION_FORMAT_VERSION:
                raise UserError(f"{where}: calibration format {v} is newer than this "
                                f"stacklens reads ({CALIBRATION_FORMAT_VERSION})")
            stages = {k: LoadDist.from_json(x) for k, x in d["stages"].items()}
            missing = [s for s in STAGES if s not in stages]
            if missing:
                raise UserError(f"{where}: stages missing: {', '.join(missing)}")
            return Calibration(stages=stages, conductor_calls=int(d["conductor_calls"]),
                               placement_share=float(d["placement_share"]),
                               locks_per_build=int(d["locks_per_build"]),
                               locks_per_delete=int(d["locks_per_delete"]),
                               periodic_interval_s=float(d.get("periodic_interval_s") or 0.0),
                               load=str(d.get("load", "server")),
                               rpc_poll_s=float(d.get("rpc_poll_s") or 0.0),
                               calls_per_claim_hold=int(d.get("calls_per_claim_hold") or 0),
                               calls_per_delete_hold=int(d.get("calls_per_delete_hold") or 0),
                               attribution={str(k): float(v) for k, v in
                                            (d.get("attribution") or {}).items()},
                               knobs=dict(d.get("knobs") or {}),
                               measured=dict(d.get("measured") or {}),
                               provenance=dict(d.get("provenance") or {}),
                               cpu=CpuModel.from_json(d["cpu"]) if d.get("cpu") else None)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise UserError(f"{where} is not a stacklens calibration model ({e})") from None


def load_model(path: str | Path) -> Calibration:
    """Read a calibration model file. Raises :class:`~stacklens.errors.UserError` when it is
    missing or unreadable."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise UserError(f"cannot read calibration model {p}: {e.strerror}") from None
    except ValueError as e:
        raise UserError(f"{p} is not JSON: {e}") from None
    return Calibration.from_json(doc, str(p))


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


def _run_samples(store: RunStore, load: str = "pipeline") -> dict[str, Any]:
    """Samples (load, seconds) per stage from one traced run folder."""
    tr = store.read("traces").filter(pl.col("outcome").is_in(["success", "retried"]))
    spans = store.read("spans")
    ph = store.read("phases")
    creates = tr.filter(pl.col("operation") == "server.create")
    deletes = tr.filter(pl.col("operation") == "server.delete")
    if creates.height == 0:
        raise UserError(f"{store.path}: no successful server.create traces to calibrate from")
    starts, ends = _load_intervals(store, creates, load)
    out: dict[str, list[tuple[float, float, int]]] = {s: [] for s in STAGES + LOCK_STAGES}
    waits: list[tuple[int, int]] = []  # load "active": queued at a compute, not working

    def add(stage: str, t0: pl.Series, dur_s: pl.Series) -> None:
        ok = [(a, d) for a, d in zip(t0.to_list(), dur_s.to_list(), strict=True)
              if a is not None and d is not None]
        loads = _in_flight(starts, ends, [a for a, _ in ok], waits)
        out[stage].extend((float(x), float(d), int(a))
                          for x, (a, d) in zip(loads, ok, strict=True))

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
    # the build's own calls: in its phase, not under a hold
    in_build = calls_within(calls_all.filter(~pl.col("call_id").is_in(
        in_holds["call_id"].implode())), build.select(
        "trace_id", pl.col("trace_id").alias("key"), pl.col("b_s").alias("w0_ns"),
        pl.col("b_e").alias("w1_ns")), poll_s)
    inside = in_build.group_by(pl.col("key").alias("trace_id")).agg(
        pl.len().alias("n_calls"), pl.col("wait_s").sum().alias("calls_s"))
    c = c.join(inside, on="trace_id", how="left").join(lk, on="trace_id", how="left")
    c = c.with_columns(pl.col("n_calls").fill_null(0), pl.col("calls_s").fill_null(0.0),
                       pl.col("lock_s").fill_null(0.0), pl.col("n_locks").fill_null(0))
    ns = 1e9
    api_s, api_e = pl.col("nova-api_s"), pl.col("nova-api_e")
    cd_s = pl.col("nova-conductor_s")
    sc_s, sc_e = pl.col("nova-scheduler_s"), pl.col("nova-scheduler_e")
    cp_s = pl.col("nova-compute_s")
    d = c.select(
        "trace_id", "nova-api_s", "nova-api_e", "nova-conductor_s", "nova-scheduler_s",
        "nova-scheduler_e", "nova-compute_s", "b_s", "b_e", "nova-compute_host", "n_calls", "n_locks",
        api=(api_e - api_s) / ns, to_conductor=(cd_s - api_e) / ns,
        conductor=(sc_s - cd_s) / ns, scheduler=(sc_e - sc_s) / ns,
        to_compute=((cp_s - sc_e) / ns - (caller_wait((sc_e - sc_s) / ns, poll_s)
                                           - (sc_e - sc_s) / ns)).clip(lower_bound=0.0),
        compute_pre=(pl.col("b_s") - cp_s) / ns,
        build=((pl.col("b_e") - pl.col("b_s")) / ns - pl.col("calls_s")
               - pl.col("lock_s")).clip(lower_bound=0.0),
        finish=(pl.col("end_ns") - pl.col("b_e")) / ns)
    if load == "pipeline":  # boots between the API and a compute (add() reads these)
        api_started = d.filter(pl.col("nova-api_s").is_not_null())
        starts = api_started["nova-api_s"].to_list()
        ends = api_started.select(pl.coalesce("nova-compute_s", "b_s", "nova-api_e")
                                  ).to_series().to_list()
    if load == "active":
        lw = ev.filter(pl.col("lock_waited_s") > 0)
        waits += [(t - int(w * 1e9), t) for t, w in lw.select("ts_ns", "lock_waited_s").rows()]
        sw = d.filter(pl.col("b_s") > pl.col("nova-compute_s"))
        waits += [(a, b) for a, b in sw.select("nova-compute_s", "b_s").rows()]
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
    add("lock_held", held["acq_ns"], held["own_s"])
    periodic_gaps = _lock_kinds(held, creates, deletes, add)
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
    share = sched_bd.group_by("trace_id").agg(
        (pl.col("dur_s").filter(pl.col("component") == "placement-api").sum()
         / pl.col("dur_s").sum()).alias("share"))["share"].drop_nans().drop_nulls()
    dur = creates["dur_s"]
    window_s = (max(ends) - min(starts)) / 1e9
    w0 = int(creates["start_ns"].min())  # type: ignore[arg-type]
    w1 = int(pl.concat([creates["end_ns"], deletes["end_ns"]]).max())  # type: ignore[arg-type]
    cpu_rows: RegressionRows | None = None
    cpu = None
    procs: dict[str, int] = {}
    if store.has("resource_samples"):
        rsamp = store.read("resource_samples")
        cpu = run_cpu_seconds(rsamp, w0, w1)
        cpu_rows = interval_rows(rsamp, {k: [(p[2], p[1]) for p in v] for k, v in out.items()},
                                 w0, w1)
        procs = process_counts(rsamp)
    return {
        "samples": out,
        "cpu_s": cpu, "cpu_window_s": (w1 - w0) / 1e9, "cpu_rows": cpu_rows,
        "processes": procs,
        "placement_calls": placement_calls(events, w0, w1),
        "reply_poll": (poll_s, poll_share, poll_n),
        "hold_calls": {kind: held.filter(pl.col("request_id").is_in(ids["trace_id"].implode()))
                       ["hold_calls"].to_list()
                       for kind, ids in (("claim", creates), ("delete", deletes))},
        "n_calls": d.filter(pl.col("b_s").is_not_null())["n_calls"].to_list(),
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


def _lock_kinds(held: pl.DataFrame, creates: pl.DataFrame, deletes: pl.DataFrame,
                add: Any) -> list[float]:
    """Sample the ``compute_resources`` holds by kind (module docstring: ``claim_held``,
    ``delete_held``, ``periodic_held``) through ``add(stage, start_ns, dur_s)``; returns the
    gaps (s) between consecutive periodic runs on each host. ``held``: lock events with
    ``acq_ns`` (acquired, ns) and ``own_s`` (the hold less its conductor calls' waits: a
    claim's or a delete's own time; the periodic task's are whole)."""
    for stage, ids in (("claim_held", creates), ("delete_held", deletes)):
        x = held.filter(pl.col("request_id").is_in(ids["trace_id"].implode()))
        add(stage, x["acq_ns"], x["own_s"])
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


def run_settings(store: RunStore) -> dict[str, Any]:
    """Storm settings of a run folder: ``computes``, ``concurrency``, ``servers`` (boots
    traced), ``poll_interval_s``, from the manifest's ``run`` section (scenario and plan) or,
    for a forecast, its ``forecast`` section; ``computes`` falls back to the hosts that ran
    nova-compute spans. Missing values are left out."""
    man = store.manifest()
    run = man.get("run") or {}
    bs = ((run.get("scenario") or {}).get("workload") or {}).get("boot_servers") or {}
    plan = run.get("plan") or {}
    fk = (man.get("forecast") or {}).get("knobs") or {}
    out: dict[str, Any] = {}
    for key, v in (("computes", bs.get("computes") or fk.get("computes")),
                   ("concurrency", plan.get("concurrency") or fk.get("concurrency")),
                   ("poll_interval_s", plan.get("poll_interval_s") or fk.get("poll_interval_s"))):
        if v is not None:
            out[key] = v
    tr = store.read("traces")
    out["servers"] = int((tr["operation"] == "server.create").sum())
    if "computes" not in out:
        sp = store.read("spans")
        out["computes"] = sp.filter(pl.col("service") == "nova-compute")["host"].n_unique()
    return out


def _fit_cpu(demand: str, rows: RegressionRows, cpu_s: dict[str, float],
             samples: dict[str, list[tuple[float, float, int]]], measured: list[dict[str, Any]],
             cores: float, window_s: float, pcalls: dict[str, int],
             procs: dict[str, int]) -> tuple[CpuModel, str]:
    """The ``cpu`` section and its provenance line: demands by regression over the sample
    intervals (:mod:`stacklens.forecast.demand`), or by the utilisation law when ``demand``
    says so or the runs have too few intervals for the regression."""
    why = ""
    if demand == "regression":
        try:
            cm, r2 = fit_regression(rows, cores, window_s, cpu_s, pcalls, procs)
            fit = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r2.items()))
            return cm, (f"shared CPU of {cores:g} cores: demands by regression over "
                        f"{len(next(iter(rows.values()))[1]) if rows else 0} sample intervals "
                        f"(stacklens.forecast.demand; R^2 {fit}); idle "
                        f"{cm.idle_cores:.2f} cores")
        except ValueError as e:
            why = f" (regression impossible: {e})"
    boots = sum(m["creates"] for m in measured)
    cm = fit_demands(cpu_s, {s: len(samples[s]) for s in STAGES},
                     {s: sum(p[1] for p in samples[s]) for s in STAGES}, boots,
                     cores, window_s, pcalls)
    return cm, (f"shared CPU of {cores:g} cores: demands from resource_samples by the "
                f"utilisation law (stacklens.forecast.cpu){why}")


def calibrate(runs: Sequence[str | Path], provenance: dict[str, Any] | None = None,
              knobs: dict[str, Any] | None = None, load: str = "pipeline",
              cores: float | None = None, demand: str = "regression") -> Calibration:
    """Fit a :class:`Calibration` to traced run folders (each must hold ``traces``, ``spans``,
    ``phases``, ``breakdown``, ``events``). Knobs default to what the runs' manifests say
    (computes, concurrency, servers). With ``cores`` (of the machine that ran the services)
    and ``resource_samples`` in every run, the ``cpu`` section: demands per ``demand``
    (stretch 1 until :func:`stacklens.forecast.cpufit.fit_stretch`); else none, and
    ``provenance["cpu"]`` says why. Raises :class:`~stacklens.errors.UserError` when a folder
    is not a traced run or has no successful boots. ``demand``: ``regression`` (falls back to
    the utilisation law, and says so in the provenance, when the runs have too few sample
    intervals) or ``utilisation``."""
    if demand not in ("regression", "utilisation"):
        raise UserError(f"demand must be regression or utilisation, not {demand!r}")
    if not runs:
        raise UserError("calibrate needs at least one run folder")
    samples: dict[str, list[tuple[float, float, int]]] = {s: [] for s in STAGES + LOCK_STAGES}
    rows: RegressionRows = {}
    procs: dict[str, int] = {}
    n_calls: list[int] = []
    gaps: list[float] = []
    shares: list[float] = []
    nlb: list[int] = []
    nld: list[int] = []
    measured = []
    kn: dict[str, Any] = {}
    cpu_s: dict[str, float] | None = {}
    cpu_window_s = 0.0
    pcalls: dict[str, int] = {}
    no_cpu: list[str] = []
    polls: list[tuple[float, float, int]] = []
    hold_calls: dict[str, list[int]] = {"claim": [], "delete": []}
    for r in runs:
        store = RunStore(r)
        if not store.has("traces"):
            raise UserError(f"{r}: not a traced run folder (no traces table)")
        got = _run_samples(store, load)
        for k, v in got["samples"].items():
            samples[k].extend(v)
        n_calls += got["n_calls"]
        shares += got["placement_share"]
        nlb += got["n_locks_build"]
        nld += got["n_locks_delete"]
        gaps += got["periodic_gaps_s"]
        polls.append(got["reply_poll"])
        for kind, v in got["hold_calls"].items():
            hold_calls[kind] += v
        if got["cpu_s"] is None:
            no_cpu.append(str(r))
        elif cpu_s is not None:
            for k, v in got["cpu_s"].items():
                cpu_s[k] = cpu_s.get(k, 0.0) + v
            cpu_window_s += got["cpu_window_s"]
            for k, n in got["placement_calls"].items():
                pcalls[k] = pcalls.get(k, 0) + n
            for k, n in got["processes"].items():  # the most any run showed
                procs[k] = n if n == 0 or procs.get(k) == 0 else max(n, procs.get(k, 0))
            for k, (x, y) in got["cpu_rows"].items():
                rows.setdefault(k, ([], []))
                rows[k][0].extend(x)
                rows[k][1].extend(y)
        measured.append({"run": str(r), **got["measured"]})
        for key, v in run_settings(store).items():
            kn.setdefault(key, v)
    stages = {}
    for s in STAGES + LOCK_STAGES:
        pts = samples[s]
        if pts:
            stages[s] = fit([p[0] for p in pts], [p[1] for p in pts])
        elif s in STAGES:
            stages[s] = LoadDist.constant(0.0)
    prov = {"created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "runs": [str(r) for r in runs], **(provenance or {})}
    poll = polls[0][0] if len({p[0] for p in polls}) == 1 else 0.0
    prov["rpc_poll"] = (
        f"RPC callers poll for replies every {poll:g} s" if poll > 0 else
        "RPC callers resume at once (no reply polling)" if all(p[2] >= 20 for p in polls)
        else "unknown (too few nova-compute CALL lines: DEBUG logging off?): no polling")
    prov["rpc_poll"] += " (share of callers' waits on a multiple of 0.5 s per run: " + ", ".join(
        f"{p[1]:.2f} of {p[2]}" for p in polls) + "; stacklens.forecast.rpcwait)"
    cpu = None
    if no_cpu or not cpu_s:
        prov["cpu"] = ("no shared CPU: no resource_samples in "
                       + ", ".join(no_cpu or [str(r) for r in runs])
                       + "; stage times drawn at the current load, extrapolated by the line")
    elif cores is None or cores <= 0:
        prov["cpu"] = ("no shared CPU: the runs have resource samples, but no host cores were "
                       "given (--cores)")
    else:
        cpu, prov["cpu"] = _fit_cpu(demand, rows, cpu_s, samples, measured, float(cores),
                                    cpu_window_s, pcalls, procs)
    return Calibration(
        stages=stages,
        conductor_calls=int(statistics.median(n_calls)) if n_calls else 0,
        placement_share=float(statistics.median(shares)) if shares else 0.0,
        locks_per_build=int(statistics.median(nlb)) if nlb else 1,
        locks_per_delete=int(statistics.median(nld)) if nld else 1,
        periodic_interval_s=(statistics.median(gaps) if gaps else DEFAULT_PERIODIC_S)
        if samples["periodic_held"] else 0.0,
        knobs={**kn, **(knobs or {})}, measured={"runs": measured}, provenance=prov,
        load=load, cpu=cpu, rpc_poll_s=poll,
        calls_per_claim_hold=int(statistics.median(hold_calls["claim"]))
        if hold_calls["claim"] else 0,
        calls_per_delete_hold=int(statistics.median(hold_calls["delete"]))
        if hold_calls["delete"] else 0)
