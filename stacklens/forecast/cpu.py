"""The shared CPU of the host that runs the services: processor sharing, and the CPU demand of
each stage of the boot workflow fitted from the processes' measured CPU time.

**Why.** On the lab every controller service, MariaDB, RabbitMQ and the fake computes share one
host of a few cores. A stage's time is then its CPU work, slowed down by everything else that
wants the CPU at the same moment, plus what is not CPU (waits for the database, the broker,
locks, sleeps). The load-binned distributions of :mod:`stacklens.forecast.dist` hold that
slowdown only at the loads they were measured at; this module makes it a mechanism, so a bigger
storm slows the stages down by the CPU it actually asks for.

**Demand: the utilisation law.** ``U = X * D`` (Lazowska, Zahorjan, Graham, Sevcik,
*Quantitative System Performance*, Prentice-Hall 1984, section 3.2): a service whose processes
used ``U * T`` CPU-seconds during a window ``T`` in which it did ``X * T`` units of work spent
``D`` CPU-seconds per unit. Here the CPU-seconds are the ``resource_samples`` of the run (psutil,
per service process tree: :mod:`stacklens.resources`) over the storm window (the first
``server.create``'s start to the last trace's end), the units are the stage samples of the
calibration (one per API request, conductor call, build, ...). A service that serves several
stages shares its CPU-seconds among them in proportion to their measured total time
(:data:`SERVICE_STAGES`; RabbitMQ's go to the RPC transits). placement-api's are shared per
request among the stages that make them, read from its access lines (:data:`PLACEMENT_CALLS`):
the scheduler's claim, the resource tracker's reads under the ``compute_resources`` lock (one
per instance on the host, so a hold costs more on a crowded host) and the delete's cleanup;
without access lines they all go to the ``scheduler`` stage, whose span covers placement's
part. The other processes measured (MariaDB, glance-api, the neutron stand-in:
:data:`BACKGROUND`) and placement's other requests are a *background* demand per boot, a CPU
job nobody waits for, started when nova-api has accepted the boot.

**Sharing: egalitarian processor sharing** (Kleinrock, "Time-shared systems: a theoretical
treatment", JACM 14(2), 1967): with ``n`` CPU jobs in progress on ``cores`` cores, each progresses
at rate ``min(1, cores / n)``. A stage's time is its demand at that rate plus its non-CPU part:
the measured time minus the demand stretched by the contention the model itself shows at the
calibration's settings (``stretch``, per stage and load bin: :mod:`stacklens.forecast.cpufit`).
Beyond the calibrated load the non-CPU part is not extrapolated (the top bin's distribution):
the growth comes from the CPU, the worker queues, the build semaphores and the locks simulated.

**Limits.** Only what the runs' ``resource_samples`` show is counted: on a machine shared with
other jobs, their CPU is invisible (``cores`` is the host's, not what was free). nova-api's CPU
includes the client's list polling, booked to the create and delete requests (with the
utilisation law; the regression of :mod:`stacklens.forecast.demand` leaves it in the
service's idle cores). With per-service demands (``demand_by``) a service's work runs in its
own processes, at most one core each (:class:`PsCpu` groups); with the utilisation law only
the worker resources of :mod:`stacklens.forecast.model` bound it.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from stacklens.forecast.dist import LoadDist
from stacklens.schema.capture import HOST_CPU_SERVICE

if TYPE_CHECKING:  # simpy only when simulating (calibrate and the CLI import this module)
    import simpy

__all__ = ["BACKGROUND", "CpuModel", "PLACEMENT_CALLS", "PsCpu", "SERVICE_STAGES",
           "UNSEEN_GROUP", "fit_demands", "host_cpu_seconds", "placement_calls",
           "process_counts", "run_cpu_seconds"]

#: The :class:`PsCpu` group of the unseen CPU (:attr:`CpuModel.unseen_s`): one process at
#: most, as the lab's load driver is.
UNSEEN_GROUP = "unseen"

#: Which stages each measured service's CPU-seconds are shared among (calibrate.STAGES names).
SERVICE_STAGES: dict[str, tuple[str, ...]] = {
    "nova-api": ("api", "delete_api"),
    "nova-conductor": ("conductor", "conductor_call"),
    "nova-scheduler": ("scheduler",),
    "placement-api": ("scheduler",),
    "nova-compute": ("compute_pre", "build", "lock_held", "finish", "teardown", "cleanup"),
    "rabbitmq": ("to_conductor", "to_compute", "delete_to_compute"),
}

#: Measured processes that no stage stands for: a per-boot background CPU job.
BACKGROUND = ("mariadb", "glance-api", "neutron-standin")

#: placement-api requests (method, path with ids as ``{id}``) and the stage that makes them:
#: the scheduler's claim; the resource tracker under the ``compute_resources`` lock (one
#: provider's allocations, then each instance's: ``instance``); the delete's cleanup.
PLACEMENT_CALLS: dict[tuple[str, str], str] = {
    ("GET", "/allocation_candidates"): "scheduler",
    ("PUT", "/allocations/{id}"): "scheduler",
    ("GET", "/resource_providers/{id}/allocations"): "lock_held",
    ("GET", "/allocations/{id}"): "instance",
    ("DELETE", "/allocations/{id}"): "cleanup",
}


class _Group:
    """The CPU jobs of one process group in :class:`PsCpu`: ``cap`` processes at most run
    them (inf: a thread per job), ``v`` is the virtual work each of its jobs has received."""

    __slots__ = ("cap", "jobs", "v")

    def __init__(self, cap: float):
        self.cap = cap
        self.v = 0.0
        self.jobs: list[tuple[float, int, simpy.Event]] = []  # (end on v, seq, event)


class PsCpu:
    """Processor sharing of ``cores`` cores among processes, in a SimPy environment.

    :meth:`run` starts a job of ``demand_s`` CPU-seconds in a process group (a service's
    worker processes, or one compute's nova-compute) and returns the event that fires when it
    is done. A group with ``n`` jobs and at most ``cap`` processes keeps ``min(cap, n)``
    processes runnable; the operating system shares the cores equally among all runnable
    processes (Linux CFS at equal weights: each gets ``min(1, cores / A)`` of a core, ``A``
    runnable processes in all), and a process's share is split equally among its group's
    jobs (eventlet green threads and gunicorn workers of one CPython process share its one
    core: the GIL). So every job of a group advances at the same rate and one *virtual work*
    clock per group orders its jobs: a job started at ``v0`` ends when the group's ``v``
    reaches ``v0 + demand_s``; only the earliest end over the groups needs a wake-up. An
    arrival never speeds a job up, so a pending wake-up is at worst early (it recomputes and
    sleeps again). Jobs without a group are each a process of their own (one group of
    unbounded ``cap``): with no groups this is egalitarian processor sharing (Kleinrock
    1967). Cost: O(log n + G) per job, ``G`` the groups with jobs in progress."""

    def __init__(self, env: simpy.Environment, cores: float):
        self.env = env
        self.cores = float(cores)
        self.t = 0.0  # simulated time of the last update, s
        self.groups: dict[object, _Group] = {}  # groups with jobs in progress
        self.seq = 0
        self.wake_at = math.inf  # simulated time of the pending wake-up, s
        self.busy_s = 0.0  # core-seconds given to jobs (for utilisation)

    def _share(self) -> float:
        """The share of a core each runnable process gets now."""
        a = sum(min(g.cap, len(g.jobs)) for g in self.groups.values())
        return min(1.0, self.cores / a) if a else 1.0

    @staticmethod
    def _rate(g: _Group, share: float) -> float:
        n = len(g.jobs)
        return min(g.cap, n) * share / n

    def _advance(self) -> None:
        now = self.env.now
        if now > self.t:
            dt = now - self.t
            share = self._share()
            for g in self.groups.values():
                r = self._rate(g, share)
                g.v += dt * r
                self.busy_s += dt * r * len(g.jobs)
            self.t = now

    def _arm(self) -> None:
        """Schedule a wake-up at the earliest job end when none is pending before it."""
        if not self.groups:
            return
        share = self._share()
        at = self.env.now + min(max(0.0, (g.jobs[0][0] - g.v) / self._rate(g, share))
                                for g in self.groups.values())
        if at < self.wake_at - 1e-12:
            self.wake_at = at
            ev = self.env.timeout(at - self.env.now)
            ev.callbacks.append(self._wake)

    def _wake(self, _ev: simpy.Event) -> None:
        if self.env.now + 1e-12 < self.wake_at:
            return  # superseded by an earlier wake-up
        self.wake_at = math.inf
        self._advance()
        done = []
        for key, g in list(self.groups.items()):
            eps = 1e-9 * max(1.0, g.v)
            while g.jobs and g.jobs[0][0] <= g.v + eps:
                done.append(heapq.heappop(g.jobs)[2])
            if not g.jobs:
                del self.groups[key]
        for ev in done:
            ev.succeed()
        self._arm()

    def run(self, demand_s: float, group: object = None, cap: float = math.inf) -> simpy.Event:
        """A job of ``demand_s`` CPU-seconds in process group ``group`` (at most ``cap``
        processes; None: a process of its own); the returned event fires when it is done."""
        ev = self.env.event()
        if demand_s <= 0:
            ev.succeed()
            return ev
        self._advance()
        self.seq += 1
        g = self.groups.get(group)  # None: the jobs that are each a process of their own
        if g is None:
            g = self.groups[group] = _Group(cap)
        heapq.heappush(g.jobs, (g.v + demand_s, self.seq, ev))
        self._arm()
        return ev


@dataclass(frozen=True)
class CpuModel:
    """The CPU side of a calibration: ``cores`` of the calibration host; ``demand_s`` per stage
    (CPU-seconds per stage occurrence, utilisation law); ``background_s`` (CPU-seconds per boot
    of the :data:`BACKGROUND` processes); ``stretch`` per stage and load bin (the CPU part's
    elapsed / demand in the model at the calibration's settings; 1 = no contention);
    ``service_cpu_s`` (measured CPU-seconds per service, summed over the runs) and
    ``window_s`` (storm windows, summed) for the record; ``held``: for a stage whose demand
    is partly another service's (the scheduler stage: placement-api), the fraction that runs
    in the stage's own worker process (1 when absent): the rest runs on the shared CPU while
    that worker is free for other requests; ``per_instance_s`` and ``instances_cal``: the
    placement-api CPU of one ``compute_resources`` hold per instance on the host (the resource
    tracker reads each instance's allocations under the lock: ``GET /allocations/{id}``), and
    the mean instances per host at a hold in the calibration runs; ``idle_cores``: the cores
    the measured processes keep busy whatever the boots do (the regression's intercepts,
    :mod:`stacklens.forecast.demand`; 0 with the utilisation law): the boots run on
    ``cores - idle_cores``; ``method``: ``utilisation`` (:func:`fit_demands`) or
    ``regression``; ``demand_by``: per stage, its demand per service (regression: each part
    runs in that service's processes, :class:`PsCpu` groups; empty: one job of its own);
    ``processes``: per service, the processes that run its work (0: multi-threaded, no
    bound), as the calibration runs' samples showed them; ``unseen_s``: CPU-seconds per boot the
    host spent outside every measured service (the whole machine's busy time, ``cpu:host``,
    less the services' sum: the load driver polling the servers, the recorders, the kernel's
    loopback networking; :func:`host_cpu_seconds`), a job per accepted boot in one process of
    its own (:data:`UNSEEN_GROUP`) that nobody waits for; 0 when the runs have no
    ``cpu:host`` rows."""

    cores: float
    demand_s: dict[str, float]
    background_s: float = 0.0
    stretch: dict[str, tuple[float, ...]] = field(default_factory=dict)
    service_cpu_s: dict[str, float] = field(default_factory=dict)
    window_s: float = 0.0
    held: dict[str, float] = field(default_factory=dict)
    per_instance_s: float = 0.0
    instances_cal: float = 0.0
    idle_cores: float = 0.0
    method: str = "utilisation"
    demand_by: dict[str, dict[str, float]] = field(default_factory=dict)
    processes: dict[str, int] = field(default_factory=dict)
    unseen_s: float = 0.0

    def free_cores(self, cores: float) -> float:
        """The cores left to the boots on a host of ``cores``: ``cores - idle_cores``, at
        least a tenth of the host."""
        return max(0.1 * cores, cores - self.idle_cores)

    def lock_demand(self, demand_s: float, instances: int) -> float:
        """CPU demand (s) of one ``compute_resources`` hold on a host with ``instances``
        claimed: ``demand_s`` (the calibration's mean) moved by ``per_instance_s`` per instance
        away from the calibration's mean ``instances_cal`` (at least 0)."""
        return max(0.0, demand_s + self.per_instance_s * (instances - self.instances_cal))

    def non_cpu(self, stage: str, dist: LoadDist, u: float, load: float) -> float:
        """The non-CPU part (s) of ``stage`` at quantile ``u`` and ``load``: the measured time
        at ``load`` (capped at the top calibrated load) minus the demand stretched as at
        calibration, at least 0."""
        b = dist.bin_of(load)
        total = dist.sample(u, min(load, dist.loads[-1]))
        st = self.stretch.get(stage)
        s = st[b] if st and b < len(st) else 1.0
        return max(0.0, total - self.demand_s.get(stage, 0.0) * s)

    def to_json(self) -> dict[str, Any]:
        """JSON form (the ``cpu`` section of a calibration model)."""
        return {"cores": self.cores, "window_s": round(self.window_s, 3),
                "background_s": round(self.background_s, 6),
                "demand_s": {k: round(v, 6) for k, v in self.demand_s.items()},
                "stretch": {k: [round(x, 4) for x in v] for k, v in self.stretch.items()},
                "held": {k: round(v, 4) for k, v in self.held.items()},
                "per_instance_s": round(self.per_instance_s, 6),
                "instances_cal": round(self.instances_cal, 3),
                "idle_cores": round(self.idle_cores, 4), "method": self.method,
                "demand_by": {k: {s: round(x, 6) for s, x in v.items()}
                              for k, v in self.demand_by.items()},
                "processes": dict(self.processes),
                "unseen_s": round(self.unseen_s, 6),
                "service_cpu_s": {k: round(v, 3) for k, v in self.service_cpu_s.items()}}

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> CpuModel:
        """Read :meth:`to_json`'s form (``KeyError`` / ``ValueError`` on a bad document)."""
        return CpuModel(cores=float(d["cores"]),
                        demand_s={str(k): float(v) for k, v in d["demand_s"].items()},
                        background_s=float(d.get("background_s", 0.0)),
                        stretch={str(k): tuple(float(x) for x in v)
                                 for k, v in (d.get("stretch") or {}).items()},
                        service_cpu_s={str(k): float(v)
                                       for k, v in (d.get("service_cpu_s") or {}).items()},
                        window_s=float(d.get("window_s", 0.0)),
                        held={str(k): float(v) for k, v in (d.get("held") or {}).items()},
                        per_instance_s=float(d.get("per_instance_s", 0.0)),
                        instances_cal=float(d.get("instances_cal", 0.0)),
                        idle_cores=float(d.get("idle_cores", 0.0)),
                        method=str(d.get("method", "utilisation")),
                        demand_by={str(k): {str(s): float(x) for s, x in v.items()}
                                   for k, v in (d.get("demand_by") or {}).items()},
                        processes={str(k): int(v)
                                   for k, v in (d.get("processes") or {}).items()},
                        unseen_s=float(d.get("unseen_s", 0.0)))


def _clipped_cpu_s(rows: pl.DataFrame, keys: tuple[str, ...], t0_ns: int,
                   t1_ns: int) -> pl.DataFrame:
    """``rows`` with ``cpu_s``: each row's ``cpu_pct`` (percent of one CPU) over the interval
    since the previous row of the same ``keys``, that interval clipped to ``[t0_ns, t1_ns]``
    (CPU-seconds); rows without a previous one or a ``cpu_pct`` dropped."""
    s = rows.sort("ts_ns").with_columns(prev=pl.col("ts_ns").shift(1).over(*keys))
    s = s.filter(pl.col("cpu_pct").is_not_null() & pl.col("prev").is_not_null())
    lo = pl.max_horizontal(pl.col("prev"), pl.lit(t0_ns))
    hi = pl.min_horizontal(pl.col("ts_ns"), pl.lit(t1_ns))
    return s.with_columns(cpu_s=pl.col("cpu_pct") / 100.0 * ((hi - lo).clip(lower_bound=0) / 1e9))


def run_cpu_seconds(samples: pl.DataFrame, t0_ns: int, t1_ns: int) -> dict[str, float]:
    """CPU-seconds per service (all its hosts) between ``t0_ns`` and ``t1_ns`` from a run's
    ``resource_samples``: each sample's ``cpu_pct`` covers the interval since the previous
    sample of the same target; intervals are clipped to the window."""
    s = _clipped_cpu_s(samples.filter(pl.col("pid").is_not_null()), ("service", "host", "pid"),
                       t0_ns, t1_ns)
    g = s.group_by("service").agg(pl.col("cpu_s").sum())
    return {str(k): float(v) for k, v in g.rows()}


def host_cpu_seconds(samples: pl.DataFrame, t0_ns: int, t1_ns: int) -> float | None:
    """The whole machine's busy CPU-seconds between ``t0_ns`` and ``t1_ns`` from a run's
    ``resource_samples`` rows of service ``cpu:host`` (:mod:`stacklens.resources.recorder`:
    percent of one CPU over the interval since the previous row), intervals clipped to the
    window as in :func:`run_cpu_seconds`; None when the run has no such rows (a run recorded
    before they existed, or on a remote host)."""
    s = _clipped_cpu_s(samples.filter((pl.col("service") == HOST_CPU_SERVICE)
                                      & pl.col("pid").is_null()), ("host",), t0_ns, t1_ns)
    return float(s["cpu_s"].sum()) if s.height else None


def process_counts(samples: pl.DataFrame) -> dict[str, int]:
    """Per service of a run's ``resource_samples``: the processes that run its work, for
    :class:`PsCpu`'s groups. A process tree with about one thread per process is CPython
    processes (eventlet, gunicorn): its workers, the tree's processes less the parent when
    there are several; a tree with many threads per process (MariaDB, RabbitMQ's Erlang VM)
    runs on every core: 0 (no bound). Per host the largest seen, summed over hosts."""
    s = samples.filter(pl.col("pid").is_not_null() & pl.col("n_procs").is_not_null())
    g = s.group_by("service", "host", "pid").agg(pl.col("n_procs").max(),
                                                 pl.col("threads").max())
    out: dict[str, int] = {}
    for svc, _h, _p, n, th in g.rows():
        n = int(n)
        if th is not None and int(th) > 2 * n:
            out[str(svc)] = 0
        elif out.get(str(svc), -1) != 0:
            out[str(svc)] = out.get(str(svc), 0) + (n - 1 if n > 1 else 1)
    return dict(sorted(out.items()))


def placement_calls(events: pl.DataFrame, t0_ns: int, t1_ns: int) -> dict[str, int]:
    """placement-api requests between ``t0_ns`` and ``t1_ns`` per :data:`PLACEMENT_CALLS`
    class (``other`` for the rest), from a run's ``events`` (access lines)."""
    e = events.filter((pl.col("service") == "placement-api") & pl.col("http_method").is_not_null()
                      & pl.col("ts_ns").is_between(t0_ns, t1_ns))
    e = e.select("http_method", pl.col("http_path").str.replace(r"\?.*", "")
                 .str.replace_all(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
                                  "{id}").alias("p"))
    out: dict[str, int] = {}
    for m, p, n in e.group_by("http_method", "p").len().rows():
        k = PLACEMENT_CALLS.get((str(m), str(p)), "other")
        out[k] = out.get(k, 0) + int(n)
    return out


def fit_demands(cpu_s: Mapping[str, float], counts: Mapping[str, int],
                time_s: Mapping[str, float], boots: int, cores: float,
                window_s: float, placement: Mapping[str, int] | None = None) -> CpuModel:
    """Per-stage CPU demand by the utilisation law (module docstring). ``cpu_s``: CPU-seconds
    per service over the storm windows; ``counts`` and ``time_s``: per stage, the samples
    and their summed measured time (s) over the same runs; ``boots``: creates measured;
    ``placement``: placement-api requests per class (:func:`placement_calls`): when given,
    placement's CPU-seconds go to the stages that make the requests, the same per request
    (the rest to the background), and a hold of the ``compute_resources`` lock costs
    placement CPU per instance on the host; else all to the scheduler stage.
    Stretch starts at 1 (no contention; :mod:`stacklens.forecast.cpufit` fits it)."""
    demand: dict[str, float] = {}
    own: dict[str, float] = {}
    bg = sum(cpu_s.get(s, 0.0) for s in BACKGROUND)
    per_instance = inst_cal = 0.0
    n_req = sum((placement or {}).values())
    if placement and n_req and cpu_s.get("placement-api", 0.0) > 0:
        per_req = cpu_s["placement-api"] / n_req
        for st, n in (("scheduler", placement.get("scheduler", 0)),
                      ("lock_held", placement.get("lock_held", 0) + placement.get("instance", 0)),
                      ("cleanup", placement.get("cleanup", 0))):
            if n and counts.get(st):
                demand[st] = per_req * n / counts[st]
            else:
                bg += per_req * n
        bg += per_req * placement.get("other", 0)
        if placement.get("lock_held") and counts.get("lock_held"):
            per_instance = per_req * placement["lock_held"] / counts["lock_held"]
            inst_cal = placement.get("instance", 0) / placement["lock_held"]
    for svc, stages in SERVICE_STAGES.items():
        if svc == "placement-api" and per_instance:
            continue
        c = cpu_s.get(svc, 0.0)
        tot = sum(time_s.get(st, 0.0) for st in stages)
        if c <= 0 or tot <= 0:
            continue
        for st in stages:
            if counts.get(st):
                d = c * time_s.get(st, 0.0) / tot / counts[st]
                demand[st] = demand.get(st, 0.0) + d
                if svc != "placement-api":
                    own[st] = own.get(st, 0.0) + d
    held = {st: own.get(st, 0.0) / d for st, d in demand.items()  # stages on a worker
            if st in ("conductor", "conductor_call", "scheduler") and d > 0
            and own.get(st, 0.0) < d}
    return CpuModel(cores=cores, demand_s=demand, background_s=bg / boots if boots else 0.0,
                    service_cpu_s=dict(sorted(cpu_s.items())), window_s=window_s, held=held,
                    per_instance_s=per_instance, instances_cal=inst_cal)
