#!/usr/bin/env python3
"""Load-driver overhead benchmark (a benchmark, not a test: it asserts nothing).

What it measures
----------------
``stacklens.drive`` boots and deletes ``--servers`` servers (default 2000) with concurrency
equal to that number (a burst: every server in flight at once) against a fake nova served over
real HTTP/1.1 on 127.0.0.1 (``tests/doubles/fake_nova.py``, its state machine as in the
unit tests: BUILD for ``--build-s`` seconds, then ACTIVE; deletes take one poll). The fake runs
in a child process, so the CPU it burns is not charged to the driver; it stops itself after
``--max-s`` seconds. Loopback only, bounded in count and time.

Printed as JSON:

* ``driver_cpu_s`` (user + sys of this process while driving, ``time.process_time``) and per
  server (one create, one delete, its share of the list calls) and per HTTP call;
* ``peak_in_flight``: servers holding a concurrency slot at once (the goal: all of them);
* ``issue_rate_per_s``: servers submitted per second (first to last submit), and
  ``accept_rate_per_s``: 202s received per second (first submit to last answer), both limited
  by the fake's single-threaded HTTP server as much as by the driver;
* ``peak_rss_mb`` of this process (``ru_maxrss``), ``fake_nova_cpu_s`` of the child.

The comparison with Rally (``rally-openstack`` ``NovaServers.boot_and_delete_server``) needs a
real cloud: it runs against ``stacklens lab`` and is not done here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from stacklens.drive.client import ComputeClient, Connection
from stacklens.drive.driver import Driver
from stacklens.drive.plan import Plan
from stacklens.drive.records import RecordWriter


def start_fake(args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    p = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve().parents[1] / "tests" / "doubles" / "fake_nova.py"),
         "--port", "0",
         "--build-s", str(args.build_s), "--polls-to-active", "1", "--hosts", "10",
         "--max-s", str(args.max_s)],
        stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline() if p.stdout else ""
    if not line.startswith("port "):
        p.kill()
        raise SystemExit(f"fake nova did not start: {line!r}")
    return p, f"http://127.0.0.1:{int(line.split()[1])}/v2.1"


async def drive(endpoint: str, args: argparse.Namespace, out: Path) -> tuple:
    plan = Plan(run_id="bench000", total=args.servers, image_ref="5e0cbc1e-0000-4000-8000-000000000001",
                flavor_ref="1", concurrency=args.servers, poll_interval_s=args.poll_interval_s,
                active_timeout_s=args.max_s, delete_timeout_s=args.max_s)
    client = ComputeClient(Connection(endpoint, "u:p"), max_connections=args.max_connections,
                           timeout_s=args.max_s)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with RecordWriter(out / "requests.jsonl") as w:
        summary = await Driver(plan, client, w).run()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    await client.aclose()
    return summary, cpu, wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=2000)
    ap.add_argument("--build-s", type=float, default=30.0,
                    help="seconds a fake server stays in BUILD (long enough for all to be in flight)")
    ap.add_argument("--poll-interval-s", type=float, default=2.0)
    ap.add_argument("--max-connections", type=int, default=100)
    ap.add_argument("--max-s", type=float, default=300.0, help="bound on the whole run")
    args = ap.parse_args()

    fake, endpoint = start_fake(args)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            summary, cpu, wall = asyncio.run(drive(endpoint, args, Path(tmp)))
    finally:
        fake.terminate()
        _, _, ru = os.wait4(fake.pid, 0)
    recs = summary.records
    submits = sorted(r.submit_ns for r in recs if r.submit_ns)
    accepts = sorted(r.accepted_ns for r in recs if r.accepted_ns)
    http_calls = sum(summary.calls.values())
    self_ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({
        "servers": args.servers,
        "concurrency": args.servers,
        "max_connections": args.max_connections,
        "build_s": args.build_s,
        "poll_interval_s": args.poll_interval_s,
        "outcomes": dict(Counter(r.outcome for r in recs)),
        "peak_in_flight": summary.stats.peak_in_flight,
        "http_calls": summary.calls,
        "driver_cpu_s": round(cpu, 3),
        "driver_cpu_s_per_server": round(cpu / len(recs), 6),
        "driver_cpu_ms_per_http_call": round(1000 * cpu / http_calls, 3),
        "wall_s": round(wall, 2),
        "issue_rate_per_s": round((len(submits) - 1) / ((submits[-1] - submits[0]) / 1e9), 1)
        if len(submits) > 1 and submits[-1] > submits[0] else None,
        "accept_rate_per_s": round(len(accepts) / ((accepts[-1] - submits[0]) / 1e9), 1)
        if accepts else None,
        "peak_rss_mb": round(self_ru.ru_maxrss / 1024, 1),
        "fake_nova_cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
        "rally": "skipped: the Rally comparison needs a real cloud (stacklens lab)",
        "machine": {"cpus": os.cpu_count(), "loadavg_1m": round(os.getloadavg()[0], 2)},
    }, indent=2))


if __name__ == "__main__":
    main()
