"""The simulated cloud of the boot-storm model: its resources and the mechanisms every boot
goes through (workers, the shared CPU, RPC calls and oslo.messaging's reply poll, the
scheduler's placement decision with a stale view, the ``compute_resources`` lock). The boot
and delete workflow that uses them, and the sources of each rule: :mod:`stacklens.forecast.model`.
"""

from __future__ import annotations

import heapq
import math
import random
from collections.abc import Sequence

import simpy

from stacklens.forecast.calibrate import Calibration
from stacklens.forecast.cpu import PsCpu
from stacklens.forecast.demand import OWNER
from stacklens.forecast.dist import LoadDist
from stacklens.forecast.knobs import Knobs
from stacklens.forecast.records import BootRecord, DeleteRecord
from stacklens.forecast.rpcwait import caller_wait_s

__all__ = ["Cloud", "FifoPool", "UNSERVED_STAGES"]

#: The controller's stages that no simulated server serves: the RPC hops through the broker
#: (and the conductor's post-scheduling work booked with its hop) and placement's allocation
#: reads. Beyond the calibrated load nothing else in the model grows them, so with knob
#: ``saturation`` they grow at least in proportion to the load
#: (:meth:`~stacklens.forecast.dist.LoadDist.sample`). The API's, conductor's and scheduler's
#: stages are served on their simulated workers, whose queues grow once those saturate: the
#: asymptote on top would count that queue twice (with it, 8 scheduler workers no longer
#: beat 2 at 256 hosts, which the field's studies show they do).
UNSERVED_STAGES = ("to_conductor", "to_compute", "alloc_read", "delete_to_compute")


class _Busy:
    """Time-weighted busy counter of one resource kind (for 'which saturated first')."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self.busy_s = 0.0

    def add(self, dur_s: float) -> None:
        self.busy_s += dur_s


class FifoPool:
    """``capacity`` workers serving jobs first come, first served, each job's time on a worker
    known when it arrives: a job starts when it arrives or when the earliest worker frees,
    whichever is later (Kiefer & Wolfowitz 1955, the c-server form of Lindley's recursion).
    Exactly what a ``simpy.Resource`` of that capacity gives a process that requests it,
    holds it for the job and releases it, without the two or three events per job (the
    12,000-boot benchmark); jobs must arrive in time order (a simulation's clock does)."""

    def __init__(self, capacity: int):
        self._free_s = [0.0] * max(1, capacity)  # heap: when each worker is next free (s)

    def take(self, now_s: float, hold_s: float) -> float:
        """A job that arrives at ``now_s`` and holds a worker ``hold_s`` seconds: returns
        when it starts (s); the worker is taken until then plus ``hold_s``."""
        start = max(now_s, self._free_s[0])
        heapq.heapreplace(self._free_s, start + hold_s)
        return start


class Cloud:
    """The simulated cloud's resources and the mechanisms a boot goes through (the workflow
    itself: :mod:`stacklens.forecast.model`): the API, conductor and scheduler workers and
    their DB pools, the client's slots, per compute the build semaphore and the
    ``compute_resources`` lock, the placement view of each scheduler worker, the shared CPU
    (with a ``cpu`` section), the load index; stage times drawn or planned on the CPU, a
    worker held for its part of a stage, RPC calls and their callers' reply poll, the
    scheduler's pick and the lock's holds with their conductor calls."""
    def __init__(self, env: simpy.Environment, cal: Calibration, k: Knobs):
        self.env, self.cal, self.k = env, cal, k
        self.rng = random.Random(k.seed)
        n = k.computes
        self.api = simpy.Resource(env, k.api_workers * k.api_threads)
        self.api_db = simpy.Resource(env, k.api_workers * k.db_pool_size)
        self.conductor = simpy.Resource(env, k.conductor_workers)
        self.scheduler = simpy.Resource(env, k.scheduler_workers)
        self.sched_db = simpy.Resource(env, k.scheduler_workers * k.db_pool_size)
        #: without a shared CPU a worker's time is drawn before it is requested, so the
        #: conductor's and scheduler's workers are queues computed without events
        self.pools = {"nova-conductor": FifoPool(k.conductor_workers),
                      "nova-scheduler": FifoPool(k.scheduler_workers)}
        self.slots = simpy.Resource(env, k.concurrency)
        self.sem = [simpy.Resource(env, k.max_concurrent_builds) for _ in range(n)]
        self.lock = [simpy.Resource(env, 1) for _ in range(n)]
        self.used = [0] * n  # claimed instances (resource tracker)
        #: allocations on each host's resource provider: made by the scheduler's claim, gone
        #: with a failed claim or build, or after a delete's hold (what a hold reads)
        self.allocs = [0] * n
        self.n_full = 0  # hosts at host_capacity
        self.row = [0] * n  # compute_nodes rows as last written
        self.views = [[0] * n for _ in range(k.scheduler_workers)]
        self.placed = [0] * n
        self.in_flight = 0  # server side: creates started, not ended
        self.pipeline = 0  # creates between the API's start and a compute (control plane)
        self.piped: set[int] = set()
        self.client_in_flight = 0  # client slots held
        self.load_index = cal.load
        self.waiting = 0  # boots queued for a build slot or a compute_resources lock
        self.building = 0  # boots in their build phase (a build slot taken, not yet done) and
        #                    not waiting for the compute_resources lock: the ``work`` index
        self.sched_rr = 0
        self.open_work = k.servers  # boots and delete cleanups not ended (periodic stops at 0)
        self.all_ended = env.event()
        self.st: dict[str, LoadDist] = cal.stages
        self.low = {s: d.low_median() for s, d in cal.stages.items()}
        self.busy = {"nova-api": _Busy(k.api_workers * k.api_threads),
                     "nova-conductor": _Busy(k.conductor_workers),
                     "nova-scheduler": _Busy(k.scheduler_workers),
                     "compute build slots": _Busy(k.max_concurrent_builds * n)}
        self.lock_busy_s = [0.0] * n  # per host (pooled and busiest host: simulate)
        self.periodic_until = [0.0] * n  # a periodic hold taken on a free lock ends (s)
        #: per host: the periodic task's next run (s) while it sleeps (periodic), else None
        self.periodic_next: list[float | None] = [None] * n
        self.boots: list[BootRecord] = []
        self.deletes: list[DeleteRecord] = []
        cores = k.cores or (cal.cpu.cores if cal.cpu is not None else 0.0)
        self.cpu = (PsCpu(env, cal.cpu.free_cores(cores))
                    if cal.cpu is not None and cores > 0 else None)
        self.stretch: dict[tuple[str, int], list[float]] = {}
        #: per stage: [times drawn, of them beyond the calibrated load, highest load drawn at]
        self.drawn: dict[str, list[float]] = {}
        procs = cal.cpu.processes if cal.cpu is not None else {}
        self.caps: dict[str, float] = {s: float(n) if n > 0 else math.inf
                                       for s, n in procs.items()}
        self.caps.update({"nova-api": k.api_workers, "nova-conductor": k.conductor_workers,
                          "nova-scheduler": k.scheduler_workers})

    # -- helpers ----------------------------------------------------------------------------
    def _load(self, stage: str) -> float:
        """The current value of ``stage``'s load index (the model's, or its override)."""
        index = self.cal.stage_load.get(stage, self.load_index)
        if index == "client":
            return self.client_in_flight
        if index == "pipeline":
            return self.pipeline
        if index == "work":
            return self.pipeline + self.building
        if index == "active":
            return max(0, self.client_in_flight - self.waiting)
        return self.in_flight

    def _count(self, stage: str, d: LoadDist, load: float) -> None:
        """Count one time of ``stage`` drawn at ``load`` in :attr:`drawn`."""
        c = self.drawn.setdefault(stage, [0, 0, 0.0])
        c[0] += 1
        c[1] += d.beyond(load)
        c[2] = max(c[2], load)

    def draw(self, stage: str) -> float:
        """One time (s) of ``stage`` at the current load; without a shared CPU, scaled by the
        builds in flight against those its load bin saw in the calibration
        (:meth:`~stacklens.forecast.dist.LoadDist.contention`; stages calibrated with
        them only: :data:`~stacklens.forecast.samples.CONTROLLER_STAGES`); with knob
        ``saturation``, the :data:`UNSERVED_STAGES` grow beyond the calibrated load at least
        in proportion to it (:meth:`~stacklens.forecast.dist.LoadDist.sample`)."""
        d, load, cap = self.st[stage], self._load(stage), self.k.max_slowdown
        self._count(stage, d, load)
        v = d.sample(self.rng.random(), load, cap,
                     self.k.saturation and self.cpu is None and stage in UNSERVED_STAGES)
        if d.building and self.cpu is None and self.k.contention:
            v *= d.contention(load, self.building, cap)
        return v

    def plan(self, stage: str) -> tuple[float, float, int]:
        """(CPU demand s, other s, load bin) of one occurrence of ``stage``: without a shared
        CPU, (0, the drawn time, -1); with one, the demand and the non-CPU part
        (:meth:`stacklens.forecast.cpu.CpuModel.non_cpu`)."""
        cm = self.cal.cpu
        if self.cpu is None or cm is None:
            return 0.0, self.draw(stage), -1
        d, load = self.st[stage], self._load(stage)
        self._count(stage, d, load)
        return (cm.demand_s.get(stage, 0.0), cm.non_cpu(stage, d, self.rng.random(), load),
                d.bin_of(load))

    def parts(self, stage: str, demand_s: float, host: int | None,
              which: str) -> list[tuple[float, object, float]]:
        """``demand_s`` of ``stage`` as (CPU-seconds, process group, its process bound) parts:
        split among the services of the model's ``demand_by`` (``which``: ``all``, ``own``
        the stage's worker's service, ``other`` the rest) in proportion to their demands,
        each in its service's processes (nova-compute: the host's one process; the API,
        conductor and scheduler: their knobs' workers); without ``demand_by`` one job of its
        own."""
        cm = self.cal.cpu
        by = cm.demand_by.get(stage) if cm is not None else None
        if not by:
            return [(demand_s, None, math.inf)]
        own = OWNER.get(stage)
        sel = {s: d for s, d in by.items()
               if which == "all" or (s == own) == (which == "own")}
        tot = sum(sel.values())
        if tot <= 0:
            return [(demand_s, OWNER.get(stage), 1.0)] if which == "own" else []
        out: list[tuple[float, object, float]] = []
        for svc, d in sel.items():
            if svc == "nova-compute":
                out.append((demand_s * d / tot, (svc, host), 1.0))
            else:
                cap = self.caps.get(svc, math.inf)
                out.append((demand_s * d / tot, svc, cap))
        return out

    def cpu_run(self, stage: str, b: int, demand_s: float, host: int | None = None,
                which: str = "all"):
        """``demand_s`` CPU-seconds of ``stage`` on the shared CPU (:meth:`parts`, one after
        the other), its stretch recorded."""
        assert self.cpu is not None
        t0 = self.env.now
        for d, g, cap in self.parts(stage, demand_s, host, which):
            yield self.cpu.run(d, g, cap)
        o = self.stretch.setdefault((stage, b), [0.0, 0.0])
        o[0] += self.env.now - t0
        o[1] += demand_s

    def do(self, stage: str, p: tuple[float, float, int], always: bool = True,
           host: int | None = None):
        """Spend plan ``p`` (:meth:`plan`): the CPU part, then the rest (a zero rest is waited
        for only when ``always`` and there was no CPU part, as the model without CPU did);
        ``host``: the compute whose nova-compute runs the stage."""
        if p[0] > 0:
            yield from self.cpu_run(stage, p[2], p[0], host)
        if p[1] > 0 or (always and p[0] <= 0):
            yield self.env.timeout(p[1])

    def spend(self, stage: str, always: bool = True, host: int | None = None):
        """One occurrence of ``stage`` holding nothing; returns its seconds."""
        p = self.plan(stage)
        t0 = self.env.now
        yield from self.do(stage, p, always, host)
        return p[1] if self.cpu is None else self.env.now - t0

    def work(self, res: simpy.Resource, name: str, stage: str, extra_cpu_s: float = 0.0,
             extra_wait_s: float = 0.0):
        """Hold one worker of ``res`` for the stage's idle demand (with a shared CPU: for its
        CPU part on that CPU), then wait the rest. Returns the time spent waiting for the
        worker (an RPC message waiting in its queue: logged by nobody, so 'between
        components' in a measured trace). Without a shared CPU the conductor's and the
        scheduler's workers are :class:`FifoPool` queues (:meth:`queued`), ``res`` unused.
        ``extra_cpu_s`` more is spent holding the worker, ``extra_wait_s`` after it."""
        if self.cpu is not None:
            dem, rest, b = self.plan(stage)
            own = dem * (self.cal.cpu.held.get(stage, 1.0) if self.cal.cpu else 1.0)
            t0 = self.env.now
            with res.request() as r:
                yield r
                wait = self.env.now - t0
                t1 = self.env.now
                yield from self.cpu_run(stage, b, own + extra_cpu_s, which="own")
            self.busy[name].add(self.env.now - t1)
            if dem > own:  # another service's part (placement-api): the worker is free
                yield from self.cpu_run(stage, b, dem - own, which="other")
            if rest + extra_wait_s > 0:
                yield self.env.timeout(rest + extra_wait_s)
            return wait
        start, total = self.queued(name, stage, extra_cpu_s, extra_wait_s)
        wait = start - self.env.now
        yield self.env.timeout(wait + total)  # the worker's queue without events: one timeout
        return wait

    def queued(self, name: str, stage: str, extra_cpu_s: float = 0.0,
               extra_wait_s: float = 0.0) -> tuple[float, float]:
        """Without a shared CPU: one occurrence of ``stage`` drawn now, its idle demand (the
        lowest load's median) plus ``extra_cpu_s`` held on a worker of ``name``'s
        :class:`FifoPool`; returns (when it starts on the worker, its whole time from then,
        ``extra_wait_s`` included), both s."""
        total = self.draw(stage) + extra_cpu_s + extra_wait_s
        cpu = min(total, self.low[stage] + extra_cpu_s)
        self.busy[name].add(cpu)
        return self.pools[name].take(self.env.now, cpu), total

    def resumes_at(self, t0: float, reply_at: float) -> float:
        """When an RPC caller that sent its call at ``t0`` and has its reply back at
        ``reply_at`` resumes: at its next reply poll (``rpc_poll_s``, at least one:
        :mod:`stacklens.forecast.rpcwait`), or at once without polling."""
        return t0 + caller_wait_s(reply_at - t0, self.cal.rpc_poll_s)

    def reply_wait(self, t0: float):
        """The wait of an RPC caller that sent its call at ``t0`` and has its reply now
        (:meth:`resumes_at`); returns the seconds waited."""
        rest = self.resumes_at(t0, self.env.now) - self.env.now
        if rest > 0:
            yield self.env.timeout(rest)
        return max(0.0, rest)

    def conductor_call(self):
        """One RPC call of nova-compute to the conductor (``conductor_call`` on a conductor
        worker) and the caller's wait for its reply; returns (conductor s, waited s)."""
        c0 = self.env.now
        if self.cpu is not None:
            yield from self.work(self.conductor, "nova-conductor", "conductor_call")
            c = self.env.now - c0
            w = yield from self.reply_wait(c0)
            return c, w
        # work() without a shared CPU and the reply poll in one timeout (the 12,000-boot
        # benchmark: one event a call)
        start, total = self.queued("nova-conductor", "conductor_call")
        reply_at = start + total
        end = self.resumes_at(c0, reply_at)
        yield self.env.timeout(end - c0)
        return reply_at - c0, end - reply_at

    def conductor_calls(self, n: int):
        """``n`` :meth:`conductor_call` one after the other; returns their (conductor s, waited
        s) summed."""
        cond = waited = 0.0
        for _ in range(n):
            c, w = yield from self.conductor_call()
            cond += c
            waited += w
        return cond, waited

    def api_work(self, stage: str):
        """Hold one API worker for the whole stage (a sync WSGI worker serves one request);
        the trace starts when the worker takes the request (the access line's clock)."""
        p = self.plan(stage)
        with self.api.request() as r:
            yield r
            t0 = self.env.now
            yield from self.do(stage, p)
        self.busy["nova-api"].add(self.env.now - t0)
        return t0

    def pick(self, w: int, exclude: set[int]) -> int:
        """The scheduler worker ``w``'s choice of host (see module docstring, step 4): the
        emptiest in its view, ties to the first in host order (or shuffled), at random among
        the best ``host_subset_size``; full hosts (placement) and hosts tried are left out."""
        k = self.k
        v = self.views[w] if k.view_memory else self.row
        cap = k.host_capacity
        simple = k.host_subset_size <= 1 and not k.shuffle_best_same_weighed_hosts
        hosts: Sequence[int] = range(k.computes)
        if exclude or self.n_full:
            hosts = [h for h in hosts if h not in exclude and self.used[h] < cap]
        elif simple:  # the common case, at C speed: first host of the lowest count
            h = v.index(min(v))
            if k.view_memory:
                self.views[w][h] += 1
            return h
        if simple:
            h = min(hosts, key=v.__getitem__)
        else:
            best = heapq.nsmallest(max(1, k.host_subset_size), hosts, key=v.__getitem__)
            if k.shuffle_best_same_weighed_hosts:
                low = v[best[0]]
                same = [x for x in hosts if v[x] == low]
                if len(same) > 1:
                    self.rng.shuffle(same)
                    best = (same + [x for x in best if v[x] != low])[:len(best)]
            h = best[self.rng.randrange(len(best))]
        if k.view_memory:
            self.views[w][h] += 1
        return h

    def claim_one(self, h: int) -> None:
        self.used[h] += 1
        if self.used[h] == self.k.host_capacity:
            self.n_full += 1

    def free_one(self, h: int) -> None:
        if self.used[h] == self.k.host_capacity:
            self.n_full -= 1
        self.used[h] -= 1

    def row_update(self, h: int) -> None:
        """Host ``h``'s resource tracker rewrote its compute_nodes row: views refresh."""
        u = self.used[h]
        self.row[h] = u
        for view in self.views:
            view[h] = u

    def hold_stage(self, kind: str) -> str:
        """The stage a ``compute_resources`` hold of ``kind`` (claim, delete, periodic) draws
        from: its own (calibration format 3) without a shared CPU, else ``lock_held``, the
        demands of the CPU model being per ``lock_held``."""
        st = f"{kind}_held"
        return st if st in self.st and self.cpu is None else "lock_held"

    def periodic(self, h: int, first_s: float):
        """Host ``h``'s resource tracker periodic task (``update_available_resource``): every
        ``periodic_interval_s`` after its last run (first run ``first_s`` from now), one hold
        of the compute_resources lock of ``periodic_held``, queued with the claims; it stops
        once every boot has ended. A run that finds the lock free and nobody waiting holds it
        without a request (:meth:`lock_hold` waits for ``periodic_until``) and the task then
        sleeps: the runs that follow on an idle host are the same holds nobody waits for, so
        they are drawn without events when a claim or a delete next comes to the host
        (:meth:`wake_periodic`), or when the storm ends (the lock's utilisation)."""
        every = self.cal.periodic_interval_s
        yield self.env.timeout(first_s)
        lock = self.lock[h]
        while self.open_work > 0:
            held = self.draw("periodic_held")
            if lock.count == 0 and not lock.queue:  # a free lock: held without a request
                self.periodic_until[h] = self.env.now + held
                self.lock_busy_s[h] += held
                self.periodic_next[h] = self.env.now + held + every
                return
            with lock.request() as r:
                yield r
                t0 = self.env.now
                yield self.env.timeout(held)
                self.lock_busy_s[h] += self.env.now - t0
            yield self.env.timeout(every)

    def wake_periodic(self, h: int, restart: bool = True) -> None:
        """Host ``h``'s sleeping periodic task (:meth:`periodic`) catches up to now: each run
        due since it slept holds the free lock for a ``periodic_held`` drawn now (the one in
        progress, if any, sets ``periodic_until``); then it runs again at its next time
        (``restart``)."""
        t = self.periodic_next[h]
        if t is None:
            return
        self.periodic_next[h] = None
        every, now = self.cal.periodic_interval_s, self.env.now
        while t <= now:
            held = self.draw("periodic_held")
            self.periodic_until[h] = t + held
            self.lock_busy_s[h] += held
            t += held + every
        if restart:
            self.env.process(self.periodic(h, t - now))

    def wake_periodics(self) -> None:
        """Every sleeping periodic task catches up to the storm's end (not restarted)."""
        for h in range(len(self.periodic_next)):
            self.wake_periodic(h, restart=False)

    def lock_hold(self, h: int, n: int, on_held=None, kind: str = "claim"):
        """``n`` holds of host ``h``'s compute_resources lock; ``on_held`` runs at the start of
        the first (the claim decision); the row is rewritten at the end of it (the resource
        tracker saves the compute node before it releases the lock). A hold drawn from its
        kind's stage with an ``alloc_read`` stage in the model adds the resource tracker's
        read of the provider's allocations, one ``alloc_read`` per allocation on the host plus
        the provider's (:func:`stacklens.forecast.samples.alloc_loops`); with a shared CPU the
        placement demand grows with the same allocations."""
        stage = self.hold_stage(kind)
        m = {"claim": self.cal.calls_per_claim_hold,
             "delete": self.cal.calls_per_delete_hold}.get(kind, 0)
        calls = [0.0, 0.0]
        self.wake_periodic(h)
        building = 1 if kind == "claim" else 0  # a build waiting for the lock: not work
        for j in range(n):
            self.waiting += 1
            self.building -= building
            while self.periodic_until[h] > self.env.now:  # the periodic task holds it
                yield self.env.timeout(self.periodic_until[h] - self.env.now)
            with self.lock[h].request() as r:
                yield r
                self.waiting -= 1
                self.building += building
                p = self.plan(stage)
                if p[0] > 0 and self.cal.cpu is not None:  # placement reads per allocation
                    p = (self.cal.cpu.lock_demand(p[0], self.allocs[h]), p[1], p[2])
                if stage != "lock_held" and "alloc_read" in self.st:
                    # the read of the provider's allocations: the provider, then each consumer
                    # (``lock_held``, the shared CPU's stage, keeps the read in its samples)
                    p = (p[0], p[1] + (self.allocs[h] + 1) * self.draw("alloc_read"), p[2])
                if j == 0 and on_held is not None:
                    on_held()
                t0 = self.env.now
                yield from self.do(stage, p, host=h)
                c, w = yield from self.conductor_calls(m if j == 0 else 0)  # the claim's saves
                calls[0] += c  # under the lock
                calls[1] += w
                if j == 0:
                    self.row_update(h)
                self.lock_busy_s[h] += self.env.now - t0
        return calls
