"""Beyond the highest calibrated load, the forecast model grows the controller's stage times at
least in proportion to the load (``LoadDist.sample(..., saturating=True)``, knob
``saturation``) for the stages no simulated server serves (``cloud.UNSERVED_STAGES``); the
others keep the fitted line."""

from __future__ import annotations

import dataclasses

import pytest

from stacklens.forecast.calibrate import load_model
from stacklens.forecast.cloud import UNSERVED_STAGES
from stacklens.forecast.dist import LoadDist, fit
from stacklens.forecast.model import simulate
from stacklens.forecast.run import knobs_for, shipped_model


def _flat_line() -> LoadDist:
    """Two bins (mean loads 1 and 4) whose medians barely grow: a shallow fitted line."""
    loads = [1.0] * 20 + [4.0] * 20
    times = [0.10] * 20 + [0.11] * 20
    return fit(loads, times, max_bins=2, min_per_bin=5)


def test_within_the_bins_nothing_changes():
    d = _flat_line()
    for load in (0.0, 1.0, 2.5, 4.0):
        for u in (0.1, 0.5, 0.9):
            assert d.sample(u, load, saturating=True) == d.sample(u, load)


def test_beyond_the_bins_at_least_in_proportion():
    d = _flat_line()
    top = d.loads[-1]
    at_top = d.sample(0.5, top)
    line = d.sample(0.5, 3 * top)
    sat = d.sample(0.5, 3 * top, saturating=True)
    assert line < 1.5 * at_top  # the fitted line is shallow ...
    assert sat == pytest.approx(3 * at_top)  # ... the asymptote is not
    # capped by max_slowdown like the line
    assert d.sample(0.5, 100 * top, 8.0, saturating=True) == pytest.approx(8 * at_top)
    # a steep line above the proportion keeps the line
    steep = fit([1.0] * 20 + [4.0] * 20, [0.01] * 20 + [0.4] * 20, max_bins=2, min_per_bin=5)
    assert steep.sample(0.5, 8.0, saturating=True) == steep.sample(0.5, 8.0)
    # a flat stage (no slope) stays flat, as before
    assert LoadDist.constant(0.2).sample(0.5, 50.0, saturating=True) == 0.2


def test_the_knob_slows_the_unserved_stages_past_their_bins_only():
    """A storm far past the shipped model's calibrated load: the hops and the allocation
    reads drawn past their top bin grow with ``saturation``; with it off the model is the
    line's, and a model whose bins reach past the storm's load is not changed by it."""
    cal = load_model(shipped_model())
    k = knobs_for(cal, computes=8, servers=60, concurrency=60, seed=5)
    on, off = simulate(cal, k), simulate(cal, k.replace(saturation=False))

    def compute_s(res) -> float:  # the claims' allocation reads are the compute's time
        return sum(b.stages.get("nova-compute", 0.0) for b in res.boots)

    assert compute_s(on) > compute_s(off) * 1.2
    assert (sum(b.end_s - b.start_s for b in on.boots)
            > sum(b.end_s - b.start_s for b in off.boots) * 1.2)
    wide = dataclasses.replace(cal, stages={
        s: (dataclasses.replace(d, loads=tuple(x * 1000 for x in d.loads),
                                edges=tuple(e * 1000 for e in d.edges))
            if s in UNSERVED_STAGES else d)
        for s, d in cal.stages.items()})
    a, b = simulate(wide, k), simulate(wide, k.replace(saturation=False))
    assert [r.end_s for r in a.boots] == [r.end_s for r in b.boots]
