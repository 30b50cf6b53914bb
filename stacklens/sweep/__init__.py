"""``stacklens sweep``: the data plane. fio and iperf3 matrices over many targets (VMs, hosts,
network namespaces) started together, summed as the tools define their numbers, with the knee
where adding targets stops adding throughput; and the same analysis on JSON other tools wrote.

A stage beside the log pipeline: it reads no logs and writes its own tables
(``sweep_points``, ``sweep_repeats``, ``sweep_summary``, ``sweep_skipped``, ``sweep_probes``,
``sweep_app*``, ``sweep_resources``). Modules, in the
order data flows::

    plan     -> Plan (YAML, pydantic, errors at the line), Point per matrix repeat
    targets  -> transports: local, ip netns exec, ssh (collect's inventory and transport)
    runner   -> run_sweep: barrier start, raw JSON kept, failures as data, resumable journal
    foreign  -> scan: fio / iperf3 JSON of other tools as the same PointRun records
    fio, iperf -> the tools' JSON read as they define it (json+ clat bins merged)
    tables   -> sweep_points / sweep_repeats / sweep_summary from the raw files
    knee     -> Kneedle (kneed) on the medians, bootstrap range over repeats
    report   -> report.json data and terminal tables; output.finish writes them
    app, app_run -> the pgbench workload: TPS/TPM per second, /proc and psutil samples of
                the targets (sweep_app, sweep_app_repeats, sweep_app_series, sweep_resources)
    probes_run -> ping latency / fail-over and iperf3 --udp jitter by placement (sweep_probes)
    netlab   -> namespace test hosts on one or two bridges (tests, benches)
    pg       -> a throw-away PostgreSQL server in a namespace (tests, benches)
"""

from __future__ import annotations

from stacklens.sweep.foreign import Found, scan
from stacklens.sweep.knee import Knee, find_knees
from stacklens.sweep.output import finish
from stacklens.sweep.plan import Plan, PlanError, Point, load_plan, parse_plan, points
from stacklens.sweep.runner import RunOptions, SweepOutcome, run_sweep
from stacklens.sweep.tables import Limits, PointRun, TargetRun, build_tables

__all__ = [
    "Found",
    "Knee",
    "Limits",
    "Plan",
    "PlanError",
    "Point",
    "PointRun",
    "RunOptions",
    "SweepOutcome",
    "TargetRun",
    "build_tables",
    "find_knees",
    "finish",
    "load_plan",
    "parse_plan",
    "points",
    "run_sweep",
    "scan",
]
