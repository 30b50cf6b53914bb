"""The forecast's shared CPU (stacklens.forecast.cpu): processor sharing against hand-computed
finish times, the utilisation law on small numbers, the CPU-seconds of resource samples in a
window, the model's fallback without resource samples, and the ``cores`` knob's direction."""

from __future__ import annotations

import dataclasses
import statistics

import polars as pl
import pytest
import simpy

from stacklens.forecast.calibrate import Calibration
from stacklens.forecast.cpu import (
    UNSEEN_GROUP,
    CpuModel,
    PsCpu,
    fit_demands,
    host_cpu_seconds,
    run_cpu_seconds,
)
from stacklens.forecast.model import simulate, summary
from stacklens.forecast.run import knobs_for, resolve_model


def _finish_times(cores: float, jobs: dict[str, tuple[float, float]]) -> dict[str, float]:
    env = simpy.Environment()
    cpu = PsCpu(env, cores)
    out: dict[str, float] = {}

    def job(name: str, start_s: float, demand_s: float):
        yield env.timeout(start_s)
        yield cpu.run(demand_s)
        out[name] = env.now

    for name, (start_s, demand_s) in jobs.items():
        env.process(job(name, start_s, demand_s))
    env.run()
    return out


def test_processor_sharing_matches_hand_computed_times():
    # three 1 s jobs on 2 cores run at 2/3 until d arrives at 0.5 s (each has 1/3 s done);
    # four jobs at 1/2: d's 0.1 s takes 0.2 s (ends 0.7); the three at 2/3 again need
    # (1 - 1/3 - 0.1) / (2/3) = 0.85 s more: 1.55 s
    t = _finish_times(2, {"a": (0, 1), "b": (0, 1), "c": (0, 1), "d": (0.5, 0.1)})
    assert t["d"] == pytest.approx(0.7)
    assert t["a"] == t["b"] == t["c"] == pytest.approx(1.55)
    # fewer jobs than cores: each at full speed
    assert _finish_times(4, {"a": (0, 2), "b": (1, 0.5)}) == pytest.approx({"a": 2, "b": 1.5})
    # n equal jobs on c cores end together at n * d / c
    many = _finish_times(2, {str(i): (0, 0.3) for i in range(1000)})
    assert set(round(v, 9) for v in many.values()) == {round(1000 * 0.3 / 2, 9)}


def test_utilisation_law_shares_a_service_by_stage_time():
    cpu = fit_demands({"nova-api": 10.0, "mariadb": 4.0, "placement-api": 6.0},
                      counts={"api": 10, "delete_api": 10, "scheduler": 10, "lock_held": 20,
                              "cleanup": 10},
                      time_s={"api": 30.0, "delete_api": 10.0, "scheduler": 5.0},
                      boots=10, cores=2, window_s=60.0,
                      placement={"scheduler": 20, "lock_held": 20, "instance": 100,
                                 "cleanup": 10, "other": 10})
    assert cpu.demand_s["api"] == pytest.approx(10.0 * 0.75 / 10)
    assert cpu.demand_s["delete_api"] == pytest.approx(10.0 * 0.25 / 10)
    per_req = 6.0 / 160
    assert cpu.demand_s["scheduler"] == pytest.approx(per_req * 20 / 10)
    assert cpu.demand_s["lock_held"] == pytest.approx(per_req * 120 / 20)
    assert cpu.instances_cal == pytest.approx(5.0)
    assert cpu.background_s == pytest.approx((4.0 + per_req * 10) / 10)
    assert cpu.held == {"scheduler": 0.0}  # the scheduler stage's CPU here is placement's
    assert CpuModel.from_json(cpu.to_json()).demand_s == pytest.approx(cpu.demand_s)


def test_cpu_seconds_of_resource_samples_are_clipped_to_the_window():
    s = 1_000_000_000
    df = pl.DataFrame({"ts_ns": [0, 2 * s, 4 * s, 0, 4 * s], "host": ["c"] * 5,
                       "service": ["nova-api"] * 3 + ["mariadb"] * 2,
                       "pid": [1, 1, 1, 2, 2], "cpu_pct": [None, 50.0, 100.0, None, 25.0]})
    got = run_cpu_seconds(df, 1 * s, 3 * s)
    assert got["nova-api"] == pytest.approx(0.5 * 1 + 1.0 * 1)
    assert got["mariadb"] == pytest.approx(0.25 * 2)


def test_host_cpu_seconds_are_the_machine_rows_clipped_to_the_window():
    s = 1_000_000_000
    df = pl.DataFrame({"ts_ns": [0, 2 * s, 4 * s, 0, 4 * s], "host": ["c"] * 5,
                       "service": ["cpu:host"] * 3 + ["nova-api"] * 2,
                       "pid": [None, None, None, 7, 7],
                       "cpu_pct": [None, 150.0, 200.0, None, 100.0]},
                      schema_overrides={"pid": pl.Int32})
    assert host_cpu_seconds(df, 1 * s, 3 * s) == pytest.approx(1.5 * 1 + 2.0 * 1)
    assert "cpu:host" not in run_cpu_seconds(df, 1 * s, 3 * s)  # a process's rows only
    assert host_cpu_seconds(df.filter(pl.col("pid").is_not_null()), 0, 4 * s) is None


def test_unseen_cpu_runs_in_one_process_of_its_own():
    # two 1 s unseen jobs and two 1 s jobs of their own on 2 cores: the unseen group is one
    # process (the two share a core at 1/2 each), so the others run at full speed
    env = simpy.Environment()
    cpu = PsCpu(env, 2)
    ends: dict[str, float] = {}

    def job(name: str, group: object, cap: float):
        yield cpu.run(1.0, group, cap)
        ends[name] = env.now

    for name, group, cap in (("u1", UNSEEN_GROUP, 1.0), ("u2", UNSEEN_GROUP, 1.0),
                             ("a", None, float("inf")), ("b", None, float("inf"))):
        env.process(job(name, group, cap))
    env.run()
    # 3 runnable processes on 2 cores: 2/3 each; the unseen jobs get 1/3 each; a and b end at
    # 1.5 s with u1, u2 half done; then the unseen process has a core: 1 s more for 2 x 0.5
    assert ends["a"] == ends["b"] == pytest.approx(1.5)
    assert ends["u1"] == ends["u2"] == pytest.approx(2.5)
    doc = CpuModel(cores=2.0, demand_s={"api": 0.1}, unseen_s=1.25).to_json()
    assert CpuModel.from_json(doc).unseen_s == 1.25
    old = {k: v for k, v in doc.items() if k != "unseen_s"}  # a model from before it
    assert CpuModel.from_json(old).unseen_s == 0.0


@pytest.fixture(scope="module")
def cal_cpu() -> Calibration:
    """The shipped model with a made-up CPU section (demands of the right size)."""
    cal = resolve_model(None)[0]
    cpu = CpuModel(cores=2.0, demand_s={"api": 0.1, "conductor": 0.05, "conductor_call": 0.03,
                                        "scheduler": 0.3, "build": 0.05, "lock_held": 0.1},
                   background_s=0.1)
    return dataclasses.replace(cal, cpu=cpu)


def test_fewer_cores_longer_boots(cal_cpu):
    k = knobs_for(cal_cpu, computes=8, servers=80, concurrency=40)
    p50 = {c: statistics.median(summary(simulate(cal_cpu, k.replace(cores=c, seed=s)))
                                ["create_p50_s"] for s in (1, 2, 3)) for c in (0.5, 8.0)}
    assert p50[0.5] > p50[8.0]
    res = simulate(cal_cpu, k)
    assert 0 < res.busy["shared CPU"] <= 1.0
    assert all(el >= dem * (1 - 1e-9) for el, dem in res.stretch.values())


def test_model_without_cpu_section_has_no_shared_cpu():
    cal = resolve_model(None)[0]
    if cal.cpu is not None:
        pytest.skip("the shipped model has a cpu section")
    res = simulate(cal, knobs_for(cal, computes=4, servers=20, concurrency=10))
    assert "shared CPU" not in res.busy and not res.stretch
    doc = dataclasses.replace(cal, cpu=CpuModel(cores=2.0, demand_s={"api": 0.1})).to_json()
    back = Calibration.from_json(doc)
    assert back.cpu is not None and back.cpu.demand_s == {"api": 0.1}
    assert Calibration.from_json(cal.to_json()).cpu is None


def test_calibrate_without_resource_samples_says_so(tmp_path):
    from stacklens.forecast.calibrate import calibrate
    from stacklens.forecast.run import forecast_run

    cal = resolve_model(None)[0]
    forecast_run(cal, knobs_for(cal, computes=4, servers=24, concurrency=12), tmp_path / "r",
                 "shipped")
    got = calibrate([tmp_path / "r"], cores=2)
    assert got.cpu is None
    assert got.provenance["cpu"].startswith("no shared CPU: no resource_samples")
