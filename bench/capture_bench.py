#!/usr/bin/env python3
"""Capture overhead benchmark on the lab (a benchmark, not a test: it asserts nothing).

What it measures
----------------
``stacklens run`` records the broker's messages (RabbitMQ firehose + management API), MariaDB's
statement digests and the services' CPU/memory while it drives the load (``--capture``, the
default). Turning RabbitMQ's firehose on makes the broker publish every message twice, and the
recorders share the driver's process and the machine's cores, so the boots may get slower.

This script starts one lab (``stacklens lab up --computes K``), then runs the same small boot
storm ``--pairs`` times with capture and ``--pairs`` times without, interleaved (off, on, on,
off, off, on, ...) so that both arms see the same machine conditions, and prints one JSON
object: per arm the median over its runs of the run's create p50 and p95 (request to ACTIVE, s,
``manifest.json`` ``run.summary.create_s``) and wall time, and the ratios on/off. With two
cores shared with the whole control plane, expect a few percent of noise between identical
runs: compare ``ratio_create_p50`` with ``noise_create_p50`` (the spread of the off arm).

Needs the lab python (``STACKLENS_LAB_PYTHON`` or ``.ci/lab-setup.sh``); everything listens on
127.0.0.1; bounded: ``2 * --pairs`` runs, each with the scenario's timeouts.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCENARIO = """\
name: capture-bench
cloud: stacklens-lab
workload:
  boot_servers:
    per_compute: {per_compute}
    computes: {computes}
    flavor: lab.tiny
    image: stacklens-lab-image
    network: none
    concurrency: {concurrency}
    ramp: {{shape: burst}}
    phases:
      active: {{timeout_s: 600}}
      delete: {{when: each, timeout_s: 600}}
client: {{poll_interval_s: 1, microversion: "2.37"}}
cleanup: delete
logs: []
"""


def _sl(*args: str, env: dict[str, str], timeout_s: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stacklens", *args], env=env, text=True,
                          capture_output=True, timeout=timeout_s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--computes", type=int, default=4)
    ap.add_argument("--per-compute", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=10)
    ap.add_argument("--pairs", type=int, default=3, help="runs per arm (default 3)")
    ap.add_argument("--port-base", type=int, default=31500)
    ap.add_argument("--dir", type=Path, default=None, help="work folder (default: a temp dir)")
    a = ap.parse_args()
    work = a.dir or Path(tempfile.mkdtemp(prefix="stacklens-capbench-"))
    work.mkdir(parents=True, exist_ok=True)
    lab = work / "lab"
    env = {**os.environ, "STACKLENS_LAB_DIR": str(lab),
           "OS_CLIENT_CONFIG_FILE": str(lab / "clouds.yaml")}
    scn = work / "scenario.yaml"
    scn.write_text(SCENARIO.format(per_compute=a.per_compute, computes=a.computes,
                                   concurrency=a.concurrency))
    t0 = time.monotonic()
    up = _sl("lab", "up", "--computes", str(a.computes), "--port-base", str(a.port_base),
             env=env)
    if up.returncode != 0:
        sys.exit(f"lab up failed:\n{up.stderr[-3000:]}")
    print(f"capture_bench: lab up in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    arms: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
    try:
        for i in range(a.pairs):
            for arm in (("off", "on") if i % 2 == 0 else ("on", "off")):
                out = work / f"run-{arm}-{i}"
                flag = "--capture" if arm == "on" else "--no-capture"
                t = time.monotonic()
                r = _sl("run", str(scn), "--out", str(out), "--force", "--json", flag, env=env)
                wall = time.monotonic() - t
                if r.returncode not in (0, 3):
                    print(f"capture_bench: {arm} run {i} failed rc {r.returncode}:\n"
                          f"{r.stderr[-2000:]}", file=sys.stderr)
                    continue
                s = json.loads((out / "manifest.json").read_text())["run"]["summary"]
                arms[arm].append({"create_p50_s": s["create_s"]["p50"],
                                  "create_p95_s": s["create_s"]["p95"], "wall_s": wall,
                                  "ok": s["outcomes"].get("ok", 0)})
                print(f"capture_bench: {arm} {i}: create p50 {s['create_s']['p50']:.2f} s, "
                      f"wall {wall:.0f} s", file=sys.stderr)
    finally:
        _sl("lab", "down", env=env, timeout_s=300)

    def med(arm: str, k: str) -> float | None:
        v = [r[k] for r in arms[arm]]
        return statistics.median(v) if v else None

    res: dict[str, object] = {
        "bench": "capture_overhead", "computes": a.computes,
        "servers_per_run": a.computes * a.per_compute, "concurrency": a.concurrency,
        "pairs": a.pairs, "cpus": os.cpu_count(), "runs": arms,
    }
    for k in ("create_p50_s", "create_p95_s", "wall_s"):
        off, on = med("off", k), med("on", k)
        res[f"off_{k}"], res[f"on_{k}"] = off, on
        res[f"ratio_{k.removesuffix('_s')}"] = round(on / off, 3) if off and on else None
    offs = [r["create_p50_s"] for r in arms["off"]]
    res["noise_create_p50"] = (round((max(offs) - min(offs)) / statistics.median(offs), 3)
                               if len(offs) > 1 else None)
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
