"""FifoPool (the conductor's and scheduler's workers without events) against simpy.Resource."""

from __future__ import annotations

import random

import pytest
import simpy

from stacklens.forecast.cloud import FifoPool


@pytest.mark.parametrize("capacity", [1, 2, 5])
def test_fifo_pool_starts_jobs_as_a_simpy_resource_does(capacity: int) -> None:
    rng = random.Random(capacity)
    jobs = []  # (arrival s, hold s): bursts of simultaneous arrivals and quiet spells
    t = 0.0
    for _ in range(400):
        t += rng.choice([0.0, 0.0, rng.expovariate(2.0), rng.expovariate(0.2)])
        jobs.append((t, rng.choice([0.0, rng.expovariate(1.0), 3.0])))

    env = simpy.Environment()
    res = simpy.Resource(env, capacity)
    want: list[float] = [0.0] * len(jobs)

    def job(i: int, at: float, hold: float):
        yield env.timeout(at)
        with res.request() as r:
            yield r
            want[i] = env.now
            yield env.timeout(hold)

    for i, (at, hold) in enumerate(jobs):
        env.process(job(i, at, hold))
    env.run()

    pool = FifoPool(capacity)
    got = [pool.take(at, hold) for at, hold in jobs]
    assert got == pytest.approx(want, abs=1e-9)
    assert max(g - a for g, (a, _) in zip(got, jobs, strict=True)) > 0  # some jobs queued
