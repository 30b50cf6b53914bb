"""stacklens.resources: ResourceRecorder on a child process this test starts (it burns a fixed
amount of CPU time, holds 64 MiB, a listening socket and a grandchild), and the resource report
sections on tiny hand-built tables (per-service peaks, loopback bytes, the sizing row at the
run's load level).

The child waits for a line on stdin before it works and exits when stdin closes: every wait is
bounded and nothing is left running. About 3 s.
"""

from __future__ import annotations

import subprocess
import sys
import time

import duckdb
import polars as pl
import pytest

from stacklens.analyze.build import section_rows
from stacklens.analyze.resource_sections import RESOURCE_SECTIONS
from stacklens.recorder import Recorder
from stacklens.resources import HOST_CPU_SERVICE, NET_SERVICE, ProcTarget, ResourceRecorder
from stacklens.schema import conform

S = {s.name: s for s in RESOURCE_SECTIONS}
CPU_S = 0.6

CHILD = f"""
import socket, subprocess, sys, time
kid = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                       stdin=subprocess.PIPE)
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen()
print("ready", flush=True)
sys.stdin.readline()
t0 = time.process_time()
while time.process_time() - t0 < {CPU_S}:
    pass
block = bytearray(64 * 2**20)
for i in range(0, len(block), 4096):
    block[i] = 1
print("done", flush=True)
sys.stdin.readline()
kid.stdin.close(); kid.wait(10)
"""


def test_recorder_samples_a_process_tree():
    p = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        rec = ResourceRecorder([ProcTarget(p.pid, "burner", "h1")], interval_s=0.1)
        assert isinstance(rec, Recorder)
        rec.start()
        p.stdin.write("go\n")
        p.stdin.flush()
        assert p.stdout.readline().strip() == "done"
        time.sleep(0.3)  # a sample or more with the memory held
        tables, notes = rec.stop()
    finally:
        p.stdin.close()
        p.wait(20)
    assert notes == []
    df = tables["resource_samples"]
    me = df.filter(pl.col("pid") == p.pid).sort("ts_ns")
    assert me.height >= 3
    assert me["service"].unique().to_list() == ["burner"]
    assert me["n_procs"].max() == 2  # the child and its grandchild
    assert me["rss_bytes"].max() >= 64 * 2**20
    assert me["connections"].max() >= 1  # the listening socket
    assert me["threads"].min() >= 2
    assert me["cpu_pct"][0] is None  # no interval before the first sample
    # CPU integrated over the intervals: the burned CPU time, no more than the process used
    dt = me["ts_ns"].diff() / 1e9
    used = (me["cpu_pct"] / 100 * dt).sum()
    assert CPU_S * 0.8 <= used <= CPU_S + 0.5
    lo = df.filter(pl.col("service") == NET_SERVICE)
    assert lo.height == me.height and lo["pid"].null_count() == lo.height
    assert lo["net_sent_bytes"].min() > 0
    # the machine's CPU: at least what the burner took over the same intervals, at most all CPUs
    host = df.filter(pl.col("service") == HOST_CPU_SERVICE).sort("ts_ns")
    assert host.height == me.height and host["pid"].null_count() == host.height
    assert host["cpu_pct"][0] is None
    ncpu = host["n_procs"][0]
    assert ncpu >= 1
    busy = (host["cpu_pct"] / 100 * dt).sum()
    assert used * 0.9 <= busy <= ncpu * (me["ts_ns"][-1] - me["ts_ns"][0]) / 1e9 * 1.05


def test_a_missing_pid_is_a_note():
    rec = ResourceRecorder({2**22 + 12345: ("ghost", "h")}, interval_s=0.05)
    rec.start()
    tables, notes = rec.stop()
    assert notes == ["ghost@h: pid 4206649 not found"]
    assert tables["resource_samples"].filter(pl.col("pid").is_not_null()).height == 0


T0 = 1_700_000_000_000_000_000


def _rows() -> pl.DataFrame:
    rows = []
    for i in range(4):
        ts = T0 + i * 1_000_000_000
        for svc, host, pid, cpu, rss in (("nova-api", "controller", 10, 20.0 + 10 * i, 300),
                                         ("nova-compute", "fake-1", 20, 5.0, 150 + i),
                                         ("nova-compute", "fake-2", 21, 150.0 if i == 2 else 1.0,
                                          140)):
            rows.append({"ts_ns": ts, "host": host, "service": svc, "pid": pid, "n_procs": 1,
                         "cpu_pct": None if i == 0 else cpu, "rss_bytes": rss * 2**20,
                         "threads": 3, "connections": 2})
        rows.append({"ts_ns": ts, "service": NET_SERVICE, "net_sent_bytes": 1000 + 500 * i * i,
                     "net_recv_bytes": 1000 + 500 * i * i})
        rows.append({"ts_ns": ts, "service": HOST_CPU_SERVICE, "n_procs": 2,
                     "cpu_pct": None if i == 0 else 190.0 if i == 2 else 100.0})
    return pl.DataFrame(rows, infer_schema_length=None)


def _con(**tables: pl.DataFrame) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name, df in tables.items():
        con.register(name, conform(df, name))
    return con


def test_per_service_peaks_and_means():
    rows = {r["service"]: r for r in section_rows(_con(resource_samples=_rows()),
                                                  S["resources"])}
    assert set(rows) == {"nova-api", "nova-compute"}
    c = rows["nova-compute"]
    assert (c["instances"], c["peak_cpu"], c["peak_rss_mib"]) == (2, 1.5, 153)
    assert rows["nova-api"]["peak_cpu"] == pytest.approx(0.5)
    assert rows["nova-api"]["mean_cpu"] == pytest.approx(0.4)
    net = section_rows(_con(resource_samples=_rows()), S["resource_network"])[0]
    assert net["lo_bytes"] == 4500 and net["peak_bytes_per_s"] == pytest.approx(2500)
    tl = section_rows(_con(resource_samples=_rows()), S["resource_timeline"])
    assert {r["service"] for r in tl} == {"nova-api", "nova-compute"}


def test_machine_cpu_beside_the_services():
    h = section_rows(_con(resource_samples=_rows()), S["resource_host"])[0]
    # services per sample: i=1: 30+5+1 = 36 %, i=2: 40+5+150 = 195 %, i=3: 50+5+1 = 56 %
    assert (h["cpus"], h["samples"]) == (2, 3)
    assert h["mean_busy"] == pytest.approx((1.0 + 1.9 + 1.0) / 3)
    assert h["peak_busy"] == pytest.approx(1.9)
    assert h["mean_services"] == pytest.approx((0.36 + 1.95 + 0.56) / 3)
    # the other CPU is never negative (psutil's per-process and machine counters tick apart)
    assert h["mean_other"] == pytest.approx((0.64 + 0.0 + 0.44) / 3)
    assert h["mean_utilisation"] == pytest.approx((1.0 + 1.9 + 1.0) / 3 / 2)


def test_sizing_row_at_the_runs_load_level():
    s = 1_000_000_000
    req = pl.DataFrame({"submit_ns": [T0, T0, T0 + s, T0 + 5 * s],
                        "active_ns": [T0 + 2 * s, T0 + 3 * s, T0 + 4 * s, None]})
    rows = section_rows(_con(resource_samples=_rows(), requests=req), S["resource_sizing"])
    assert [r["in_flight"] for r in rows] == [3, 3]
    assert rows[0]["service"] == "nova-compute" and rows[0]["peak_cpu"] == 1.5
