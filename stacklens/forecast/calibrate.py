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
                    host): the work before the semaphore; the wait itself is simulated; since
                    format 8 less its conductor calls (their callers' waits), which the model
                    makes (``pre_calls`` of them, median per boot)
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
                    ``instance_claim``: 2.1-2.6 s each in the 2025.1 lab), less their read
                    of the provider's allocations when ``alloc_read`` is measured
``delete_held``     the holds under a ``server.delete`` trace (``update_usage``: 1.6 s),
                    likewise
``alloc_read``      per placement request of that read (nova 2025.1 ``_update_to_placement``:
                    the provider's allocations, then each consumer's; the placement-api
                    spans of the hold's trace, :func:`~stacklens.forecast.samples.alloc_loops`):
                    the read's time over its requests; the model reads one per allocation
                    on the host, so a hold grows with the boots scheduled there
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
measured by 2026-11-25 (five at K=4, C=20 -> five at 2K, 2C; the model of that day)
``pipeline`` predicted create p50 / p95 / throughput +1 / -15 / +15 %, ``client`` +80 / -35 /
+45 %; the shipped model's numbers (``pipeline``, the allocation read, 40 seeds) are in its
provenance. ``client``: the client's requests in flight
(a slot is held from the create's submit until the server is gone: the ``requests`` table
that ``stacklens run`` writes). ``server``: the ``server.create`` traces in flight (the fallback of ``client``
for runs without client records). ``active``: ``client`` minus the boots queued at a compute
(build semaphore, ``compute_resources`` lock waits). ``work``: ``pipeline`` plus the builds in
their build phase that are not waiting for the ``compute_resources`` lock (they call the
conductor and placement). On the lab runs of 2026-11-27 (five at K=4, C=20, five at 2K, 2C)
the conductor's stages collapse onto one curve of ``work`` at both sizes (its post-scheduling
work 1.2 / 0.7 s and 1.3 / 2.1 s in the same ``work`` bins at K and 2K, against 3.2 / 4.5 s
and 2.4 / 6.0 s in the same ``pipeline`` bins), which ``pipeline`` does not: ``stage_load``
(``--stage-load STAGE=INDEX``) draws chosen stages at another index than the model's.
Contention (format 7): for the controller's stages (:data:`~stacklens.forecast.samples.
CONTROLLER_STAGES`) drawn at an index other than ``work``, each load bin keeps the mean number
of builds in flight at its samples' starts; the model multiplies a drawn time by ``(load +
builds now) / (load + the bin's builds)`` (:meth:`~stacklens.forecast.dist.LoadDist.
contention`; knob ``contention``, on by default, ignored with a ``cpu`` section).

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

import dataclasses
import datetime as _dt
import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from stacklens.errors import UserError
from stacklens.forecast.cpu import CpuModel, fit_demands
from stacklens.forecast.demand import RegressionRows, fit_regression
from stacklens.forecast.dist import LoadDist, fit
from stacklens.forecast.samples import (
    CONTROLLER_STAGES,
    LOCK_STAGES,
    OPTIONAL_STAGES,
    STAGES,
    run_samples,
)
from stacklens.store import RunStore

__all__ = [
    "CALIBRATION_FORMAT_VERSION",
    "Calibration",
    "LOAD_INDICES",
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
#: (:mod:`stacklens.forecast.rpcwait`; older files read as 0: no polling, no calls);
#: 5: the ``scheduler_host`` stage (:data:`~stacklens.forecast.samples.HOST_STAGES`; the
#: ``scheduler`` stage is then the request without its host loop; older files read without);
#: 6: the ``alloc_read`` stage (:data:`~stacklens.forecast.samples.ALLOC_STAGES`; ``claim_held``
#: and ``delete_held`` are then the holds without that read; older files read without);
#: 7: per load bin of the controller's stages, the builds in flight
#: (:attr:`~stacklens.forecast.dist.LoadDist.building`; older files read without: no
#: contention scaling); 8: ``pre_calls``, the conductor calls before the build phase
#: (``compute_pre`` is then without them; older files read 0: the stage keeps them); 9: per
#: stage the highest load of its samples (:attr:`~stacklens.forecast.dist.LoadDist.max_load`,
#: what a forecast's draws beyond the calibration are counted against; older files read the
#: highest bin's mean load) and ``validations``, the recorded ``forecast validate --record``
#: runs (older files read none).
CALIBRATION_FORMAT_VERSION = 9

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
    stage_load: dict[str, str] = field(default_factory=dict)  # per-stage index overrides
    attribution: dict[str, float] = field(default_factory=dict)  # see forecast.attribution
    knobs: dict[str, Any] = field(default_factory=dict)
    measured: dict[str, Any] = field(default_factory=dict)
    provenance: dict[str, Any] = field(default_factory=dict)
    cpu: CpuModel | None = None
    rpc_poll_s: float = 0.0
    calls_per_claim_hold: int = 0
    calls_per_delete_hold: int = 0
    #: conductor calls between the compute's receipt of the build and its build phase (median
    #: per boot; format 8: ``compute_pre`` is then without them; older files read 0)
    pre_calls: int = 0
    #: the model's recorded validations against measured runs (``forecast validate
    #: --record``; format 9), oldest first: ``{at`` (ISO 8601 UTC), ``storm`` {computes,
    #: servers, concurrency}, ``runs`` (count), ``seeds``, ``target_pct``, ``error_pct``
    #: {metric: predicted vs measured median, %, or None}, ``beyond_calibration`` {component:
    #: share 0..1 of its draws beyond the calibrated load}, ``outside_range`` [metrics whose
    #: prediction lies outside the measured runs' range], ``range_confidence`` (that range as
    #: a confidence interval of the runs' median, 0..1, or None; older records lack both),
    #: ``set`` [knob=value overrides]``}``
    #: (:func:`stacklens.forecast.validate.record`)
    validations: tuple[dict[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSON document written by ``forecast calibrate``."""
        return {"format_version": CALIBRATION_FORMAT_VERSION, "provenance": self.provenance,
                "knobs": self.knobs, "measured": self.measured,
                "conductor_calls": self.conductor_calls,
                "placement_share": round(self.placement_share, 4),
                "locks_per_build": self.locks_per_build,
                "locks_per_delete": self.locks_per_delete,
                "periodic_interval_s": round(self.periodic_interval_s, 3), "load": self.load,
                **({"stage_load": dict(self.stage_load)} if self.stage_load else {}),
                "rpc_poll_s": self.rpc_poll_s,
                "calls_per_claim_hold": self.calls_per_claim_hold,
                "calls_per_delete_hold": self.calls_per_delete_hold,
                "pre_calls": self.pre_calls,
                "attribution": {k: round(v, 4) for k, v in self.attribution.items()},
                **({"cpu": self.cpu.to_json()} if self.cpu is not None else {}),
                **({"validations": list(self.validations)} if self.validations else {}),
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
                               stage_load={str(k): str(v) for k, v in
                                           (d.get("stage_load") or {}).items()},
                               rpc_poll_s=float(d.get("rpc_poll_s") or 0.0),
                               calls_per_claim_hold=int(d.get("calls_per_claim_hold") or 0),
                               calls_per_delete_hold=int(d.get("calls_per_delete_hold") or 0),
                               pre_calls=int(d.get("pre_calls") or 0),
                               attribution={str(k): float(v) for k, v in
                                            (d.get("attribution") or {}).items()},
                               knobs=dict(d.get("knobs") or {}),
                               measured=dict(d.get("measured") or {}),
                               provenance=dict(d.get("provenance") or {}),
                               cpu=CpuModel.from_json(d["cpu"]) if d.get("cpu") else None,
                               validations=tuple(dict(x) for x in d.get("validations") or ()))
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
             samples: dict[str, list[tuple[float, float, int, float]]],
             measured: list[dict[str, Any]], cores: float, window_s: float, pcalls: dict[str, int],
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


#: The load indices a calibration may bin its stage times by (module docstring).
LOAD_INDICES = ("pipeline", "work", "client", "active", "server")


def _unseen(cm: CpuModel, host_cpu_s: float | None, cpu_s: dict[str, float],
            measured: list[dict[str, Any]]) -> tuple[CpuModel, str]:
    """``cm`` with :attr:`~stacklens.forecast.cpu.CpuModel.unseen_s` (the host's busy CPU-s
    less the measured services', per boot) and the provenance line that says what it is."""
    boots = sum(m["creates"] for m in measured)
    if host_cpu_s is None or boots == 0:
        return cm, ("unseen CPU not modelled: a run has no whole-machine CPU rows (cpu:host); "
                    "the load driver's and the kernel's CPU is missing from the model")
    seen = sum(cpu_s.values())
    unseen = max(0.0, host_cpu_s - seen) / boots
    return dataclasses.replace(cm, unseen_s=unseen), (
        f"unseen CPU {unseen:.3f} CPU-s per boot: the host was busy {host_cpu_s:.1f} CPU-s, "
        f"the measured services {seen:.1f} (the load driver, the recorders, the kernel: one "
        "process's job per boot, stacklens.forecast.cpu.CpuModel.unseen_s)")


def calibrate(runs: Sequence[str | Path], provenance: dict[str, Any] | None = None,
              knobs: dict[str, Any] | None = None, load: str = "pipeline",
              cores: float | None = None, demand: str = "regression",
              stage_load: dict[str, str] | None = None) -> Calibration:
    """Fit a :class:`Calibration` to traced run folders (each must hold ``traces``, ``spans``,
    ``phases``, ``breakdown``, ``events``). Knobs default to what the runs' manifests say
    (computes, concurrency, servers). With ``cores`` (of the machine that ran the services)
    and ``resource_samples`` in every run, the ``cpu`` section: demands per ``demand``
    (stretch 1 until :func:`stacklens.forecast.cpufit.fit_stretch`); else none, and
    ``provenance["cpu"]`` says why. Raises :class:`~stacklens.errors.UserError` when a folder
    is not a traced run or has no successful boots. ``demand``: ``regression`` (falls back to
    the utilisation law, and says so in the provenance, when the runs have too few sample
    intervals) or ``utilisation``. ``stage_load``: per stage, a load index other than
    ``load`` (module docstring). Per load bin of the
    :data:`~stacklens.forecast.samples.CONTROLLER_STAGES` drawn at an index other than
    ``work``, the builds in flight at the samples' starts are kept
    (:attr:`~stacklens.forecast.dist.LoadDist.building`): the model scales those stages by
    them (knob ``contention``)."""
    if demand not in ("regression", "utilisation"):
        raise UserError(f"demand must be regression or utilisation, not {demand!r}")
    bad = sorted(set(stage_load or {}) - set(STAGES + OPTIONAL_STAGES))
    if bad:
        raise UserError(f"--stage-load: no stage {', '.join(bad)} (stages: "
                        f"{', '.join(STAGES + OPTIONAL_STAGES)})")
    for index in (load, *(stage_load or {}).values()):
        if index not in LOAD_INDICES:
            raise UserError(f"load index {index!r}: must be one of {', '.join(LOAD_INDICES)}")
    if not runs:
        raise UserError("calibrate needs at least one run folder")
    samples: dict[str, list[tuple[float, float, int, float]]] = {
        s: [] for s in STAGES + OPTIONAL_STAGES}
    rows: RegressionRows = {}
    procs: dict[str, int] = {}
    n_calls: list[int] = []
    n_pre: list[int] = []
    gaps: list[float] = []
    shares: list[float] = []
    nlb: list[int] = []
    nld: list[int] = []
    measured = []
    kn: dict[str, Any] = {}
    cpu_s: dict[str, float] | None = {}
    cpu_window_s = 0.0
    host_cpu: float | None = 0.0  # the whole machine's busy CPU-s, None if a run lacks it
    pcalls: dict[str, int] = {}
    no_cpu: list[str] = []
    polls: list[tuple[float, float, int]] = []
    hold_calls: dict[str, list[int]] = {"claim": [], "delete": []}
    for r in runs:
        store = RunStore(r)
        if not store.has("traces"):
            raise UserError(f"{r}: not a traced run folder (no traces table)")
        got = run_samples(store, load, stage_load)
        for k, v in got["samples"].items():
            samples[k].extend(v)
        n_calls += got["n_calls"]
        n_pre += got["n_pre_calls"]
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
            host_cpu = (None if host_cpu is None or got["host_cpu_s"] is None
                        else host_cpu + got["host_cpu_s"])
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
    for s in STAGES + OPTIONAL_STAGES:
        pts = samples[s]
        if pts:
            stages[s] = fit([p[0] for p in pts], [p[1] for p in pts], building=(
                [p[3] for p in pts] if s in CONTROLLER_STAGES
                and (stage_load or {}).get(s, load) != "work" else None))
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
        cpu, prov["cpu_unseen"] = _unseen(cpu, host_cpu, cpu_s, measured)
    return Calibration(
        stages=stages,
        conductor_calls=int(statistics.median(n_calls)) if n_calls else 0,
        placement_share=float(statistics.median(shares)) if shares else 0.0,
        locks_per_build=int(statistics.median(nlb)) if nlb else 1,
        locks_per_delete=int(statistics.median(nld)) if nld else 1,
        periodic_interval_s=(statistics.median(gaps) if gaps else DEFAULT_PERIODIC_S)
        if samples["periodic_held"] else 0.0,
        knobs={**kn, **(knobs or {})}, measured={"runs": measured}, provenance=prov,
        load=load, stage_load=dict(stage_load or {}), cpu=cpu, rpc_poll_s=poll,
        calls_per_claim_hold=int(statistics.median(hold_calls["claim"]))
        if hold_calls["claim"] else 0,
        calls_per_delete_hold=int(statistics.median(hold_calls["delete"]))
        if hold_calls["delete"] else 0,
        pre_calls=int(statistics.median(n_pre)) if n_pre else 0)
