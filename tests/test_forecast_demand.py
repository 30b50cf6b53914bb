"""CPU demands by regression over resource-sample intervals (stacklens.forecast.demand) and
the process groups of the shared CPU (stacklens.forecast.cpu.PsCpu): known demands are
recovered from synthetic samples, and a group's jobs share its processes' cores."""

from __future__ import annotations

import math
import random

import polars as pl
import pytest
import simpy

from stacklens.forecast.cpu import CpuModel, PsCpu, process_counts
from stacklens.forecast.demand import fit_regression, interval_rows

S = 1_000_000_000


def _synthetic(seed: int = 1) -> tuple[pl.DataFrame, dict[str, list[tuple[int, float]]]]:
    """90 s of samples every 1.5 s: nova-api spends 0.12 CPU-s per ``api`` and 0.05 per
    ``delete_api`` occurrence (spread over its time) plus 0.05 cores whatever happens;
    MariaDB 0.01 per ``api``. Occurrences at random times and durations."""
    rng = random.Random(seed)
    occ: dict[str, list[tuple[int, float]]] = {"api": [], "delete_api": []}
    for st, n in (("api", 60), ("delete_api", 60)):
        for _ in range(n):
            occ[st].append((int(rng.uniform(0, 85) * S), rng.uniform(0.1, 3.0)))
    edges = [int(i * 1.5 * S) for i in range(61)]
    rows = []
    for svc, per in (("nova-api", {"api": 0.12, "delete_api": 0.05}),
                     ("mariadb", {"api": 0.01})):
        base = 0.05 if svc == "nova-api" else 0.0
        rows.append({"ts_ns": edges[0], "host": "c", "service": svc, "pid": 1,
                     "cpu_pct": None, "n_procs": 3, "threads": 3 if svc == "nova-api" else 90})
        for lo, hi in zip(edges, edges[1:], strict=False):
            cpu = base * (hi - lo) / S
            for st, d in per.items():
                for a, dur in occ[st]:
                    e = a + dur * S
                    cpu += d * max(0.0, min(e, hi) - max(a, lo)) / (dur * S)
            rows.append({"ts_ns": hi, "host": "c", "service": svc, "pid": 1,
                         "cpu_pct": 100.0 * cpu / ((hi - lo) / S), "n_procs": 3,
                         "threads": 3 if svc == "nova-api" else 90})
    return pl.DataFrame(rows), occ


def test_regression_recovers_known_demands_and_idle_cores():
    samples, occ = _synthetic()
    rows = interval_rows(samples, occ, 0, 90 * S)
    assert set(rows) == {"nova-api", "mariadb"}
    cm, r2 = fit_regression(rows, cores=2.0, window_s=90.0, service_cpu_s={},
                            processes=process_counts(samples))
    assert cm.method == "regression"
    assert cm.demand_by["api"]["nova-api"] == pytest.approx(0.12, rel=1e-6)
    assert cm.demand_by["api"]["mariadb"] == pytest.approx(0.01, rel=1e-6)
    assert cm.demand_by["delete_api"] == pytest.approx({"nova-api": 0.05}, rel=1e-6)
    assert cm.demand_s["api"] == pytest.approx(0.13, rel=1e-6)
    assert cm.idle_cores == pytest.approx(0.05, rel=1e-6)
    assert r2["nova-api"] == pytest.approx(1.0)
    # gunicorn's parent and two workers: two processes; MariaDB's threads: no bound
    assert cm.processes == {"mariadb": 0, "nova-api": 2}
    back = CpuModel.from_json(cm.to_json())
    assert back.demand_by["api"] == pytest.approx(cm.demand_by["api"], rel=1e-5)
    assert (back.idle_cores, back.method, back.processes) == (
        pytest.approx(0.05, rel=1e-3), "regression", cm.processes)
    assert back.free_cores(2.0) == pytest.approx(1.95, rel=1e-3)


def test_regression_needs_more_intervals_than_unknowns():
    samples, occ = _synthetic()
    few = samples.filter(pl.col("ts_ns") <= 3 * S)
    with pytest.raises(ValueError, match="sample intervals"):
        fit_regression(interval_rows(few, occ, 0, 90 * S), 2.0, 90.0, {})


def _finish(cores: float, jobs: dict[str, tuple[float, float, object, float]]) -> dict[str, float]:
    env = simpy.Environment()
    cpu = PsCpu(env, cores)
    out: dict[str, float] = {}

    def job(name: str, start_s: float, demand_s: float, group: object, cap: float):
        yield env.timeout(start_s)
        yield cpu.run(demand_s, group, cap)
        out[name] = env.now

    for name, (t, d, g, c) in jobs.items():
        env.process(job(name, t, d, g, c))
    env.run()
    return out


def test_a_process_group_shares_its_one_core_among_its_jobs():
    # three 1 s jobs of one single-process service on 4 cores: one core among them, 3 s;
    # a job of another process meanwhile runs at full speed
    t = _finish(4, {"a": (0, 1, "compute-1", 1.0), "b": (0, 1, "compute-1", 1.0),
                    "c": (0, 1, "compute-1", 1.0), "x": (0, 1, "api", 2.0)})
    assert t["a"] == t["b"] == t["c"] == pytest.approx(3.0)
    assert t["x"] == pytest.approx(1.0)
    # two runnable processes (a group of 1 with 2 jobs, and a free job) on 1 core: half each;
    # the group's half is split between its two jobs
    t = _finish(1, {"a": (0, 1, "g", 1.0), "b": (0, 1, "g", 1.0), "f": (0, 1, None, math.inf)})
    # f: rate 1/2 until done at 2 s; a, b: 1/4 each until 2 s (0.5 done), then 1/2: 3 s
    assert t["f"] == pytest.approx(2.0)
    assert t["a"] == t["b"] == pytest.approx(3.0)
    # without groups it is egalitarian processor sharing, as before
    t = _finish(2, {"a": (0, 1, None, math.inf), "b": (0, 1, None, math.inf),
                    "c": (0, 1, None, math.inf), "d": (0.5, 0.1, None, math.inf)})
    assert t["d"] == pytest.approx(0.7)
    assert t["a"] == pytest.approx(1.55)


def test_occupancy_in_chunks_is_the_same(monkeypatch):
    import numpy as np

    import stacklens.forecast.demand as demand

    rng = np.random.default_rng(1)
    a, d = rng.uniform(0, 1e11, 3000), rng.uniform(0, 3e9, 3000)
    d[::7] = 0.0  # instant occurrences count 1 where they start
    lo = np.arange(0, 1e11, 1.5e9)
    whole = demand._occupancy((a, d), lo, lo + 1.5e9)
    monkeypatch.setattr(demand, "CHUNK_CELLS", 500)
    assert np.allclose(demand._occupancy((a, d), lo, lo + 1.5e9), whole)
    assert whole.sum() == pytest.approx(3000, rel=0.05)  # all but those past the last edge
