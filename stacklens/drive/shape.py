"""Load shapes: when the next server creation is due, as a pure function of time and work done.

Modelled on vegeta's ``lib/pacer.go``: a shape answers ``pace(elapsed_s, issued)`` with the
seconds to wait before issuing item number ``issued`` (0-based), 0 when it is due or overdue.
No clock, no state: tested as a table. Each shape is defined by ``due_s(k)``, the time at which
the cumulative number of items issued should reach ``k + 1`` (the inverse of the integrated rate).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from stacklens.drive.scenario import RampBurst, RampConstant, RampLinear, RampSteps

__all__ = ["Burst", "Constant", "Linear", "Shape", "Steps", "make_shape"]


class Shape:
    """Base of the load shapes: subclasses define :meth:`due_s`."""

    def due_s(self, k: int) -> float:
        """Seconds after the start at which item ``k`` (0-based) is due."""
        raise NotImplementedError

    def pace(self, elapsed_s: float, issued: int) -> float:
        """Seconds to wait before issuing item number ``issued``; 0 when due or late."""
        return max(0.0, self.due_s(issued) - elapsed_s)


@dataclass(frozen=True)
class Burst(Shape):
    """Everything at once; only the concurrency limit holds the driver back."""

    def due_s(self, k: int) -> float:
        """Always due."""
        return 0.0


@dataclass(frozen=True)
class Constant(Shape):
    """``rate_per_s`` items per second; item 0 at once."""

    rate_per_s: float

    def due_s(self, k: int) -> float:
        """Item k is due at k / rate."""
        return k / self.rate_per_s


@dataclass(frozen=True)
class Linear(Shape):
    """Rate from ``start`` to ``end`` per second over ``duration_s``, then ``end``."""

    start: float
    end: float
    duration_s: float

    def due_s(self, k: int) -> float:
        """Solve a*t + c*t^2 = k on the ramp (c = (end - start) / 2T), linear after it."""
        if k <= 0:
            return 0.0
        a, t_ramp = self.start, self.duration_s
        c = (self.end - a) / (2 * t_ramp)
        on_ramp = a * t_ramp + c * t_ramp * t_ramp
        if k <= on_ramp:
            # the stable root of c t^2 + a t - k = 0 (also for c <= 0 and a = 0)
            return 2 * k / (a + math.sqrt(max(0.0, a * a + 4 * c * k)))
        return t_ramp + (k - on_ramp) / self.end


@dataclass(frozen=True)
class Steps(Shape):
    """Piecewise-constant rates ``((rate_per_s, duration_s), ...)``; the last rate continues."""

    steps: tuple[tuple[float, float], ...]

    def due_s(self, k: int) -> float:
        """Walk the steps until the cumulative count reaches k."""
        t, done = 0.0, 0.0
        for rate, dur in self.steps:
            if done + rate * dur >= k:
                return t + (k - done) / rate
            t += dur
            done += rate * dur
        rate = self.steps[-1][0]
        return t + (k - done) / rate


def make_shape(ramp: RampBurst | RampConstant | RampLinear | RampSteps) -> Shape:
    """The shape a scenario's ``ramp`` describes."""
    if isinstance(ramp, RampConstant):
        return Constant(ramp.rate_per_s)
    if isinstance(ramp, RampLinear):
        return Linear(ramp.start_rate_per_s, ramp.end_rate_per_s, ramp.duration_s)
    if isinstance(ramp, RampSteps):
        return Steps(tuple((s.rate_per_s, s.duration_s) for s in ramp.steps))
    return Burst()
