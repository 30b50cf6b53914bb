"""The controller's contention in the forecast model: per load bin, the builds in flight that a
calibration saw (``LoadDist.building``), and the scaling of the controller's stage times by the
builds the model has in flight against those (``LoadDist.contention``, knob ``contention``)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from stacklens.forecast.calibrate import Calibration, calibrate
from stacklens.forecast.dist import LoadDist, fit
from stacklens.forecast.model import simulate
from stacklens.forecast.run import knobs_for, shipped_model
from stacklens.forecast.samples import CONTROLLER_STAGES, run_samples
from stacklens.store import RunStore


def test_fit_keeps_the_mean_builds_per_bin():
    loads = [1.0] * 10 + [5.0] * 10
    times = [0.1] * 10 + [0.5] * 10
    building = [2.0] * 10 + [4.0, 6.0] * 5
    d = fit(loads, times, max_bins=2, min_per_bin=5, building=building)
    assert d.building == (2.0, 5.0)
    assert fit(loads, times, max_bins=2, min_per_bin=5).building == ()
    back = LoadDist.from_json(json.loads(json.dumps(d.to_json())))
    assert back.building == d.building and back.qs == d.qs
    plain = d.to_json()
    del plain["building"]
    assert LoadDist.from_json(plain).building == ()  # a format-6 stage
    with pytest.raises(ValueError, match="one value per bin"):
        LoadDist.from_json({**d.to_json(), "building": [1.0]})


def test_contention_is_the_ratio_of_the_work_in_flight():
    d = fit([1.0] * 10 + [5.0] * 10, [0.1] * 20, max_bins=2, min_per_bin=5,
            building=[2.0] * 10 + [5.0] * 10)
    assert d.contention(1.0, 2.0) == pytest.approx(1.0)  # as calibrated
    assert d.contention(5.0, 5.0) == pytest.approx(1.0)
    assert d.contention(5.0, 15.0) == pytest.approx(20.0 / 10.0)  # twice the work
    assert d.contention(1.0, 0.0) == pytest.approx(1.0 / 3.0)  # no builds: less than measured
    assert d.contention(1.0, 1000.0, cap=8.0) == 8.0
    assert d.contention(0.0, 0.0, cap=8.0) == pytest.approx(1.0 / 8.0)
    assert LoadDist.constant(0.3).contention(4.0, 9.0) == 1.0  # not measured: no scaling
    # beyond the top bin the line extrapolates the load; contention only the builds' part
    assert d.contention(40.0, 5.0) == pytest.approx(45.0 / 45.0)


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory) -> Path:
    """A forecast's run folder (the shipped model, 4 computes, 24 boots), to calibrate from."""
    from stacklens.forecast.calibrate import load_model
    from stacklens.forecast.run import forecast_run
    from stacklens.forecast.tables import to_tables

    cal = load_model(shipped_model())
    res, _ = forecast_run(cal, knobs_for(cal, computes=4, servers=24, concurrency=12), None,
                          "shipped")
    st = RunStore(tmp_path_factory.mktemp("fc") / "run")
    st.write(to_tables(res, 0, cal.attribution))
    return st.path


def test_calibration_keeps_builds_for_controller_stages_only(sim_run: Path):
    samples = run_samples(RunStore(sim_run))["samples"]
    # deletes while boots build (a simulated run has no conductor call spans)
    assert any(p[3] > 0 for p in samples["delete_api"])
    cal = calibrate([sim_run])
    for stage, d in cal.stages.items():
        if stage in CONTROLLER_STAGES and sum(d.n):  # measured (not a constant stand-in)
            assert len(d.building) == len(d.qs), stage
        else:
            assert d.building == (), stage
    # a stage drawn at ``work`` already counts the builds: not scaled again
    per = calibrate([sim_run], stage_load={"api": "work"})
    assert per.stages["api"].building == () and per.stages["scheduler"].building
    back = Calibration.from_json(json.loads(json.dumps(cal.to_json())))
    assert back.stages["api"].building == pytest.approx(cal.stages["api"].building, abs=1e-3)


def test_more_builds_than_calibrated_slow_the_controller(sim_run: Path):
    cal = calibrate([sim_run])
    # as if the calibration had seen no builds at all: every build in flight in the model is
    # more work than calibrated, so the controller's stages can only slow down
    none = dataclasses.replace(cal, stages={
        s: dataclasses.replace(d, building=tuple(0.0 for _ in d.building))
        for s, d in cal.stages.items()})
    k = knobs_for(none, computes=8, servers=48, concurrency=24, seed=3)

    def controller_s(knobs) -> float:
        res = simulate(none, knobs)
        assert all(b.outcome == "success" for b in res.boots)
        return sum(b.stages.get("nova-api", 0.0) + b.stages.get("nova-conductor", 0.0)
                   for b in res.boots)

    on, off = controller_s(k), controller_s(k.replace(contention=False))
    assert on > off * 1.05
