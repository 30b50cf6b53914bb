"""The issue-10 acceptance sweep on network-namespace test hosts (root, fio, iperf3):

    python bench/sweep_netns.py OUT [--quick]

fio over 1, 2, 4 and 8 hosts x randread/randwrite x 4k/64k x 3 repeats (1 s points, 16 MiB
file per host in OUT/work, psync), and iperf3 over 1, 2, 4 and 8 pairs x TCP/UDP x 3 repeats
(1 s, UDP at 200 Mbit/s per pair) between 16 namespaces on one bridge. Prints the report's
maxima, knees and failed points, and the wall time; the namespaces are removed at the end.
``--quick``: 1, 2 and 4 hosts, 1 repeat (a smoke run).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from rich.console import Console

from stacklens.sweep import RunOptions, finish, parse_plan, run_sweep
from stacklens.sweep.netlab import NetLab, netlab_unavailable
from stacklens.sweep.output import plan_limits
from stacklens.sweep.report import render


def plan_text(lab: NetLab, out: Path, quick: bool) -> str:
    counts = "[1, 2, 4]" if quick else "[1, 2, 4, 8]"
    reps = 1 if quick else 3
    targets = "".join(f"  - {{name: h{i}, netns: {ns}, address: {a}}}\n"
                      for i, (ns, a) in enumerate(zip(lab.hosts, lab.addresses, strict=True)))
    links = "".join(f"    - {{client: h{i}, server: h{i + 8}}}\n" for i in range(8))
    return f"""name: netns-acceptance
workdir: {out}/work
lead_s: 1.0
targets:
{targets}fio:
  targets: [h0, h1, h2, h3, h4, h5, h6, h7]
  vms: {counts}
  rw: [randread, randwrite]
  bs: [4k, 64k]
  size: 16m
  runtime_s: 1
  repeats: {reps}
iperf3:
  links:
{links}  pairs: {counts}
  protocol: [tcp, udp]
  bitrate: 200M
  time_s: 1
  repeats: {reps}
"""


def main() -> None:
    why = netlab_unavailable()
    if why:
        sys.exit(f"sweep bench: {why}")
    out = Path(sys.argv[1])
    quick = "--quick" in sys.argv
    t0 = time.monotonic()
    with NetLab(16) as lab:
        plan = parse_plan(plan_text(lab, out, quick), "bench")
        res = asyncio.run(run_sweep(plan, out, RunOptions(on_event=lambda s: print(
            s, file=sys.stderr))))
        rep = finish(out, res.runs, plan_limits(plan), meta={"bench": "sweep_netns"},
                     base=out)
    wall = time.monotonic() - t0
    Console(width=160).print(render(rep))
    print(json.dumps({"ran": res.ran, "skipped": res.skipped, "failed": res.failed,
                      "wall_s": round(wall, 1)}))


if __name__ == "__main__":
    main()
