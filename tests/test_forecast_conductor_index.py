"""The ``conductor`` load index of the forecast model: in a calibration, the conductor's calls
and casts in progress at a sample's start; in the model, the same count kept by the simulated
conductor (:meth:`stacklens.forecast.cloud.Cloud.conductor_jobs`)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import simpy

from stacklens.forecast.calibrate import Calibration, calibrate
from stacklens.forecast.model import _Cloud, simulate
from stacklens.forecast.run import knobs_for, shipped_model
from stacklens.forecast.samples import run_samples
from stacklens.store import RunStore


def test_calibration_counts_the_conductors_own_stages(shipped_sim_run: Path):
    store = RunStore(shipped_sim_run)
    got = run_samples(store, "pipeline", {"conductor": "conductor",
                                          "to_compute": "conductor"})["samples"]
    # a stage counted by its own index sees itself in progress at its start
    assert got["conductor"] and all(x[0] >= 1 for x in got["conductor"])
    assert got["to_compute"] and all(x[0] >= 1 for x in got["to_compute"])
    # a boot's conductor work overlaps others' only while they are in the same stages: at
    # most every boot the run had in flight
    tr = store.read("traces").filter(pl.col("operation") == "server.create")
    assert max(x[0] for x in got["conductor"] + got["to_compute"]) <= tr.height
    # the other stages keep their index
    pipe = run_samples(store, "pipeline")["samples"]
    assert got["api"] == pipe["api"]


def test_a_model_with_the_index_round_trips_and_simulates(shipped_sim_run: Path):
    cal = calibrate([shipped_sim_run], stage_load={"conductor_call": "conductor",
                                           "conductor": "conductor"})
    back = Calibration.from_json(json.loads(json.dumps(cal.to_json())))
    assert back.stage_load == {"conductor_call": "conductor", "conductor": "conductor"}
    res = simulate(back, knobs_for(back, computes=4, servers=24, concurrency=12))
    assert len(res.boots) == 24 and all(b.outcome == "success" for b in res.boots)


def test_the_model_counts_calls_until_their_reply():
    cal = Calibration.from_json(json.loads(shipped_model().read_text()))
    env = simpy.Environment()
    cloud = _Cloud(env, cal, knobs_for(cal, computes=2, servers=4, concurrency=2))
    seen: list[int] = []

    def caller():
        seen.append(cloud.conductor_jobs())
        c, _ = yield from cloud.conductor_call()
        seen.append(cloud.conductor_jobs())
        return c

    p1, p2 = env.process(caller()), env.process(caller())
    env.run()
    assert seen[:2] == [0, 1]  # the second caller sees the first call in progress
    assert cloud.conductor_jobs() == 0 and cloud.at_conductor == 0
    assert p1.value > 0 and p2.value > 0
    # a call is counted until its reply is sent, not until its caller's next reply poll
    assert all(v <= 1 for v in seen[2:])
