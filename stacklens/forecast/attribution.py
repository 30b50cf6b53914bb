"""How the model's stage times map onto stacklens' breakdown of a measured trace.

The breakdown of a measured trace (:func:`stacklens.trace.classify.breakdown`) gives each gap
between two consecutive log records of a trace to the service that logged both, else to
'between components'. Services log concurrently inside one boot (nova-conductor answers
nova-compute's object calls, and logs its own RPC reply polling, while the build runs), so the
gap attribution is not the model's stage structure: measured nova-conductor time includes
gaps the model books to the compute's build, and the reverse.

:func:`fit_attribution` learns one factor per component at the calibration runs' own
settings: it simulates them (median of ``seeds`` seeds), compares each component's p50 with
the measured p50, and stores ``measured / predicted`` (clamped to [0.2, 5], refined over a few
rounds because the rows of a trace are rescaled together) in the model's ``attribution``. The
run-folder writer scales every component of the simulated breakdown ('between components'
included) by these factors, then rescales the rows so they still sum to ``dur_s``. End-to-end
times, throughput and the simulation itself are unchanged. The factors are fitted at the
calibration point only; a validation at another size tests them out of sample.

Seeds: 20 per run (:data:`ATTRIBUTION_SEEDS`). With 5, on the five K=4 lab runs of 2026-11-28
the fitted model missed its own runs' nova-conductor by +13 % and between components by +9 %
(40 seeds); with 20 every component is within -0..+6 %. The calibration then takes about a
minute more.
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

from stacklens.forecast.calibrate import Calibration, run_settings
from stacklens.forecast.knobs import Knobs
from stacklens.forecast.tables import to_tables
from stacklens.forecast.validate import COMPONENTS, measured_metrics
from stacklens.store import RunStore

__all__ = ["ATTRIBUTION_SEEDS", "fit_attribution"]

#: Seeds simulated per calibration run when the factors are fitted (module docstring).
ATTRIBUTION_SEEDS = 20


def fit_attribution(cal: Calibration, runs: Sequence[str | Path],
                    seeds: int = ATTRIBUTION_SEEDS) -> Calibration:
    """A copy of ``cal`` with ``attribution`` fitted to ``runs`` (module docstring). Components
    absent from the runs or the model keep factor 1."""
    from stacklens.forecast.model import simulate  # simpy only here

    meas: dict[str, list[float]] = {c: [] for c in COMPONENTS}
    sims = []
    for r in runs:
        m = measured_metrics(r)
        rs = run_settings(RunStore(r))
        k = Knobs().replace(computes=int(rs["computes"]), servers=int(rs["servers"]),
                            concurrency=int(rs.get("concurrency") or rs["servers"]))
        for c in COMPONENTS:
            if m.get(f"{c} p50_s"):
                meas[c].append(float(m[f"{c} p50_s"] or 0.0))
        sims += [simulate(cal, k.replace(seed=s)) for s in range(1, seeds + 1)]
    attr: dict[str, float] = {}
    for _ in range(8):  # the rescaling to dur_s couples the factors: a few fixed-point rounds
        cur = _p50s(cal, attr, sims)
        for c in COMPONENTS:
            if not meas[c] or not cur.get(c):
                continue
            attr[c] = min(5.0, max(0.2, attr.get(c, 1.0) * statistics.median(meas[c])
                                   / cur[c]))
    return dataclasses.replace(cal, attribution=attr)


def _p50s(cal: Calibration, attr: dict[str, float], sims: list) -> dict[str, float]:
    """Median over the simulations of each component's p50 with ``attr`` applied."""
    vals: dict[str, list[float]] = {c: [] for c in COMPONENTS}
    with tempfile.TemporaryDirectory(prefix="stacklens-attr-") as tmp:
        for i, res in enumerate(sims):
            st = RunStore(Path(tmp) / str(i))
            st.write(to_tables(res, 0, attr))
            p = measured_metrics(st.path)
            for c in COMPONENTS:
                if p.get(f"{c} p50_s"):
                    vals[c].append(float(p[f"{c} p50_s"] or 0.0))
    return {c: statistics.median(v) for c, v in vals.items() if v}
