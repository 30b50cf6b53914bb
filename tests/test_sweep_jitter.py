"""Latency by placement with real ``iperf3 --udp`` and ping between namespace test hosts on two
bridges: the same namespace, the same bridge, and across the two bridges (their link delayed
with ``tc netem`` jitter where the kernel has netem), summarized per placement class; an unreachable server is kept with
iperf3's reason. Needs root, ip, tc, iperf3 and ping (skip with the reason)."""

from __future__ import annotations

import asyncio
import subprocess

import polars as pl
import pytest

from stacklens.sweep import finish, parse_plan, run_sweep
from stacklens.sweep.netlab import NetLab, netlab_unavailable

WHY = netlab_unavailable(("iperf3", "ping", "tc"))


@pytest.fixture(scope="module")
def lab():
    if WHY:
        pytest.skip(WHY)
    with NetLab(3, bridges=2) as lab:
        r = subprocess.run(["ip", "netns", "exec", lab.hub, "tc", "qdisc", "add", "dev", "x0",
                            "root", "netem", "delay", "2ms", "1ms"],
                           capture_output=True, text=True, timeout=20)
        yield lab, r.returncode == 0  # without netem (some kernels) the classes just exist


def test_jitter_and_latency_by_placement(lab, tmp_path):
    lab, netem = lab
    assert [lab.bridge_of(i) for i in range(3)] == [0, 0, 1]
    h, a = lab.hosts, lab.addresses
    plan = parse_plan(f"""
name: placement
targets:
  - {{name: a, netns: {h[0]}, address: {a[0]}}}
  - {{name: b, netns: {h[1]}, address: {a[1]}}}
  - {{name: c, netns: {h[2]}, address: {a[2]}}}
  - {{name: ghost, netns: {h[1]}, address: 192.0.2.99}}
probes:
  latency:
    - {{src: a, dst: b, placement: same-bridge}}
    - {{src: a, dst: c, placement: across-bridges}}
  jitter:
    - {{src: a, dst: a, placement: same-namespace, time_s: 1}}
    - {{src: a, dst: b, placement: same-bridge, time_s: 1}}
    - {{src: a, dst: c, placement: across-bridges, time_s: 1}}
    - {{src: a, dst: ghost, placement: nowhere, time_s: 1}}
  interval_s: 0.02
  duration_s: 1
""", "p.yaml")
    out = tmp_path / "out"
    res = asyncio.run(run_sweep(plan, out))
    rep = finish(out, res.runs, base=out, probes=res.probes)
    t = pl.read_parquet(out / "tables" / "sweep_probes.parquet")
    rows = {r["probe"]: r for r in t.to_dicts()}
    same, bridge, across = (rows[f"jitter-a-{d}-{i}"] for i, d in enumerate("abc"))
    for r in (same, bridge, across):
        assert r["status"] == "ok", r["reason"]
        assert r["jitter_ms"] is not None and r["loss_pct"] is not None
        assert 5 < r["bw_mbit_s"] < 15  # -b 10M
        assert (out / r["raw"]).exists()
    assert same["jitter_ms"] < 0.2 and bridge["jitter_ms"] < 0.2
    if netem:  # netem's 1 ms jitter on the bridges' link shows up only across it
        assert across["jitter_ms"] > 0.2
    ghost = rows["jitter-a-ghost-3"]
    assert ghost["status"] == "failed" and "unable to connect" in ghost["reason"]
    lat = {r["placement"]: r for r in rep["placement"] if r["kind"] == "latency"}
    assert lat["same-bridge"]["rtt_p50_ms"] < 1.5
    if netem:
        assert lat["across-bridges"]["rtt_p50_ms"] > 1.5
    jit = {r["placement"]: r for r in rep["placement"] if r["kind"] == "jitter"}
    assert set(jit) == {"same-namespace", "same-bridge", "across-bridges"}  # ok probes only
    assert jit["across-bridges"]["jitter_ms"] == round(across["jitter_ms"], 4)
    print({k: (v["jitter_ms"], v["loss_pct"]) for k, v in jit.items()})
