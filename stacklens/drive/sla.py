"""SLA checks over a run's client-side records: the share of records ok, and the 95th percentile
of the workload's main duration (``boot_servers``: ``create_s``, submit -> ACTIVE seen).

``success_rate`` here is the **client's** share: records whose outcome is ``ok`` divided by
every record of the run (failed, cancelled and still-pending records count against it). It is
not the report's ``success_rate`` (:mod:`stacklens.analyze.queries`: server-side traces,
``(success + retried) / (requests - rejected - unknown)``), which leaves out what the cloud
refused or what its logs do not show; the check is printed as ``success_rate (ok/all records)``.

:func:`percentile` is the one percentile of the drive package (the run summary uses it too):
linear interpolation between closest ranks, the same definition as SQL ``percentile_cont``
(DuckDB, Spark), which the analyses use, so client and server numbers compare.

Pure functions of the records (Rally's SLA plugins are the model); the CLI turns a failed check
into :class:`~stacklens.errors.SlaBreach` (exit code 3).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from stacklens.drive.records import RecordOutcome, RequestRecord
from stacklens.drive.scenario import Sla

__all__ = ["SlaCheck", "evaluate_sla", "percentile"]


@dataclass(frozen=True)
class SlaCheck:
    """One criterion: its limit, the measured value, and whether it passed."""

    name: str  # success_rate (share, 0..1), p95_s (seconds)
    limit: float
    value: float | None
    ok: bool

    def describe(self) -> str:
        """``success_rate (ok/all records) 0.930 (limit >= 0.95): FAILED`` style line."""
        op = ">=" if self.name == "success_rate" else "<="
        what = {"success_rate": " (ok/all records)"}.get(self.name, "")
        val = "n/a" if self.value is None else f"{self.value:.3f}"
        return (f"{self.name}{what} {val} (limit {op} {self.limit:g}): "
                f"{'ok' if self.ok else 'FAILED'}")


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``values`` by linear interpolation between closest ranks
    (= SQL ``percentile_cont(q)``); None for no values."""
    if not values:
        return None
    v = sorted(values)
    pos = (len(v) - 1) * q
    lo, hi = math.floor(pos), math.ceil(pos)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def evaluate_sla(records: Iterable[RequestRecord], sla: Sla,
                 duration: str | Callable[[RequestRecord], float | None] = "create_s"
                 ) -> list[SlaCheck]:
    """The checks ``sla`` asks for, in the order success_rate, p95_s. ``duration`` is the record
    property (seconds) ``p95_s`` limits, over records ok (the workload's ``sla_duration``), or
    a function of the record giving those seconds (the workload's ``sla_value``).
    Cancelled records count as not successful; no records give value None, check failed."""
    recs = list(records)
    ok = RecordOutcome.OK
    out = []
    if sla.success_rate is not None:
        rate = sum(r.outcome == ok for r in recs) / len(recs) if recs else None
        out.append(SlaCheck("success_rate", sla.success_rate, rate,
                            rate is not None and rate >= sla.success_rate))
    if sla.p95_s is not None:
        name = duration
        value = (lambda r: getattr(r, name)) if isinstance(name, str) else name
        p95 = percentile([v for r in recs if r.outcome == ok
                          and (v := value(r)) is not None], 0.95)
        out.append(SlaCheck("p95_s", sla.p95_s, p95, p95 is not None and p95 <= sla.p95_s))
    return out
