"""Benchmark: time of a 600-node x 20-server boot storm (12,000 boots) in the forecast model.

Prints one JSON object on stdout (progress on stderr); asserts nothing. Each repetition runs in
this process, timed with ``time.process_time`` (CPU) and ``time.perf_counter`` (wall):

* ``forecast``: :func:`stacklens.forecast.run.forecast_run` with the shipped model, 600
  computes, 12,000 servers, concurrency ``--concurrency`` (default 12,000: every boot at once,
  as the seeds' storms), nothing written (``--out`` writes the run folder too);
* ``baseline``: a bare SimPy workload measured in the same run: 12,000 processes, each taking
  one shared resource and waiting ``--baseline-steps`` timeouts. It moves with the machine
  and the interpreter as the model does, so ``ratio_to_baseline`` (forecast / baseline,
  median times) is the number to compare across machines and commits.

Target: the 12,000-boot storm in under 10 s on 2 cores (``target_s``).

Usage: ``python bench/forecast_bench.py [--repeat 3] [--concurrency 12000] [--out RUN]
[--set KNOB=VALUE ...]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import simpy

from stacklens.forecast.knobs import parse_sets
from stacklens.forecast.run import forecast_run, knobs_for, resolve_model


def _baseline(n: int, steps: int) -> None:
    env = simpy.Environment()
    res = simpy.Resource(env, 64)

    def proc(env: simpy.Environment):
        with res.request() as r:
            yield r
            yield env.timeout(0.01)
        for _ in range(steps):
            yield env.timeout(1.0)

    for _ in range(n):
        env.process(proc(env))
    env.run()


def _timed(fn) -> tuple[float, float, object]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--computes", type=int, default=600)
    ap.add_argument("--per-compute", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=0, help="0: all boots at once")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--baseline-steps", type=int, default=30)
    ap.add_argument("--model", default=None, help="calibration file [default: shipped]")
    ap.add_argument("--out", default=None, help="also write the run folder (last repetition)")
    ap.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE",
                    help="a model knob, as stacklens forecast --set (repeatable)")
    a = ap.parse_args()
    n = a.computes * a.per_compute
    cal, name = resolve_model(a.model)
    knobs = parse_sets(a.set, knobs_for(cal, computes=a.computes, servers=n,
                                         concurrency=a.concurrency or n))
    load0 = os.getloadavg()[0]
    fw, fc, bw, bc = [], [], [], []
    summ: dict = {}
    for i in range(max(1, a.repeat)):
        out = a.out if (a.out and i == a.repeat - 1) else None
        w, c, r = _timed(lambda out=out: forecast_run(cal, knobs, out, name, force=True))
        fw.append(w)
        fc.append(c)
        summ = r[1]  # type: ignore[index]
        w2, c2, _ = _timed(lambda: _baseline(n, a.baseline_steps))
        bw.append(w2)
        bc.append(c2)
        print(f"forecast_bench: rep {i + 1}: forecast {w:.2f} s, baseline {w2:.2f} s",
              file=sys.stderr)
    med = statistics.median
    print(json.dumps({
        "boots": n, "computes": a.computes, "concurrency": knobs.concurrency, "model": name,
        "set": a.set,
        "forecast": {"wall_s": round(med(fw), 3), "cpu_s": round(med(fc), 3),
                     "runs_wall_s": [round(x, 3) for x in fw]},
        "baseline": {"wall_s": round(med(bw), 3), "cpu_s": round(med(bc), 3),
                     "processes": n, "steps": a.baseline_steps},
        "ratio_to_baseline": round(med(fw) / med(bw), 3) if med(bw) else None,
        "target_s": 10.0,
        "simulated": {k: summ.get(k) for k in ("create_p50_s", "create_p95_s",
                                               "throughput_per_min", "duration_s", "failed",
                                               "retries", "top_hosts", "utilisation")},
        "machine": {"cpus": os.cpu_count(), "loadavg_1m": [round(load0, 2),
                                                            round(os.getloadavg()[0], 2)]},
    }, indent=2))


if __name__ == "__main__":
    main()
