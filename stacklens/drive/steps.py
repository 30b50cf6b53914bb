"""A driver for workloads whose step is one API call: paced by the load shape, at most
``concurrency`` calls at once, and exactly one record per step (rally's ``ActionTimer``:
``submit_ns`` taken before the call, ``accepted_ns`` after it, the HTTP status, request id and
outcome from the answer; a step that raises is a ``failed`` record, never the end of the run).

A workload type (:mod:`stacklens.drive.workload`) that fits gives a :class:`StepPlan` and a
``step(client, record) -> ApiResult`` coroutine function, typically one
:meth:`~stacklens.drive.client.ComputeClient.call`. Records are named
``sl-<runid>-r<rep>-<iteration>`` like every run's resources.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from stacklens.drive.client import ApiResult, ComputeClient
from stacklens.drive.clock import Clock, SystemClock
from stacklens.drive.pacer import DriveStats, DriveSummary, Pacer, outcome_of
from stacklens.drive.plan import run_prefix
from stacklens.drive.records import RecordOutcome, RecordWriter, RequestRecord
from stacklens.drive.shape import Burst, Shape

__all__ = ["Step", "StepDriver", "StepPlan"]

#: One step: given the client and the step's record (name, global request id), make the call.
Step = Callable[[ComputeClient, RequestRecord], Awaitable[ApiResult]]


@dataclass(frozen=True)
class StepPlan:
    """The plan of a one-call-per-step workload: ``total`` calls per repetition."""

    run_id: str
    total: int
    scenario: str = "scenario"
    repetitions: int = 1
    concurrency: int = 100
    shape: Shape = field(default_factory=Burst)

    @property
    def prefix(self) -> str:
        """``sl-<runid>-``."""
        return run_prefix(self.run_id)

    def describe(self) -> dict[str, Any]:
        """The plan as plain data (the manifest's ``run.plan``)."""
        return {"run_id": self.run_id, "total": self.total, "scenario": self.scenario,
                "repetitions": self.repetitions, "concurrency": self.concurrency,
                "shape": repr(self.shape), "prefix": self.prefix}


class StepDriver:
    """Runs a :class:`StepPlan`: each step is ``step(client, record)``, timed and recorded once.

    Cancelling :meth:`run` (or :meth:`stop`) stops issuing; calls in flight are cancelled and
    their records end ``cancelled``; ``run`` then returns with ``interrupted=True``."""

    def __init__(self, plan: StepPlan, client: ComputeClient, writer: RecordWriter, step: Step,
                 clock: Clock | None = None,
                 on_tick: Callable[[DriveStats], None] | None = None):
        self.plan, self.client, self.writer, self.step = plan, client, writer, step
        self.clock = clock or SystemClock()
        self.on_tick = on_tick
        self.stats = DriveStats(total=plan.total * plan.repetitions)
        self.pacer = Pacer(plan.shape, plan.concurrency, self.clock.monotonic, self.stats)
        self.records: dict[tuple[str, str, int], RequestRecord] = {}
        self.errors: list[str] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def stop(self) -> None:
        """Stop issuing (what the first Ctrl-C does)."""
        self.pacer.stop()

    async def run(self) -> DriveSummary:
        """Every repetition's steps, then the summary (records in issue order)."""
        started = self.clock.now_ns()
        interrupted = False
        try:
            for rep in range(self.plan.repetitions):
                if self.pacer.stopping:
                    break

                def launch(idx: int, _n: int, rep: int = rep) -> None:
                    self._launch(rep, idx)

                await self.pacer.issue(self.plan.total, 1, launch)
                await self.pacer.wait(lambda: not self._tasks)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()
            self.pacer.stop()
        finally:
            for t in list(self._tasks):
                t.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            interrupted = self.pacer.stopping
            for key, rec in self.records.items():
                if rec.outcome is None:
                    self._record(key, rec.evolve(outcome=RecordOutcome.CANCELLED.value,
                                                 error="run interrupted during the call"))
            self.writer.sync()
        return DriveSummary(list(self.records.values()), self.stats, interrupted, started,
                            self.clock.now_ns(), [], dict(self.client.calls), self.errors)

    def _record(self, key: tuple[str, str, int], rec: RequestRecord) -> None:
        self.records[key] = rec
        self.writer.write(rec)
        if rec.outcome is not None:
            self.stats.done += 1
            self.stats.failed += rec.outcome != RecordOutcome.OK

    def _launch(self, rep: int, idx: int) -> None:
        p = self.plan
        rec = RequestRecord(run_id=p.run_id, name=f"{p.prefix}r{rep}-{idx:05d}",
                            scenario=p.scenario, repetition=rep, iteration=idx,
                            global_request_id=f"req-{uuid.uuid4()}")
        self.records[rec.key] = rec
        t = asyncio.create_task(self._one(rec))
        self._tasks.add(t)
        t.add_done_callback(self._done)

    def _done(self, t: asyncio.Task[None]) -> None:
        self._tasks.discard(t)
        self.pacer.release(1)
        if self.on_tick:
            self.on_tick(self.stats)

    async def _one(self, rec: RequestRecord) -> None:
        rec = rec.evolve(submit_ns=self.clock.now_ns())
        self.records[rec.key] = rec
        try:
            res = await self.step(self.client, rec)
        except Exception as e:  # failures are data, even the step's own
            self.errors.append(f"{type(e).__name__}: {e}")
            self._record(rec.key, rec.evolve(accepted_ns=self.clock.now_ns(),
                                             outcome=RecordOutcome.FAILED.value,
                                             error=f"step error: {type(e).__name__}: {e}"))
            return
        outcome, error = outcome_of(res)
        self._record(rec.key, rec.evolve(
            accepted_ns=self.clock.now_ns(), create_http_status=res.status,
            request_id=res.request_id, outcome=outcome or RecordOutcome.OK.value, error=error))
