"""Fail-over and latency probes with real ping between namespace test hosts: a link taken
down for 2 s and a 100 % ``tc netem`` loss for 2 s are measured within 100 ms; a parser
table for ping's -D lines. Namespace tests need root, ip, tc and ping (skip with the reason)."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

from stacklens.sweep.netlab import NetLab, netlab_unavailable
from stacklens.sweep.probe import outage, parse_ping, ping_probe, timed
from stacklens.sweep.targets import GroupTransport

PING = """\
PING 192.0.2.11 (192.0.2.11) 56(84) bytes of data.
[1795500000.100000] 64 bytes from 192.0.2.11: icmp_seq=1 ttl=64 time=0.101 ms
[1795500000.120000] 64 bytes from 192.0.2.11: icmp_seq=2 ttl=64 time=0.200 ms
[1795500000.640000] 64 bytes from 192.0.2.11: icmp_seq=28 ttl=64 time=0.300 ms
[1795500000.660000] 64 bytes from 192.0.2.11: icmp_seq=29 ttl=64 time=0.400 ms

--- 192.0.2.11 ping statistics ---
30 packets transmitted, 4 received, 86.6667% packet loss, time 600ms
"""


def test_parse_and_outage_table():
    replies = parse_ping(PING)
    assert [r.seq for r in replies] == [1, 2, 28, 29]
    r = outage(replies, 0.02, sent=30)
    assert r.received == 4 and r.loss_pct == pytest.approx(100 * 26 / 30)
    assert r.max_gap_s == pytest.approx(0.52) and r.outage_s == pytest.approx(0.50)
    assert r.rtt_p50_ms == 0.2 and r.rtt_max_ms == 0.4
    assert outage([], 0.02).max_gap_s is None


WHY = netlab_unavailable(("ping", "tc"))


@pytest.fixture(scope="module")
def lab():
    if WHY:
        pytest.skip(WHY)
    with NetLab(2) as lab:
        yield lab


def _sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, timeout=20)


def test_link_down_2s_is_measured_within_100ms(lab):
    async def down() -> None:
        _sh("ip", "-n", lab.hub, "link", "set", lab.veth(1), "down")

    async def up() -> None:
        _sh("ip", "-n", lab.hub, "link", "set", lab.veth(1), "up")

    r = asyncio.run(ping_probe(GroupTransport("h0", lab.hosts[0]), lab.addresses[1],
                               interval_s=0.01, duration_s=5, fault=timed(down, 2.0, up)))
    assert r.error is None and r.fault_s is not None
    assert abs(r.outage_s - r.fault_s) < 0.1, (r.outage_s, r.fault_s)
    assert r.sent > r.received and r.loss_pct > 10  # the requests of those 2 s were lost


def _netem_missing(ns: str) -> str | None:
    r = subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "lo", "root",
                        "netem", "delay", "1ms"], capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        return f"tc netem unavailable in this kernel: {r.stderr.strip()}"
    subprocess.run(["ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "lo", "root"],
                   capture_output=True, timeout=20)
    return None


def test_netem_total_loss_2s_is_measured_within_100ms(lab):
    why = _netem_missing(lab.hosts[1])
    if why:
        pytest.skip(why)
    dev = ["dev", "eth0"]

    async def lose() -> None:
        _sh("ip", "netns", "exec", lab.hosts[1], "tc", "qdisc", "add", *dev, "root", "netem",
            "loss", "100%")

    async def heal() -> None:
        _sh("ip", "netns", "exec", lab.hosts[1], "tc", "qdisc", "del", *dev, "root")

    r = asyncio.run(ping_probe(GroupTransport("h0", lab.hosts[0]), lab.addresses[1],
                               interval_s=0.01, duration_s=5, fault=timed(lose, 2.0, heal)))
    assert r.error is None
    assert abs(r.outage_s - r.fault_s) < 0.1, (r.outage_s, r.fault_s)
    assert r.rtt_p50_ms is not None and r.rtt_p50_ms < 50


def test_plan_probes_run_with_the_sweep_and_resume(lab, tmp_path):
    import polars as pl

    from stacklens.sweep import finish, parse_plan, run_sweep

    plan = parse_plan(f"""
name: probes
targets:
  - {{name: a, netns: {lab.hosts[0]}, address: {lab.addresses[0]}}}
  - {{name: b, netns: {lab.hosts[1]}, address: {lab.addresses[1]}}}
probes:
  latency: [{{src: a, dst: b, placement: same-bridge}}]
  failover:
    - {{src: a, dst: b, target: b, inject: ip link set eth0 down, undo: ip link set eth0 up,
        hold_s: 2}}
    - {{src: a, dst: b, target: b, inject: "false", undo: "true", hold_s: 0.5}}
  interval_s: 0.01
  duration_s: 4
""", "p.yaml")
    out = tmp_path / "out"
    res = asyncio.run(run_sweep(plan, out))
    rep = finish(out, res.runs, base=out, probes=res.probes)
    t = pl.read_parquet(out / "tables" / "sweep_probes.parquet").sort("probe")
    rows = {r["probe"]: r for r in t.to_dicts()}
    lat = rows["latency-a-b"]
    assert lat["status"] == "ok" and lat["loss_pct"] == 0 and lat["rtt_p50_ms"] < 50
    fo = rows["failover-a-b-on-b-0"]
    assert fo["status"] == "ok" and abs(fo["outage_s"] - fo["fault_s"]) < 0.1
    bad = rows["failover-a-b-on-b-1"]
    assert bad["status"] == "failed" and "'false' on b: exit 1" in bad["reason"]
    assert len(rep["probes"]) == 3 and (out / lat["raw"]).read_text().startswith("PING")
    again = asyncio.run(run_sweep(plan, out))
    assert [r["probe"] for r in again.probes] == [r["probe"] for r in res.probes]
    assert again.probes[1]["outage_s"] == res.probes[1]["outage_s"]  # read back, not re-run


def test_probe_plan_errors_name_the_line():
    from stacklens.sweep.plan import PlanError, parse_plan

    text = ("targets: [{name: a, local: true}]\nprobes:\n  latency: [{src: a, dst: zz}]\n")
    with pytest.raises(PlanError, match=r"^p.yaml:2: probes: unknown target 'zz'"):
        parse_plan(text, "p.yaml")
