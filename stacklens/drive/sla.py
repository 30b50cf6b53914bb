"""SLA checks over a run's records: success rate and 95th percentile of create time.

Pure functions of the records (Rally's SLA plugins are the model); the CLI turns a failed check
into :class:`~stacklens.errors.SlaBreach` (exit code 3).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from stacklens.drive.records import RequestRecord
from stacklens.drive.scenario import Sla

__all__ = ["SlaCheck", "evaluate_sla", "percentile"]


@dataclass(frozen=True)
class SlaCheck:
    """One criterion: its limit, the measured value, and whether it passed."""

    name: str  # success_rate, p95_s
    limit: float
    value: float | None
    ok: bool

    def describe(self) -> str:
        """``success_rate 0.93 < 0.95: FAILED`` style line."""
        op = ">=" if self.name == "success_rate" else "<="
        val = "n/a" if self.value is None else f"{self.value:.3f}"
        return f"{self.name} {val} (limit {op} {self.limit:g}): {'ok' if self.ok else 'FAILED'}"


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) by linear interpolation; None for no values."""
    if not values:
        return None
    v = sorted(values)
    pos = (len(v) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def evaluate_sla(records: Iterable[RequestRecord], sla: Sla) -> list[SlaCheck]:
    """The checks ``sla`` asks for. Cancelled servers count as not successful."""
    recs = list(records)
    out = []
    if sla.success_rate is not None:
        rate = sum(r.outcome == "ok" for r in recs) / len(recs) if recs else None
        out.append(SlaCheck("success_rate", sla.success_rate, rate,
                            rate is not None and rate >= sla.success_rate))
    if sla.p95_s is not None:
        p95 = percentile([r.create_s for r in recs if r.outcome == "ok" and r.create_s is not None],
                         0.95)
        out.append(SlaCheck("p95_s", sla.p95_s, p95, p95 is not None and p95 <= sla.p95_s))
    return out
