"""The generic half of a load driver: pacing by a load shape, concurrency slots, the progress
counters and the run's summary. Nothing here knows what a step creates (a server, a port, a
GET): workloads (:mod:`stacklens.drive.workload`) bring that.

* :class:`Pacer` issues ``total`` steps at a :class:`~stacklens.drive.shape.Shape`'s pace with
  at most ``concurrency`` slots held; waiting is on the running loop (a virtual-time loop runs
  a long storm instantly) and on one change event that drivers set when state moves.
* :func:`outcome_of` turns one API answer into a record's outcome (failures are data).
* :class:`DriveStats` / :class:`DriveSummary` are what every driver reports.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from stacklens.drive.client import ApiResult
from stacklens.drive.records import RecordOutcome, RequestRecord
from stacklens.drive.shape import Shape

__all__ = ["DriveStats", "DriveSummary", "Pacer", "outcome_of", "wait_at_most"]


async def wait_at_most(aw: Awaitable[object], timeout_s: float) -> bool:
    """Await ``aw`` for at most ``timeout_s`` seconds: True when it finished, False when the time
    ran out (``aw`` is then cancelled). A cancel of the calling task always propagates.

    Built on :func:`asyncio.timeout`, not :func:`asyncio.wait_for`: on Python 3.11, ``wait_for``
    returns the inner result when the caller's cancel and the inner completion land in the same
    loop step, so the cancel is lost (CPython bpo-42130; 3.12 rewrote ``wait_for`` on
    ``timeout``). A run's first Ctrl-C was lost that way while the pacer waited for a slot.
    """
    try:
        async with asyncio.timeout(timeout_s):
            await aw
    except TimeoutError:
        return False
    return True


@dataclass
class DriveStats:
    """Counters for the progress bar and the summary (counts of steps: servers, calls)."""

    total: int = 0  # steps planned, all repetitions
    issued: int = 0  # steps started
    in_flight: int = 0  # steps holding a concurrency slot
    peak_in_flight: int = 0
    active: int = 0  # boot_servers: servers seen ACTIVE
    failed: int = 0  # records with a failure outcome
    done: int = 0  # records finished
    list_calls: int = 0
    poll_errors: int = 0
    strangers: int = 0  # resources with the run's prefix the driver did not ask for


@dataclass(frozen=True)
class DriveSummary:
    """What a driver's ``run()`` returns."""

    records: list[RequestRecord]
    stats: DriveStats
    interrupted: bool
    started_ns: int  # client clock, Unix epoch nanoseconds
    ended_ns: int
    leftovers: list[str]  # ids of what the run created still present after cleanup
    calls: dict[str, int]  # HTTP calls by kind: create, list, delete, show...
    errors: list[str] = field(default_factory=list)  # driver-side errors kept as data


def outcome_of(res: ApiResult) -> tuple[str | None, str | None]:
    """``(outcome, error)`` of one API answer: ``(None, None)`` for a 2xx, else ``timeout``,
    ``transport_error`` (no HTTP answer) or ``api_error`` (4xx/5xx) with the message."""
    if res.status is None:
        out = RecordOutcome.TIMEOUT if res.timeout else RecordOutcome.TRANSPORT_ERROR
        return out.value, res.error
    if not res.ok:
        return RecordOutcome.API_ERROR.value, res.error
    return None, None


class Pacer:
    """Concurrency slots, the change event and the paced issue loop of one driver.

    ``now`` is the loop's monotonic clock in seconds; ``stats`` gets ``issued``, ``in_flight``
    and ``peak_in_flight``. After :meth:`stop` nothing more is issued and waits for slots end.
    """

    def __init__(self, shape: Shape, concurrency: int, now: Callable[[], float],
                 stats: DriveStats):
        self.shape, self.concurrency, self.now, self.stats = shape, concurrency, now, stats
        self.stopping = False
        self.changed = asyncio.Event()

    def notify(self) -> None:
        """Wake every waiter: some state moved."""
        self.changed.set()

    def stop(self) -> None:
        """Stop issuing."""
        self.stopping = True
        self.notify()

    async def wait(self, pred: Callable[[], bool]) -> None:
        """Return once ``pred()`` holds (checked after each :meth:`notify`)."""
        while not pred():
            self.changed.clear()
            await self.changed.wait()

    async def acquire(self, n: int) -> bool:
        """Take ``n`` slots (a step larger than ``concurrency`` runs alone); False, holding
        nothing, when the driver stopped meanwhile."""
        c = self.concurrency
        await self.wait(lambda: self.stopping or self.stats.in_flight == 0
                        or self.stats.in_flight + n <= c)
        if self.stopping:
            return False
        self.stats.in_flight += n
        self.stats.peak_in_flight = max(self.stats.peak_in_flight, self.stats.in_flight)
        return True

    def release(self, n: int = 1) -> None:
        """Give back ``n`` slots."""
        self.stats.in_flight -= n
        self.notify()

    async def issue(self, total: int, batch: int, launch: Callable[[int, int], None]) -> int:
        """Call ``launch(first_index, n)`` for ``total`` steps, ``batch`` at a time, each when
        the shape says it is due and its slots are held; returns the number issued."""
        start = self.now()
        issued = 0
        while issued < total and not self.stopping:
            wait = self.shape.pace(self.now() - start, issued)
            if wait > 0:
                self.changed.clear()
                await wait_at_most(self.changed.wait(), wait)
                continue
            n = min(batch, total - issued)
            if not await self.acquire(n):
                break
            self.stats.issued += n
            launch(issued, n)
            issued += n
        return issued
