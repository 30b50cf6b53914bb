"""CPU demand per stage by regression over the resource-sample intervals.

**Why not the utilisation law alone.** :func:`stacklens.forecast.cpu.fit_demands` divides a
service's CPU-seconds over the whole storm among the stages it serves. Everything the process
does is then booked to the boots: its idle CPU (heartbeats, periodic tasks, the client's list
polling) and the work it does for stages it was not assigned. On the 2026-11-26 lab runs that
gave the burst's first steps (API, conductor, scheduler, placement) ~0.6 CPU-s per boot, so a
simulated burst of 40 boots took 17.8 s to schedule where the lab took 7.1-9.7 s, and the
burst no longer piled onto one host as it does in the lab.

**Regression-based demand estimation** (Rolia and Vetland, "Parameter estimation for
performance models of distributed application systems", CASCON 1995; Zhang, Cherkasova and
Smirni, "A regression-based analytic model for dynamic resource provisioning of multi-tier
applications", ICAC 2007): the CPU-seconds ``y_i`` a service used in sample interval ``i``
are modelled as ``y_i = sum_s D_s x_{s,i} + b dt_i``, where ``x_{s,i}`` is how much of stage
``s``'s occurrences fell into the interval (each occurrence spread evenly over its measured
time; an instant one counts 1 in its interval), ``D_s`` the CPU-seconds per occurrence and
``b`` the cores the service uses whatever the boots do. Fitted by non-negative least squares
(Lawson and Hanson, *Solving Least Squares Problems*, 1974; ``scipy.optimize.nnls``) over
every interval of every calibration run. The intercepts together are the CPU the measured
processes keep busy regardless of the storm (``idle_cores``); the model runs the boots on the
cores left.

Which stages each service is regressed on: :data:`REG_STAGES`. A service that is not a
stage's own worker (placement-api for the scheduler, MariaDB and the broker for the stages
that query or send) adds its coefficient to that stage's demand on the shared CPU without
holding the worker (``held``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from stacklens.forecast.cpu import CpuModel

__all__ = ["OWNER", "REG_STAGES", "RegressionRows", "fit_regression", "interval_rows"]

#: The stages whose occurrences each measured service's CPU is regressed on (calibrate.STAGES
#: names): its own work, and the stages that call it (placement-api: the scheduler's
#: allocation candidates and claim, the resource tracker's reads under the lock, the delete's
#: cleanup; MariaDB: the stages that write or query the database; RabbitMQ: the RPC transits
#: and the build's conductor calls). nova-conductor's post-scheduling work is in ``to_compute``
#: (calibrate's docstring).
REG_STAGES: dict[str, tuple[str, ...]] = {
    "nova-api": ("api", "delete_api"),
    "nova-conductor": ("conductor", "conductor_call", "to_compute"),
    "nova-scheduler": ("scheduler",),
    "placement-api": ("scheduler", "lock_held", "cleanup"),
    "nova-compute": ("compute_pre", "build", "lock_held", "finish", "teardown", "cleanup"),
    "rabbitmq": ("to_conductor", "to_compute", "delete_to_compute", "conductor_call"),
    "mariadb": ("api", "conductor", "scheduler", "conductor_call", "build", "delete_api",
                "cleanup", "lock_held"),
    "glance-api": ("compute_pre", "build"),
    "neutron-standin": ("build", "teardown"),
}

#: The service whose worker runs each stage (its coefficient is the ``held`` part).
OWNER: dict[str, str] = {
    "api": "nova-api", "delete_api": "nova-api",
    "conductor": "nova-conductor", "conductor_call": "nova-conductor",
    "to_compute": "nova-conductor", "scheduler": "nova-scheduler",
    "compute_pre": "nova-compute", "build": "nova-compute", "lock_held": "nova-compute",
    "finish": "nova-compute", "teardown": "nova-compute", "cleanup": "nova-compute",
}

#: Cells (intervals x occurrences) of one step of :func:`_occupancy` (8 bytes each).
CHUNK_CELLS = 2_000_000

#: Per service: the design rows (one per sample interval: the stages' occupancy in
#: :data:`REG_STAGES` order, then the interval's length in s) and the CPU-seconds measured.
RegressionRows = dict[str, tuple[list[list[float]], list[float]]]


def interval_rows(samples: pl.DataFrame, occurrences: Mapping[str, Sequence[tuple[int, float]]],
                  t0_ns: int, t1_ns: int) -> RegressionRows:
    """The regression rows of one run. ``samples``: its ``resource_samples`` (``ts_ns``,
    ``service``, ``host``, ``pid``, ``cpu_pct``: each sample's CPU covers the time since the
    same process's previous sample); ``occurrences``: per stage, (start ns, measured s) of
    each occurrence; only sample intervals that end after ``t0_ns`` and start before
    ``t1_ns`` (the storm, ns) are kept. Services absent from the samples are left out."""
    s = samples.filter(pl.col("pid").is_not_null()).sort("ts_ns")
    s = s.with_columns(prev=pl.col("ts_ns").shift(1).over("service", "host", "pid"))
    s = s.filter(pl.col("cpu_pct").is_not_null() & pl.col("prev").is_not_null()
                 & (pl.col("ts_ns") > t0_ns) & (pl.col("prev") < t1_ns))
    s = s.with_columns(cpu_s=pl.col("cpu_pct") / 100.0 * (pl.col("ts_ns") - pl.col("prev")) / 1e9)
    occ = {st: _arrays(v) for st, v in occurrences.items()}
    out: RegressionRows = {}
    for svc, stages in REG_STAGES.items():
        g = (s.filter(pl.col("service") == svc).group_by("ts_ns")
             .agg(pl.col("prev").min(), pl.col("cpu_s").sum()).sort("ts_ns"))
        if g.height == 0:
            continue
        hi = g["ts_ns"].to_numpy().astype(np.float64)
        lo = g["prev"].to_numpy().astype(np.float64)
        cols = [_occupancy(occ.get(st), lo, hi) for st in stages]
        x = np.column_stack([*cols, (hi - lo) / 1e9])
        out[svc] = (x.tolist(), g["cpu_s"].to_list())
    return out


def _arrays(v: Sequence[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([t for t, _ in v], dtype=np.float64)
    d = np.array([max(0.0, x) for _, x in v], dtype=np.float64) * 1e9
    return a, d


def _occupancy(occ: tuple[np.ndarray, np.ndarray] | None, lo: np.ndarray,
               hi: np.ndarray) -> np.ndarray:
    """Per interval [lo, hi) (ns): the sum over occurrences of the fraction of each that
    falls into it (an instant occurrence: 1 in the interval holding its start). Occurrences
    are taken in chunks so that no intermediate holds more than :data:`CHUNK_CELLS` cells
    (a long run has thousands of intervals and hundreds of thousands of calls)."""
    out = np.zeros(lo.size)
    if occ is None or occ[0].size == 0:
        return out
    step = max(1, CHUNK_CELLS // max(1, lo.size))
    for i in range(0, occ[0].size, step):
        a, d = occ[0][i:i + step], occ[1][i:i + step]
        inst = d <= 0
        ov = np.clip(np.minimum((a + d)[None, :], hi[:, None])
                     - np.maximum(a[None, :], lo[:, None]), 0.0, None)
        frac = np.where(inst[None, :], 0.0, ov / np.where(inst, 1.0, d)[None, :])
        frac += (inst[None, :] & (a[None, :] >= lo[:, None]) & (a[None, :] < hi[:, None]))
        out += frac.sum(axis=1)
    return out


def fit_regression(rows: RegressionRows, cores: float, window_s: float,
                   service_cpu_s: Mapping[str, float],
                   placement: Mapping[str, int] | None = None,
                   processes: Mapping[str, int] | None = None,
                   ) -> tuple[CpuModel, dict[str, float]]:
    """Fit the demands (module docstring) to ``rows`` (:func:`interval_rows`, all runs
    concatenated) and return the CPU model with its ``r2`` per service (fraction of the
    per-interval CPU variance the fit explains). ``placement``: placement-api requests per
    class (:func:`stacklens.forecast.cpu.placement_calls`), for the per-instance cost of a
    ``compute_resources`` hold: placement's ``lock_held`` demand is one provider read plus one
    read per instance on the host; ``processes``: per service, the processes that run its
    work (:func:`stacklens.forecast.cpu.process_counts`). Raises ``ValueError`` when a
    service has fewer intervals than unknowns."""
    from scipy.optimize import nnls  # only when calibrating with a shared CPU

    if not rows:
        raise ValueError("no measured service has sample intervals in the storm")

    demand: dict[str, float] = {}
    own: dict[str, float] = {}
    idle = 0.0
    r2: dict[str, float] = {}
    coefs: dict[str, dict[str, float]] = {}
    for svc, (x, y) in rows.items():
        a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if a.shape[0] < a.shape[1]:
            raise ValueError(f"{svc}: {a.shape[0]} sample intervals for {a.shape[1]} unknowns")
        coef, _ = nnls(a, b)
        ss = float(((b - b.mean()) ** 2).sum())
        r2[svc] = 1.0 - float(((b - a @ coef) ** 2).sum()) / ss if ss > 0 else 0.0
        idle += float(coef[-1])
        coefs[svc] = dict(zip(REG_STAGES[svc], map(float, coef[:-1]), strict=True))
        for st, c in coefs[svc].items():
            demand[st] = demand.get(st, 0.0) + c
            if OWNER.get(st) == svc:
                own[st] = own.get(st, 0.0) + c
    held = {st: own.get(st, 0.0) / d for st, d in demand.items()
            if st in ("conductor", "conductor_call", "scheduler") and d > 0
            and own.get(st, 0.0) < d}
    per_instance = inst_cal = 0.0
    pl_hold = coefs.get("placement-api", {}).get("lock_held", 0.0)
    if placement and placement.get("lock_held") and pl_hold > 0:
        inst_cal = placement.get("instance", 0) / placement["lock_held"]
        per_instance = pl_hold / (1.0 + inst_cal)
    by: dict[str, dict[str, float]] = {}
    for svc, cs in coefs.items():
        for st, c in cs.items():
            if c > 0:
                by.setdefault(st, {})[svc] = c
    cm = CpuModel(cores=cores, demand_s={k: v for k, v in demand.items() if v > 0},
                  demand_by=dict(sorted(by.items())), processes=dict(processes or {}),
                  background_s=0.0, service_cpu_s=dict(sorted(service_cpu_s.items())),
                  window_s=window_s, held=held, per_instance_s=per_instance,
                  instances_cal=inst_cal, idle_cores=idle, method="regression")
    return cm, r2

