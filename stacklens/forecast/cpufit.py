"""The CPU contention at the calibration's own settings, so the CPU part can be taken out of
the measured stage times.

A measured stage time holds its CPU demand already stretched by the contention of the
calibration run (:mod:`stacklens.forecast.cpu`). How much is not measured: ``resource_samples``
give the CPU-seconds, not how many jobs shared the cores at each moment. :func:`fit_stretch`
takes it from the model itself: it simulates the calibration runs' settings (``seeds`` seeds
each) with the shared CPU, reads each stage's mean stretch (CPU elapsed / CPU demand) per load
bin, and stores it in the model, so the non-CPU part is the measured time minus the demand
times that stretch. Because that part in turn changes the contention, this is repeated a few
rounds (a fixed-point iteration, starting from stretch 1). Only the calibration runs are used.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from stacklens.forecast.calibrate import Calibration, run_settings
from stacklens.forecast.knobs import Knobs
from stacklens.store import RunStore

__all__ = ["fit_stretch"]


def fit_stretch(cal: Calibration, runs: Sequence[str | Path], seeds: int = 5,
                rounds: int = 4) -> Calibration:
    """A copy of ``cal`` whose ``cpu.stretch`` is fitted at ``runs``' settings (module
    docstring); ``cal`` itself when it has no ``cpu`` section."""
    from stacklens.forecast.model import simulate  # simpy only here

    if cal.cpu is None:
        return cal
    knobs = []
    for r in runs:
        rs = run_settings(RunStore(r))
        knobs.append(Knobs().replace(
            computes=int(rs["computes"]), servers=int(rs["servers"]),
            concurrency=int(rs.get("concurrency") or rs["servers"]),
            poll_interval_s=float(rs.get("poll_interval_s") or Knobs().poll_interval_s)))
    for _ in range(rounds):
        acc: dict[tuple[str, int], list[float]] = {}
        for k in knobs:
            for s in range(1, seeds + 1):
                for key, (el, dem) in simulate(cal, k.replace(seed=s)).stretch.items():
                    a = acc.setdefault(key, [0.0, 0.0])
                    a[0] += el
                    a[1] += dem
        stretch: dict[str, tuple[float, ...]] = {}
        for stage, dist in cal.stages.items():
            if stage not in cal.cpu.demand_s:
                continue
            row = []
            for b in range(len(dist.qs)):
                el, dem = acc.get((stage, b), (0.0, 0.0))
                row.append(el / dem if dem > 0 else 1.0)
            stretch[stage] = tuple(row)
        cal = dataclasses.replace(cal, cpu=dataclasses.replace(cal.cpu, stretch=stretch))
    return cal
