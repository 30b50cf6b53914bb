"""``stacklens sweep run`` end to end on network-namespace test hosts with real fio and
iperf3 (no mocks): targets start together, raw JSON kept, failures kept with their reason,
a re-run skips finished points. Needs root, ip, fio and iperf3; skips with the reason."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import polars as pl
import pytest

from stacklens.sweep import RunOptions, finish, parse_plan, run_sweep
from stacklens.sweep.netlab import NetLab, netlab_unavailable
from stacklens.sweep.output import plan_limits

WHY = netlab_unavailable(("fio", "iperf3"))
pytestmark = pytest.mark.skipif(WHY is not None, reason=WHY or "")


@pytest.fixture(scope="module")
def lab():
    with NetLab(4) as lab:
        yield lab


def _targets(lab: NetLab, extra: str = "") -> str:
    rows = "".join(f"  - {{name: h{i}, netns: {ns}, address: {a}}}\n"
                   for i, (ns, a) in enumerate(zip(lab.hosts, lab.addresses, strict=True)))
    return "targets:\n" + rows + extra


def test_fio_and_iperf3_sweep_sums_merges_and_resumes(lab, tmp_path):
    plan = parse_plan(f"""
name: t
workdir: {tmp_path}/work
lead_s: 0.5
{_targets(lab)}
fio: {{vms: [1, 2, 3], rw: [randread], bs: [4k], size: 4m, runtime_s: 1, repeats: 2,
       limits: {{bw_mib_s: 0.001}}}}
iperf3:
  links: [{{client: h0, server: h2}}, {{client: h1, server: h3}}]
  pairs: [1, 2]
  protocol: [tcp, udp]
  bitrate: 20M
  time_s: 1
  repeats: 1
""")
    out = tmp_path / "out"
    res = asyncio.run(run_sweep(plan, out))
    assert (res.ran, res.skipped, res.failed) == (10, 0, 0)
    assert not list((tmp_path / "work").glob("sl-*"))  # fio's test files removed at the end
    rep = finish(out, res.runs, plan_limits(plan), base=out)
    pts = pl.read_parquet(out / "tables" / "sweep_points.parquet")
    reps = pl.read_parquet(out / "tables" / "sweep_repeats.parquet")
    assert pts.height == 2 * (1 + 2 + 3) + (1 + 2) * 2 and set(pts["status"]) == {"ok"}
    # every target of a point started at the barrier: within 0.5 s of each other
    assert reps["start_spread_ms"].max() < 500
    # a repeat's sum is the sum of its targets' numbers, read back from the raw JSON
    r = reps.filter((pl.col("point") == "fio-randread-bs4k-qd1-nj1-vms3")
                    & (pl.col("repeat") == 0)).to_dicts()[0]
    by_hand_bw = by_hand_iops = 0.0
    bins: dict[int, int] = {}
    for i in range(3):
        doc = json.loads((out / "raw" / r["point"] / "r0" / f"h{i}.json").read_text())
        for job in doc["jobs"]:
            by_hand_bw += job["read"]["bw_bytes"] / 2**20
            by_hand_iops += job["read"]["iops"]
            for k, c in job["read"]["clat_ns"]["bins"].items():
                bins[int(k)] = bins.get(int(k), 0) + c
    assert r["bw_mib_s"] == pytest.approx(by_hand_bw)
    assert r["iops"] == pytest.approx(by_hand_iops)
    assert r["lat_source"] == "merged_bins"
    n = sum(bins.values())
    acc, p99 = 0, None
    for v in sorted(bins):
        acc += bins[v]
        if acc >= 0.99 * n:
            p99 = v / 1000
            break
    assert r["lat_p99_us"] == p99
    assert "above_limit_bw" in (r["flags"] or "")
    udp = reps.filter(pl.col("point") == "iperf3-udp-P1-fwd-pairs2").to_dicts()[0]
    assert udp["bw_mbit_s"] > 0 and udp["lost_percent"] is not None
    assert rep["overview"]["ok"] == 10
    # resumable: nothing left to do
    again = asyncio.run(run_sweep(plan, out))
    assert (again.ran, again.skipped) == (0, 10)


def test_failed_points_are_kept_with_their_reason(lab, tmp_path):
    ghost = "  - {name: ghost, netns: sltnosuchns0, address: 192.0.2.99}\n"
    plan = parse_plan(f"""
name: bad
workdir: {tmp_path}/work
lead_s: 0.3
{_targets(lab, ghost)}
fio:
  targets: [h0, ghost]
  vms: [1, 2]
  rw: [randread]
  bs: [4k]
  size: 4m
  runtime_s: 1
  repeats: 1
iperf3:
  links: [{{client: h0, server: h1}}]
  pairs: [1]
  bitrate: 10M
  time_s: 1
  repeats: 1
  port: 5300
""")
    out = tmp_path / "out"
    # make the iperf3 point fail for real: nothing listens where the client connects
    plan = plan.model_copy(update={"targets": [
        t.model_copy(update={"address": "192.0.2.98"}) if t.name == "h1" else t
        for t in plan.targets]})
    res = asyncio.run(run_sweep(plan, out))
    assert res.ran == 3 and res.failed == 2
    rep = finish(out, res.runs, plan_limits(plan), base=out)
    reps = pl.read_parquet(out / "tables" / "sweep_repeats.parquet").sort("point")
    st = dict(zip(reps["point"], reps["status"], strict=True))
    assert st["fio-randread-bs4k-qd1-nj1-vms1"] == "ok"
    assert st["fio-randread-bs4k-qd1-nj1-vms2"] == "partial"
    assert st["iperf3-tcp-P1-fwd-pairs1"] == "failed"
    pts = pl.read_parquet(out / "tables" / "sweep_points.parquet")
    ghost = pts.filter(pl.col("target") == "ghost").to_dicts()[0]
    assert ghost["status"] == "failed" and "sltnosuchns0" in ghost["reason"]
    assert {f["point"] for f in rep["failed"]} == {"fio-randread-bs4k-qd1-nj1-vms2",
                                                   "iperf3-tcp-P1-fwd-pairs1"}
    # --retry-failed runs only those again
    again = asyncio.run(run_sweep(plan, out, RunOptions(retry_failed=True)))
    assert (again.ran, again.skipped) == (2, 1)


def test_cli_run_and_bad_plan(lab, tmp_path):
    plan = tmp_path / "p.yaml"
    plan.write_text(f"name: cli\nworkdir: {tmp_path}/w\nlead_s: 0.3\n{_targets(lab)}"
                    "fio: {vms: [1], rw: [read], bs: [64k], size: 4m, runtime_s: 1, "
                    "repeats: 1}\n")
    r = subprocess.run([sys.executable, "-m", "stacklens", "sweep", "run", str(plan), "--out",
                        str(tmp_path / "o"), "--json"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["overview"]["ok"] == 1
    assert "[1/1] fio-read-bs64k-qd1-nj1-vms1 r0: ok" in r.stderr
    plan.write_text(plan.read_text().replace("rw: [read]", "rw: [reed]"))
    r = subprocess.run([sys.executable, "-m", "stacklens", "sweep", "run", str(plan), "--out",
                        str(tmp_path / "o2")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert r.stderr.startswith(f"stacklens: error: {plan}:9: fio.rw: unknown rw 'reed'")
