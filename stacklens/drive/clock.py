"""The driver's clock, injected: wall time for the records, the event loop's time for waiting.

The driver stamps records with :meth:`Clock.now_ns` and measures elapsed time and sleeps on the
running event loop (``loop.time()``, ``asyncio.sleep``). In production that is the system clock
and the default loop. Tests run the driver on :class:`VirtualTimeLoop`, whose time jumps to the
next timer whenever nothing is ready, with :class:`LoopClock` stamping records from that same
virtual time: a 20-minute storm runs in milliseconds and nothing sleeps for real.
"""

from __future__ import annotations

import asyncio
import selectors
import time
from collections.abc import Coroutine
from typing import Any, Protocol, TypeVar

__all__ = ["Clock", "LoopClock", "SystemClock", "VirtualTimeLoop", "run_virtual"]

T = TypeVar("T")


class Clock(Protocol):
    """What the driver needs of a clock."""

    def now_ns(self) -> int:
        """Wall-clock time, ns since the Unix epoch (record timestamps)."""
        ...

    def monotonic(self) -> float:
        """Seconds on the running loop's clock (elapsed time, deadlines)."""
        ...


class SystemClock:
    """The real clocks."""

    def now_ns(self) -> int:
        """``time.time_ns()``."""
        return time.time_ns()

    def monotonic(self) -> float:
        """The running loop's time (``time.monotonic`` on the default loop)."""
        try:
            return asyncio.get_running_loop().time()
        except RuntimeError:
            return time.monotonic()


class LoopClock:
    """Wall time derived from the running loop's time: ``epoch_ns + loop.time()``. With a
    :class:`VirtualTimeLoop` this makes record timestamps virtual too."""

    def __init__(self, epoch_ns: int = 1_767_225_600 * 10**9):  # 2026-01-01T00:00:00Z
        self.epoch_ns = epoch_ns

    def monotonic(self) -> float:
        """The running loop's time."""
        return asyncio.get_running_loop().time()

    def now_ns(self) -> int:
        """``epoch_ns`` plus the loop's time in ns."""
        return self.epoch_ns + int(self.monotonic() * 1e9)


class _JumpingSelector(selectors.DefaultSelector):
    def __init__(self, loop: VirtualTimeLoop):
        super().__init__()
        self._vloop = loop

    def select(self, timeout: float | None = None):  # noqa: D401 - selector API
        if timeout is not None and timeout > 0:
            events = super().select(0)
            if not events:  # nothing to read: jump to the next timer instead of waiting
                self._vloop._vt += timeout
            return events
        return super().select(timeout)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock only moves when every task is waiting on a timer; then it
    jumps straight to the next deadline. Real I/O (a worker thread's result, a socket) still
    wakes it. For tests and the fake nova; starts at time 0."""

    def __init__(self) -> None:
        self._vt = 0.0
        super().__init__(selector=_JumpingSelector(self))

    def time(self) -> float:
        """Virtual seconds since the loop was made."""
        return self._vt


def run_virtual(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on a fresh :class:`VirtualTimeLoop`."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
