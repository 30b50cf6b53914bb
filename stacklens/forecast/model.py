"""The boot-storm model: nova's boot and delete workflow as a SimPy discrete-event simulation.

One simulated boot follows the path of the field notes (section 2) and of nova 2025.1's code:

1. **client**: one of ``concurrency`` slots, held from the POST until the server is gone
   (``stacklens run``'s driver, ``drive/driver.py``: delete ``when: each``); it sees ACTIVE and
   DELETED at its next list poll (``poll_interval_s``).
2. **nova-api** (``api`` stage) on one of ``api_workers`` x ``api_threads`` (the lab's
   gunicorn sync workers serve one request each; the trace starts when a worker takes the
   request), holding a DB connection of its process pool (``db_pool_size``, QueuePool error
   after ``db_pool_timeout_s``; the scheduler holds one from its pool for its whole stage, as
   the lab's 64-compute run that hit "QueuePool limit of size 10 overflow 20"). The quota
   write may hit a deadlock (``db_deadlock_rate``, multi-writer Galera, field notes section 4):
   oslo.db's ``wrap_db_retry`` retries it after 1, 2, 4... s (at most 10 s), up to
   ``db_max_retries`` times, then the request fails with HTTP 500 ("This result object does not
   return rows").
3. RPC cast to **nova-conductor** (``to_conductor``), ``conductor`` stage on one of
   ``conductor_workers``; RPC call ``select_destinations`` to **nova-scheduler**
   (``scheduler`` stage on one of ``scheduler_workers``, plus per compute the host loop
   ``scheduler_host``, the refresh of each host's state from the database that the runs' DEBUG
   lines time (:func:`stacklens.forecast.samples.host_loops`; its idle-cloud median held on
   the worker, the rest under load waited; booked to nova-scheduler whole) and the
   ``scheduler_per_host_s`` knob: the filters and weighers walk every host), reply and cast to
   the compute (``to_compute``: its idle-cloud median is RPC transit, the rest under load the
   conductor's post-scheduling work waiting for a CPU, booked to nova-conductor).
4. **placement decision with a stale view**: a host's row (``compute_nodes``) counts the
   instances its resource tracker has claimed; it is rewritten at each claim and each delete,
   so it does not count the builds still queued at the host (semaphore, ``compute_resources``
   lock). With ``view_memory`` (nova's ``HostState.consume_from_request`` with
   ``set_update_time_on_success``: ``nova/scheduler/host_manager.py``) each scheduler worker
   also counts its own picks until the host's row is rewritten, so each worker misses the
   others' picks; without it (what the 2025.1 lab showed: every boot of the first 10 s of a
   burst went to one host) every worker sees only the rows.
   The weigher prefers the emptiest host in the view and, with equal weights, the first one in
   host order (``shuffle_best_same_weighed_hosts=False``), then picks at random among the best
   ``host_subset_size``. This is the stale-view effect of the lab notes (67 of 100 servers on
   one of 8 hosts with default settings) and of the public studies (more scheduler workers,
   more retries from stale views).
5. **nova-compute** of the chosen host: ``compute_pre``, then the build semaphore
   (``max_concurrent_builds``), the claim under the host's ``compute_resources`` lock
   (``locks_per_build`` holds of ``lock_held``; each hold also reads the host's allocations
   from placement, ``alloc_read`` per allocation plus the provider's: nova 2025.1's
   ``_update_to_placement`` reads every consumer on the provider, the boots scheduled there
   and not yet claimed included, so a burst's holds lengthen as it lands); a claim beyond
   ``host_capacity`` (or a build failure, ``build_failure_rate``) is rescheduled through the
   conductor and scheduler, up to ``max_attempts`` attempts in all (then the boot fails:
   "Exceeded maximum number of retries").
   The build's own work (``build``) is followed by ``conductor_calls`` RPC calls to the
   conductor (object saves, each on a conductor worker: ``conductor_call``); the claim's hold
   makes ``calls_per_claim_hold`` more, a delete's ``calls_per_delete_hold``. Every RPC
   caller (these, and the conductor waiting for ``select_destinations``) resumes at its next
   reply poll (``rpc_poll_s``: oslo.messaging >= 14.8.0 checks every 0.5 s,
   :mod:`stacklens.forecast.rpcwait`). ACTIVE at the end.
6. **delete**: nova-api (``delete_api``), cast to the compute, ``teardown``; the instance is
   then saved DELETED, which the client's next poll sees (its slot is free), while the
   resource cleanup goes on under the ``compute_resources`` lock (``locks_per_delete`` holds
   plus ``cleanup``), then ``delete_rest``; the host's row is rewritten (views refresh).
   The resource tracker's periodic task holds the same lock (``periodic_held`` every
   ``periodic_interval_s``) when the calibration measured it.

Each stage's time is drawn from its calibrated distribution at the current load (the
calibration's ``load``: by default the boots between the API and a compute, the control plane's
work in progress; or the client's slots in use, or the server's boots in flight), see
:mod:`stacklens.forecast.dist`; beyond the highest calibrated load along the fitted line, and
the stages no simulated worker serves (the RPC hops, placement's allocation reads:
:data:`~stacklens.forecast.cloud.UNSERVED_STAGES`) at least in proportion to the load (knob
``saturation``). A process (API, conductor,
scheduler worker) is a single-CPU server: it is held for the stage's idle-cloud demand (the
median of the lowest calibrated load bin) and released for the rest of the stage, which is the
load-dependent waiting the calibration measured (shared CPU, database, broker). So worker counts
matter only when the processes themselves saturate, as in the seeds' large storms.

With a ``cpu`` section in the model (:mod:`stacklens.forecast.cpu`, calibrated from runs with
resource samples) the host's CPU is simulated instead of drawn: each stage is its CPU demand on
a processor-sharing CPU of ``cores`` cores (a worker is held for its own process's part) plus
its non-CPU part; each accepted boot adds a background CPU job (database, image, network
services) and one of the CPU the host spent outside every measured service (the load driver,
the kernel: :attr:`~stacklens.forecast.cpu.CpuModel.unseen_s`, in one process), and a
``compute_resources`` hold's placement reads grow with the host's instances.
Without it the model is exactly the one above.
"""

from __future__ import annotations

import gc

import simpy

from stacklens.forecast.calibrate import Calibration
from stacklens.forecast.cloud import Cloud
from stacklens.forecast.cpu import UNSEEN_GROUP
from stacklens.forecast.knobs import Knobs
from stacklens.forecast.records import BootRecord, DeleteRecord, SimResult, summary

__all__ = ["BootRecord", "DeleteRecord", "SimResult", "simulate", "summary"]

QUEUE_POOL_ERROR = "QueuePool limit of size 10 overflow 20 reached, connection timed out"
DEADLOCK_ERROR = "This result object does not return rows. It has been closed automatically."
RETRIES_ERROR = "Exceeded maximum number of retries. Exhausted all hosts available for " \
                "retrying build failures"


class _Cloud(Cloud):
    """The boot and delete workflow (module docstring) on the mechanisms of :class:`Cloud`."""

    def boot(self, i: int):
        env, k = self.env, self.k
        rec = BootRecord(i=i)
        self.boots.append(rec)
        slot = self.slots.request()
        yield slot
        self.client_in_flight += 1
        rec.submit_s = rec.start_s = env.now
        ok = yield from self._api(rec)
        rec.accepted_s = env.now
        if ok:
            ok = yield from self._schedule_and_build(rec)
        self.in_flight -= 1
        self.pipe(rec, False)
        rec.end_s = env.now
        if not ok:
            rec.outcome = "failed"
            self.client_in_flight -= 1
            self.work_ended()
            self.slots.release(slot)
            return
        rec.outcome = "retried" if rec.retries else "success"
        yield env.timeout(self._to_poll(env.now))
        rec.seen_active_s = env.now
        if k.delete and rec.host is not None:
            yield from self._delete(rec)
        self.client_in_flight -= 1
        self.work_ended()
        self.slots.release(slot)

    def pipe(self, rec: BootRecord, enter: bool) -> None:
        """Boot ``rec`` enters (API start, a reschedule) or leaves (reached a compute, ended)
        the control plane: the ``pipeline`` load index."""
        if enter and rec.i not in self.piped:
            self.piped.add(rec.i)
            self.pipeline += 1
        elif not enter and rec.i in self.piped:
            self.piped.discard(rec.i)
            self.pipeline -= 1

    def work_ended(self) -> None:
        """A boot or a delete's cleanup ended; the storm ends with the last."""
        self.open_work -= 1
        if self.open_work == 0:
            self.all_ended.succeed()

    def _to_poll(self, t: float) -> float:
        p = self.k.poll_interval_s
        return (-t) % p if p > 0 else 0.0

    def _api(self, rec: BootRecord):
        """POST /v2.1/servers on a worker: a DB connection from the worker's pool (waited
        for at most ``db_pool_timeout_s``), the stage, the quota write with deadlock retries."""
        env, k = self.env, self.k
        with self.api.request() as w:
            yield w
            rec.start_s = t0 = env.now
            self.in_flight += 1  # load: boots the server side has started, not yet ended
            self.pipe(rec, True)
            # drawn at the load when its span starts, itself counted, as calibrated (a
            # measured sample's load counts the boots in flight at its start, its own too)
            p = self.plan("api")
            db = self.api_db.request()
            if not db.triggered:
                got = yield db | env.timeout(k.db_pool_timeout_s)
                if db not in got:
                    db.cancel()
                    rec.error, rec.error_service, rec.http_status = (
                        QUEUE_POOL_ERROR, "nova-api", 500)
            if rec.error is None:
                try:
                    yield from self.do("api", p)
                    for attempt in range(k.db_max_retries + 1):
                        if k.db_deadlock_rate <= 0 or self.rng.random() >= k.db_deadlock_rate:
                            break
                        if attempt == k.db_max_retries:
                            rec.error, rec.error_service, rec.http_status = (
                                DEADLOCK_ERROR, "nova-api", 500)
                            break
                        yield env.timeout(min(10.0, k.db_retry_interval_s * 2 ** attempt))
                finally:
                    self.api_db.release(db)
        self.busy["nova-api"].add(env.now - t0)
        rec.stages["nova-api"] = env.now - t0
        rec.spans.append(("nova-api", "simulated-controller", "POST /v2.1/servers", t0, env.now))
        if self.cpu is not None and self.cal.cpu is not None and rec.error is None:
            self.cpu.run(self.cal.cpu.background_s)  # DB, image, network work: nobody waits
            # the host's CPU outside the services (the load driver, the kernel): one process
            self.cpu.run(self.cal.cpu.unseen_s, UNSEEN_GROUP, 1.0)
        return rec.error is None

    def _schedule_and_build(self, rec: BootRecord):
        env, k, st = self.env, self.k, rec.stages
        tried: set[int] = set()
        hop = yield from self.spend("to_conductor")
        st["between components"] = st.get("between components", 0.0) + hop
        while True:
            t0 = env.now
            q = yield from self.work(self.conductor, "nova-conductor", "conductor")
            st["nova-conductor"] = st.get("nova-conductor", 0.0) + env.now - t0 - q
            st["between components"] += q
            t0 += q
            t1 = env.now
            w = self.sched_rr % k.scheduler_workers
            self.sched_rr += 1
            db = self.sched_db.request()
            if not db.triggered:  # every greenthread of the process shares its pool
                got = yield db | env.timeout(k.db_pool_timeout_s)
                if db not in got:
                    db.cancel()
                    rec.error, rec.error_service = QUEUE_POOL_ERROR, "nova-scheduler"
                    st["nova-scheduler"] = st.get("nova-scheduler", 0.0) + env.now - t1
                    return False
            # the host loop (calibrated per host: its idle-cloud part holds the worker, the
            # load-dependent rest is waiting) and the filters' knob, for every host
            per_host = self.draw("scheduler_host") if "scheduler_host" in self.st else 0.0
            own = min(per_host, self.low.get("scheduler_host", 0.0))
            loop = per_host * k.computes
            try:
                q = yield from self.work(self.scheduler, "nova-scheduler", "scheduler",
                                         (k.scheduler_per_host_s + own) * k.computes,
                                         (per_host - own) * k.computes)
            finally:
                self.sched_db.release(db)
            st["between components"] += q
            t2 = env.now
            st["between components"] += yield from self.reply_wait(t1)  # the conductor's
            t1 += q
            ps = self.cal.placement_share
            rest = max(0.0, t2 - t1 - loop)  # placement's share is of the time outside
            in_loop = t2 - t1 - rest  # the host loop
            st["nova-scheduler"] = st.get("nova-scheduler", 0.0) + rest * (1 - ps) + in_loop
            st["placement-api"] = st.get("placement-api", 0.0) + rest * ps
            rec.spans.append(("nova-scheduler", "simulated-controller", "call scheduler", t1, t2))
            if len(tried) >= k.computes or self.n_full >= k.computes or (
                    self.n_full and all(self.used[h] >= k.host_capacity or h in tried
                                        for h in range(k.computes))):
                rec.error, rec.error_service = "No valid host was found.", "nova-scheduler"
                rec.spans.append(("nova-conductor", "simulated-controller", "cast conductor",
                                  t0, env.now))
                return False
            h = self.pick(w, tried)
            self.allocs[h] += 1  # the scheduler's claim in placement (PUT /allocations)
            # the reply, the conductor's work after select_destinations (instance records and
            # block device mappings in the cell: nova/conductor/manager.py
            # schedule_and_build_instances) and the cast: its idle-cloud part is RPC transit
            # ('between components'), the load-dependent rest is the conductor waiting for a
            # CPU while it logs that work (nova-conductor in a measured trace's breakdown)
            hop = yield from self.spend("to_compute")
            idle = min(hop, self.low["to_compute"])
            st["between components"] += idle
            st["nova-conductor"] = st.get("nova-conductor", 0.0) + hop - idle
            rec.spans.append(("nova-conductor", "simulated-controller", "cast conductor",
                              t0, env.now))
            self.pipe(rec, False)
            ok = yield from self._build(rec, h)
            if ok:
                rec.host = h
                self.placed[h] += 1
                return True
            self.allocs[h] -= 1  # the failed claim's or build's allocation is removed
            tried.add(h)
            rec.retries += 1
            if rec.retries >= k.max_attempts:
                rec.error, rec.error_service = RETRIES_ERROR, "nova-conductor"
                return False
            self.pipe(rec, True)
            hop = yield from self.spend("to_conductor")
            st["between components"] += hop

    def _build(self, rec: BootRecord, h: int):
        env, st = self.env, rec.stages
        host = f"simulated-compute-{h + 1}"
        t0 = env.now
        yield from self.spend("compute_pre", host=h)
        # the instance's saves before the build phase
        pre_cond, pre_waited = yield from self.conductor_calls(self.cal.pre_calls)
        with self.sem[h].request() as slot:
            self.waiting += 1
            yield slot
            self.waiting -= 1
            tb = env.now
            self.building += 1  # the ``work`` load index
            try:
                ok, cond, waited = yield from self._claim_and_build(rec, h, host, t0, tb)
            finally:
                self.building -= 1
        cond, waited = cond + pre_cond, waited + pre_waited
        if not ok:
            st["nova-conductor"] = st.get("nova-conductor", 0.0) + pre_cond
            st["between components"] = st.get("between components", 0.0) + pre_waited
            st["nova-compute"] -= pre_cond + pre_waited
            return False
        yield from self.spend("finish", always=False, host=h)
        st["nova-conductor"] = st.get("nova-conductor", 0.0) + cond
        st["between components"] = st.get("between components", 0.0) + waited
        st["nova-compute"] = st.get("nova-compute", 0.0) + (env.now - t0) - cond - waited
        rec.spans.append(("nova-compute", host, f"cast compute.{host}", t0, env.now))
        return True

    def _claim_and_build(self, rec: BootRecord, h: int, host: str, t0: float, tb: float):
        """The claim and the build's own work and calls, holding a build slot; returns
        (claimed, the conductor's s, the calls' reply waits s): not claimed when there was no
        room or the build failed."""
        env, k, st, cal = self.env, self.k, rec.stages, self.cal
        claimed = [True]

        def claim() -> None:
            if self.used[h] >= k.host_capacity or (
                    k.build_failure_rate > 0 and self.rng.random() < k.build_failure_rate):
                claimed[0] = False
                return
            self.claim_one(h)

        cond, waited = yield from self.lock_hold(h, max(1, cal.locks_per_build), claim)
        if not claimed[0]:
            st["nova-compute"] = st.get("nova-compute", 0.0) + env.now - t0
            rec.spans.append(("nova-compute", host, f"cast compute.{host}", t0, env.now))
            self.busy["compute build slots"].add(env.now - tb)
            return False, 0.0, 0.0
        yield from self.do("build", self.plan("build"), host=h)  # its own work, then
        c, w = yield from self.conductor_calls(cal.conductor_calls)  # its calls
        cond, waited = cond + c, waited + w
        self.busy["compute build slots"].add(env.now - tb)
        rec.phases.append(("build", tb, env.now))
        return True, cond, waited

    def _delete(self, rec: BootRecord):
        env = self.env
        h = rec.host if rec.host is not None else 0
        d = DeleteRecord(i=rec.i, host=h, start_s=env.now)
        self.deletes.append(d)
        d.start_s = t0 = yield from self.api_work("delete_api")
        d.stages["nova-api"] = env.now - t0
        d.spans.append(("nova-api", "simulated-controller", "DELETE /v2.1/servers/{id}",
                        t0, env.now))
        hop = yield from self.spend("delete_to_compute", always=False)
        d.stages["between components"] = hop
        t1 = env.now
        yield from self.spend("teardown", host=h)
        t2 = env.now
        d.phases.append(("teardown", t1, t2))
        # the instance is saved DELETED here (nova/compute/manager.py _delete_instance, then
        # _complete_deletion): the client's next poll sees it gone while the resource cleanup
        # (the compute_resources lock, placement) goes on
        self.open_work += 1
        env.process(self._delete_cleanup(d, h, t1, t2))
        yield env.timeout(self._to_poll(env.now))
        d.gone_seen_s = env.now

    def _delete_cleanup(self, d: DeleteRecord, h: int, t1: float, t2: float):
        """The delete's resource cleanup after the teardown: ``locks_per_delete`` holds of the
        host's compute_resources lock (the resource tracker's ``update_usage``: the host's
        row is rewritten), ``cleanup``, then ``delete_rest`` to the trace's end."""
        env, host = self.env, f"simulated-compute-{h + 1}"

        def free() -> None:
            self.free_one(h)

        yield from self.lock_hold(h, max(1, self.cal.locks_per_delete), free, "delete")
        self.allocs[h] -= 1  # _complete_deletion: the allocation goes after update_usage
        yield from self.spend("cleanup", host=h)
        d.phases.append(("resource_cleanup", t2, env.now))
        d.stages["nova-compute"] = env.now - t1
        d.spans.append(("nova-compute", host, f"cast compute.{host}", t1, env.now))
        rest = yield from self.spend("delete_rest", always=False)
        d.stages["between components"] += rest
        d.end_s = env.now
        self.work_ended()


def simulate(cal: Calibration, knobs: Knobs) -> SimResult:
    """Run one storm of ``knobs.servers`` boots in the model calibrated by ``cal``.

    Deterministic for a given ``knobs.seed``. The run is bounded: every boot ends (ACTIVE and
    deleted, or failed) because every wait in the model is finite."""
    env = simpy.Environment()
    cloud = _Cloud(env, cal, knobs)
    for i in range(knobs.servers):
        env.process(cloud.boot(i))
    if cal.periodic_interval_s > 0 and "periodic_held" in cal.stages and knobs.servers:
        for h in range(knobs.computes):
            env.process(cloud.periodic(h, cloud.rng.random() * cal.periodic_interval_s))
    # the storm allocates millions of short-lived events and keeps its records alive: with
    # the default thresholds the cyclic collector rescans them ~1 s in 8 (12,000 boots)
    thresholds = gc.get_threshold()
    gc.set_threshold(100_000, 50, 1_000)
    try:
        env.run(until=cloud.all_ended if knobs.servers else None)
    finally:
        gc.set_threshold(*thresholds)
    cloud.wake_periodics()  # the holds of the ticks since each host's last lock request
    dur = env.now or 1.0
    busy = {name: b.busy_s / (b.capacity * dur) for name, b in cloud.busy.items()}
    held = cloud.lock_busy_s  # the busiest host's lock saturates first under a burst
    busy["compute_resources lock"] = sum(held) / (max(1, len(held)) * dur)
    busy["compute_resources lock, busiest host"] = max(held, default=0.0) / dur
    if cloud.cpu is not None:
        busy["shared CPU"] = cloud.cpu.busy_s / (cloud.cpu.cores * dur)
    return SimResult(knobs=knobs, boots=cloud.boots, deletes=cloud.deletes, duration_s=env.now,
                     busy=busy, placed=cloud.placed,
                     stretch={k: (v[0], v[1]) for k, v in cloud.stretch.items()},
                     drawn={s: (int(v[0]), int(v[1]), v[2], cal.stages[s].calibrated_max())
                            for s, v in cloud.drawn.items()})
