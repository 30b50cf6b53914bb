"""The load driver: boots servers at a load shape's pace, watches them with one list call per
poll interval, deletes them, and records each server's lifecycle as it happens.

Design (issue 3):

* **Cheap in-flight servers.** A server in flight is an entry in a dict, not a task. Tasks
  exist only while an HTTP call is open (a create or a delete) and for the optional
  reachability probes; one poller task lists every server of the run
  (``name=^sl-<runid>-``, ``changes-since``) and moves each through its phases.
* **Failures are data.** A 5xx, a refused connection, a timeout, a server in ERROR or one that
  never becomes ACTIVE each end that server's record with an ``outcome``; the run goes on.
* **Written as it happens.** Every phase change appends a snapshot to ``requests.jsonl``
  (:class:`~stacklens.drive.records.RecordWriter`), fsync'd once per poll interval.
* **Interrupts.** Cancelling :meth:`Driver.run` once (the first Ctrl-C under
  ``asyncio.Runner``) stops issuing and deletes what the run created (unless the cleanup
  policy is ``keep``), then returns with ``interrupted=True``; a second cancel ends it at once,
  after writing the last snapshots. :meth:`Driver.stop` is the same first step, callable.
* **Injected clock and transport**: :class:`~stacklens.drive.clock.Clock` stamps records; all
  waiting is on the running loop, so a virtual-time loop runs a long storm instantly.

Servers are named ``sl-<runid>-r<rep>-<iteration>`` (batch mode: ``sl-<runid>-r<rep>-b<first>-<n>``),
so :func:`~stacklens.drive.cleanup.cleanup_prefix` can remove a run's leftovers by name alone.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from stacklens.drive.cleanup import cleanup_prefix
from stacklens.drive.client import ComputeClient
from stacklens.drive.clock import Clock, SystemClock
from stacklens.drive.pacer import DriveStats, DriveSummary, Pacer, outcome_of
from stacklens.drive.plan import Plan
from stacklens.drive.reach import NetProber, Prober
from stacklens.drive.records import RecordOutcome, RecordWriter, RequestRecord

__all__ = ["DriveStats", "DriveSummary", "Driver"]  # the first two: from stacklens.drive.pacer

_ACTIVE_STAGES = ("submitting", "building", "reaching", "deleting")


@dataclass(eq=False)
class _Live:
    rec: RequestRecord
    stage: str = "submitting"  # submitting building reaching held deleting done
    slot: bool = True
    since: float = 0.0  # loop time the stage began
    view: dict[str, Any] | None = None  # last list view of the server
    seen_ns: int = 0  # client time of that view
    watch: bool = False  # create failed: adopt the server if it shows up all the same
    leftover: bool = False
    dirty: bool = False  # record changed since its last snapshot


@dataclass(eq=False)
class _Batch:
    base: RequestRecord
    expected: int
    since: float
    seen: int = 0


def _parse_ts_ns(s: str | None) -> int | None:
    if not s:
        return None
    try:
        d = datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return None
    if d.tzinfo is None:  # nova writes launched_at in UTC without a zone
        d = d.replace(tzinfo=UTC)
    return int(d.timestamp() * 1e9)


def _fault(view: dict[str, Any]) -> str:
    f = view.get("fault") or {}
    return f.get("message") or "server in ERROR (no fault shown)"


class Driver:
    """Runs one :class:`Plan` against a :class:`~stacklens.drive.client.ComputeClient`."""

    def __init__(
        self,
        plan: Plan,
        client: ComputeClient,
        writer: RecordWriter,
        clock: Clock | None = None,
        prober: Prober | None = None,
        on_tick: Callable[[DriveStats], None] | None = None,
    ):
        self.plan = plan
        self.client = client
        self.writer = writer
        self.clock = clock or SystemClock()
        self.prober = prober or NetProber(self.clock.now_ns)
        self.on_tick = on_tick
        self.stats = DriveStats(total=plan.total * plan.repetitions)
        self.interrupted = False
        self.pacer = Pacer(plan.shape, plan.concurrency, self._now, self.stats)
        self._all: list[_Live] = []
        self._by_name: dict[str, _Live] = {}
        self._by_id: dict[str, _Live] = {}
        self._batches: dict[str, _Batch] = {}
        self._strangers: set[str | None] = set()
        self._tasks: set[asyncio.Task] = set()
        self._since_s: float | None = None
        self._probing: set[str] = set()
        self.errors: list[str] = []  # unexpected exceptions caught (kept as data)
        self._count: Counter[tuple[int, str]] = Counter()  # (repetition, stage) -> servers

    # -- helpers --------------------------------------------------------------------------
    def _now(self) -> float:
        return self.clock.monotonic()

    @property
    def _stopping(self) -> bool:
        return self.pacer.stopping

    @_stopping.setter
    def _stopping(self, value: bool) -> None:
        self.pacer.stopping = value

    def _spawn(self, coro: Coroutine[Any, Any, None], live: _Live | None = None) -> None:
        """Run ``coro`` as a task; a bug in it fails ``live`` instead of hanging the run."""

        async def guarded() -> None:
            try:
                await coro
            except Exception as e:  # failures are data, even the driver's own
                self.errors.append(f"{type(e).__name__}: {e}")
                if live is not None and live.stage != "done":
                    self._fail(live, RecordOutcome.FAILED.value, f"driver error: {type(e).__name__}: {e}")
                    live.leftover = True
                    self._finish(live)

        t = asyncio.create_task(guarded())
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    def _notify(self) -> None:
        self.pacer.notify()

    async def _wait(self, pred: Callable[[], bool]) -> None:
        await self.pacer.wait(pred)

    def _set(self, live: _Live, **changes: Any) -> None:
        """Change the record without writing a snapshot (the next phase change writes it)."""
        live.rec = live.rec.evolve(**changes)
        live.dirty = True

    def _save(self, live: _Live, **changes: Any) -> None:
        """Change the record and append a snapshot (a phase changed)."""
        live.rec = live.rec.evolve(**changes) if changes else live.rec
        live.dirty = False
        self.writer.write(live.rec)

    def _add(self, live: _Live) -> _Live:
        self._all.append(live)
        self._by_name[live.rec.name] = live
        self._count[(live.rec.repetition, live.stage)] += 1
        return live

    def _busy(self, rep: int, *stages: str) -> bool:
        return any(self._count[(rep, s)] for s in stages)

    def _busy_any(self, *stages: str) -> bool:
        return any(self._count[(r, s)] for r in range(self.plan.repetitions) for s in stages)

    def _stage(self, live: _Live, stage: str) -> None:
        self._count[(live.rec.repetition, live.stage)] -= 1
        self._count[(live.rec.repetition, stage)] += 1
        live.stage, live.since = stage, self._now()
        if stage in ("held", "done") and live.slot:
            live.slot = False
            self.stats.in_flight -= 1
        self._notify()

    def _fail(self, live: _Live, outcome: str, error: str | None) -> None:
        if live.rec.outcome is None:
            self.stats.failed += 1
            self._save(live, outcome=outcome, error=error)

    def _finish(self, live: _Live) -> None:
        if live.stage == "done":
            return
        if live.rec.outcome is None:
            if live.rec.active_ns is not None:
                self._save(live, outcome=RecordOutcome.OK.value)
            elif self._stopping:
                self._fail(live, RecordOutcome.CANCELLED.value, "run interrupted before the server was ACTIVE")
            else:
                self._fail(live, RecordOutcome.FAILED.value, "deleted by someone else before it was ACTIVE")
        elif live.dirty:
            self._save(live)
        self.stats.done += 1
        self._stage(live, "done")

    def _in_stage(self, *stages: str, rep: int | None = None) -> list[_Live]:
        return [x for x in self._all
                if x.stage in stages and (rep is None or x.rec.repetition == rep)]

    # -- public ---------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop issuing and clean up (what the first Ctrl-C does)."""
        self.pacer.stop()

    async def run(self) -> DriveSummary:
        """Drive the whole plan; see the module docstring for interrupts."""
        started = self.clock.now_ns()
        poller = asyncio.create_task(self._poll_loop())
        leftovers: list[str] = []
        try:
            try:
                for rep in range(self.plan.repetitions):
                    if self._stopping:
                        break
                    await self._repetition(rep)
                if self._stopping:
                    self.interrupted = True
                leftovers = await self._wrap_up()
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None:
                    task.uncancel()
                self.interrupted = self._stopping = True
                self._notify()
                leftovers = await self._wrap_up()
        finally:
            self._close_unfinished()
            poller.cancel()
            for t in list(self._tasks):
                t.cancel()
        return DriveSummary([x.rec for x in self._all], self.stats, self.interrupted, started,
                            self.clock.now_ns(), leftovers, dict(self.client.calls),
                            list(self.errors))

    # -- issuing --------------------------------------------------------------------------
    async def _repetition(self, rep: int) -> None:
        p = self.plan

        def launch(idx: int, n: int) -> None:
            base, n_, live = self._issue(rep, idx, n)
            self._spawn(self._create(base, n_, live), live)

        await self.pacer.issue(p.total, p.batch_size, launch)
        await self._wait(lambda: self._stopping or (
            not self._busy(rep, "submitting", "building", "reaching", "deleting")
            and not any(b.base.repetition == rep for b in self._batches.values())))
        if p.delete and p.delete_when == "all" and not self._stopping:
            for x in self._in_stage("held", rep=rep):
                if x.rec.active_ns and x.rec.outcome is None:
                    self._start_delete(x)
            await self._wait(lambda: self._stopping or not self._busy(rep, "deleting"))

    def _issue(self, rep: int, idx: int, n: int) -> tuple[RequestRecord, int, _Live | None]:
        """Register the servers of one create before its task runs (so waits count them)."""
        p = self.plan
        name = f"{p.prefix}r{rep}-{idx:05d}" if n == 1 else f"{p.prefix}r{rep}-b{idx:05d}"
        base = RequestRecord(run_id=p.run_id, name=name, scenario=p.scenario, repetition=rep,
                             iteration=idx, global_request_id=f"req-{uuid.uuid4()}")
        if n > 1:
            self._batches[name] = _Batch(base, n, self._now())
            return base, n, None
        return base, n, self._add(_Live(base, since=self._now()))

    async def _create(self, base: RequestRecord, n: int, live: _Live | None) -> None:
        p = self.plan
        name, gid = base.name, base.global_request_id
        base = base.evolve(submit_ns=self.clock.now_ns())
        if live is not None:
            self._save(live, submit_ns=base.submit_ns)
        else:
            self._batches[name].base = base
        res = await self.client.create_server(name, p.image_ref, p.flavor_ref, p.network,
                                              count=n, global_request_id=gid)
        got = dict(accepted_ns=self.clock.now_ns(), create_http_status=res.status,
                   request_id=res.request_id)
        if res.date_s is not None and self._since_s is None:
            self._since_s = res.date_s - p.overlap_s
        outcome, error = outcome_of(res)
        if n > 1:
            self._batch_answer(base.evolve(**got), n, outcome, error, res.sent)
            return
        assert live is not None
        self._set(live, **got)
        if outcome is not None:
            self._fail(live, outcome, error)
            live.watch = res.sent  # the server may exist after all: adopt it if listed
            self._finish(live)
            return
        sid = res.server_id
        if sid:
            self._by_id[sid] = live
            self._set(live, server_id=sid, status="BUILD")
        self._save(live)
        self._stage(live, "building")
        if live.view is not None:  # the poller saw it before the 202 came back
            self._advance(live)
        elif self._stopping and p.cleanup != "keep":
            self._start_delete(live)

    def _batch_answer(self, base: RequestRecord, n: int, outcome: str | None,
                      error: str | None, sent: bool) -> None:
        batch = self._batches.get(base.name)
        if outcome is None:
            if batch is not None:  # servers already listed keep the submit-time base
                batch.base, batch.since = base, self._now()
            return
        self._batches.pop(base.name, None)
        for k in range(n):
            live = self._add(_Live(base.evolve(name=f"{base.name}-{k + 1}",
                                               iteration=base.iteration + k), watch=sent))
            self._fail(live, outcome, error)
            self._finish(live)

    # -- observing ------------------------------------------------------------------------
    def _needs_poll(self) -> bool:
        return bool(self._batches) or any(
            x.stage in _ACTIVE_STAGES or x.watch for x in self._all)

    async def _poll_loop(self) -> None:
        while True:
            await asyncio.sleep(self.plan.poll_interval_s)
            try:
                if self._needs_poll():
                    await self._poll()
                self._check_timeouts()
                self.writer.sync()
                if self.on_tick:
                    self.on_tick(self.stats)
            except Exception as e:  # a bad answer must not stop the observing
                self.stats.poll_errors += 1
                self.errors.append(f"poll: {type(e).__name__}: {e}")

    async def _poll(self) -> None:
        since = self._since_s if self._since_s is not None else self.clock.now_ns() / 1e9 - 300
        res = await self.client.list_servers(f"^{self.plan.prefix}", since)
        self.stats.list_calls += res.calls
        if res.error:
            self.stats.poll_errors += 1
            return
        seen_ns = self.clock.now_ns()
        date = res.date_s if res.date_s is not None else seen_ns / 1e9
        self._since_s = date - self.plan.overlap_s
        for view in res.servers:
            self._observe(view, seen_ns)
        self._notify()

    def _lookup(self, view: dict[str, Any]) -> _Live | None:
        sid, name = view.get("id"), view.get("name") or ""
        live = (self._by_id.get(sid) if sid else None) or self._by_name.get(name)
        if live is None:
            base, _, num = name.rpartition("-")
            batch = self._batches.get(base)
            if batch is not None and num.isdigit():
                live = self._add(_Live(batch.base.evolve(
                    name=name, iteration=batch.base.iteration + int(num) - 1),
                    stage="building", since=batch.since))
                batch.seen += 1
                if batch.seen >= batch.expected:
                    del self._batches[base]
        if live is not None and sid and live.rec.server_id is None:
            self._by_id[sid] = live
            self._set(live, server_id=sid)
        return live

    def _observe(self, view: dict[str, Any], seen_ns: int) -> None:
        live = self._lookup(view)
        if live is None:
            if view.get("id") not in self._strangers and view.get("status") != "DELETED":
                self._strangers.add(view.get("id"))
                self.stats.strangers += 1
            return
        if live.view is None or live.view.get("status") != view.get("status"):
            live.seen_ns = seen_ns
        live.view = view
        host = view.get("OS-EXT-SRV-ATTR:host")
        if host and host != live.rec.host:
            live.rec = live.rec.evolve(host=host)
        self._advance(live)

    def _advance(self, live: _Live) -> None:
        v = live.view or {}
        st = v.get("status")
        if st != live.rec.status and st:
            live.rec = live.rec.evolve(status=st)
        if st in ("DELETED", "SOFT_DELETED"):
            if live.rec.gone_ns is None:
                self._set(live, gone_ns=live.seen_ns)
            live.watch = False
            if live.stage not in ("submitting", "done"):
                self._finish(live)
            elif live.dirty:
                self._save(live)
            return
        if live.stage == "done" and live.watch:  # adopted: the create's answer was lost
            live.watch = False
            self._save(live)
            if self.plan.cleanup != "keep":
                live.leftover = True
            return
        if live.stage != "building":
            return
        if st == "ACTIVE":
            self.stats.active += 1
            self._save(live, active_ns=live.seen_ns,
                       launched_ns=_parse_ts_ns(v.get("OS-SRV-USG:launched_at")))
            self._after_active(live)
        elif st == "ERROR":
            self._fail(live, RecordOutcome.ERROR.value, _fault(v))
            self._after_failure(live)

    # -- phases ---------------------------------------------------------------------------
    def _after_active(self, live: _Live) -> None:
        if (self.plan.ping or self.plan.ssh) and not self._stopping:
            self._stage(live, "reaching")
            self._spawn(self._reach(live), live)
        else:
            self._after_reach(live)

    async def _reach(self, live: _Live) -> None:
        p = self.plan
        ping_ns, ssh_ns, note = await self.prober.reach(live.view or {}, p.ping, p.ssh,
                                                        p.ssh_port, p.reach_timeout_s)
        self._save(live, ping_ns=ping_ns, ssh_ns=ssh_ns, reach_note=note)
        if live.stage == "reaching":
            self._after_reach(live)

    def _after_reach(self, live: _Live) -> None:
        p = self.plan
        if self._stopping:
            if p.cleanup != "keep":
                self._start_delete(live)
            else:
                self._stage(live, "held")
        elif p.delete and p.delete_when == "each":
            self._start_delete(live)
        else:
            if not p.delete:
                self._save(live, outcome=RecordOutcome.OK.value)
            self._stage(live, "held")

    def _after_failure(self, live: _Live) -> None:
        if live.slot:
            live.slot = False
            self.stats.in_flight -= 1
        if self.plan.cleanup == "delete" or (self._stopping and self.plan.cleanup != "keep"):
            self._start_delete(live)
        else:
            self._stage(live, "held")

    def _start_delete(self, live: _Live) -> None:
        if live.stage in ("deleting", "done") or not live.rec.server_id:
            return
        self._stage(live, "deleting")
        self._spawn(self._delete(live), live)

    async def _delete(self, live: _Live) -> None:
        gid = f"req-{uuid.uuid4()}"
        self._save(live, delete_ns=self.clock.now_ns(), delete_global_request_id=gid)
        res = await self.client.delete_server(live.rec.server_id or "", gid)
        self._set(live, delete_accepted_ns=self.clock.now_ns(), delete_http_status=res.status,
                   delete_request_id=res.request_id)
        if res.status == 404:
            self._set(live, gone_ns=live.rec.delete_accepted_ns, status="DELETED")
            self._finish(live)
        elif not res.ok and live.stage == "deleting":
            self._fail(live, RecordOutcome.DELETE_FAILED.value, res.error)
            live.leftover = True
            self._finish(live)
        elif live.view and live.view.get("status") in ("DELETED", "SOFT_DELETED"):
            self._advance(live)

    async def _confirm_gone(self, live: _Live) -> None:
        res = await self.client.get_server(live.rec.server_id or "")
        if live.stage != "deleting":
            return
        if res.status == 404:
            self._set(live, gone_ns=self.clock.now_ns(), status="DELETED")
        else:
            self._fail(live, RecordOutcome.DELETE_FAILED.value,
                       f"still present {self.plan.delete_timeout_s:g} s after delete"
                       f" ({res.error or (res.body or {}).get('server', {}).get('status')})")
            live.leftover = True
        self._finish(live)

    def _check_timeouts(self) -> None:
        now, p = self._now(), self.plan
        for live in self._in_stage("building"):
            if now - live.since >= p.active_timeout_s:
                self._fail(live, RecordOutcome.TIMEOUT.value, f"not ACTIVE after {p.active_timeout_s:g} s "
                           f"(last status {live.rec.status or 'unknown'})")
                self._after_failure(live)
        for live in self._in_stage("deleting"):
            if now - live.since >= p.delete_timeout_s and live.rec.server_id not in self._probing:
                self._probing.add(live.rec.server_id or "")
                self._spawn(self._confirm_gone(live), live)
        for key, b in list(self._batches.items()):
            if now - b.since >= p.active_timeout_s:
                del self._batches[key]
                missing = b.expected - b.seen
                for k in range(missing):
                    live = self._add(_Live(b.base.evolve(
                        name=f"{key}-missing-{k + 1}", iteration=b.base.iteration + b.seen + k)))
                    self._fail(live, RecordOutcome.TIMEOUT.value, "server of the batch never listed")
                    self._finish(live)
                self._notify()

    # -- the end --------------------------------------------------------------------------
    async def _wrap_up(self) -> list[str]:
        """Delete what the cleanup policy says, wait for it, sweep the prefix."""
        p = self.plan
        if self._stopping:  # interrupted: nothing still building is worth waiting for
            for live in self._in_stage("building", "held"):
                if p.cleanup != "keep":
                    self._start_delete(live)
        else:
            for live in self._in_stage("held"):
                if p.cleanup == "delete" or (p.cleanup == "keep_errors"
                                             and live.rec.outcome != RecordOutcome.ERROR):
                    self._start_delete(live)
        await self._wait(lambda: not self._busy_any("deleting", "submitting")
                         and (p.cleanup == "keep" or not self._busy_any("building")))
        if p.cleanup == "keep":
            return [x.rec.server_id for x in self._all if x.stage != "done" and x.rec.server_id]
        keep = ({x.rec.server_id for x in self._all if x.rec.outcome == RecordOutcome.ERROR}
                if p.cleanup == "keep_errors" else set())
        res = await cleanup_prefix(self.client, p.prefix, p.delete_timeout_s,
                                   p.poll_interval_s, keep=keep)
        self.errors.extend(f"cleanup: {e}" for e in res.errors)
        if any(e.startswith("list:") for e in res.errors):  # the sweep could not look
            return sorted({x.rec.server_id for x in self._all if x.leftover and x.rec.server_id
                           and x.rec.gone_ns is None} | set(res.remaining))
        return res.remaining

    def _close_unfinished(self) -> None:
        for live in self._all:
            if live.rec.outcome is not None or live.stage == "done":
                continue
            if live.rec.active_ns is not None and (live.stage == "held" or not self.plan.delete):
                self._save(live, outcome=RecordOutcome.OK.value)
            else:
                self._fail(live, RecordOutcome.CANCELLED.value, f"run ended with the server in stage {live.stage}")
        self.writer.sync()
