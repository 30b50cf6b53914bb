"""Sweep plans: validation with errors at the YAML line; every example plan loads; the matrix
expands to stable point keys; fio and iperf3 readers on real tool output and fio's
percentile rule (no mocks: fio is run when installed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stacklens.sweep.fio import merge_fio, parse_fio, percentile_from_bins
from stacklens.sweep.iperf import parse_iperf
from stacklens.sweep.plan import PlanError, load_plan, parse_bs, parse_plan, points

ROOT = Path(__file__).resolve().parents[1]

GOOD = """\
name: t
targets:
  - {name: a, local: true}
  - {name: b, netns: sltx, address: 192.0.2.2}
fio:
  vms: [1, 2]
  rw: [randread, write]
  bs: [4k]
  repeats: 2
iperf3:
  links: [{client: a, server: b}]
  pairs: [1]
  protocol: [tcp, udp]
  repeats: 1
"""


def test_good_plan_expands_to_stable_points():
    plan = parse_plan(GOOD, "p.yaml")
    pts = points(plan)
    assert len(pts) == 2 * 2 * 2 + 2
    keys = [p.key for p in pts]
    assert keys[0] == "fio-randread-bs4k-qd1-nj1-vms1"
    assert pts[4].targets == ("a", "b") and pts[4].n_targets == 2
    assert "iperf3-udp-P1-fwd-pairs1" in keys
    assert [p.key for p in points(parse_plan(GOOD))] == keys  # stable: resume relies on it


@pytest.mark.parametrize(("text", "line", "words"), [
    (GOOD.replace("rw: [randread, write]", "rw: [randread, wrte]"), 7, "unknown rw 'wrte'"),
    (GOOD.replace("bs: [4k]", "bs: [4q]"), 8, "is not a size"),
    (GOOD.replace("vms: [1, 2]", "vms: [1, 3]"), 6, "3 targets asked"),
    (GOOD.replace("{name: a, local: true}", "{name: a, local: true, netns: y}"), 3,
     "exactly one of"),
    (GOOD.replace("server: b}", "server: zz}"), 11, "unknown target 'zz'"),
    (GOOD.replace("  repeats: 1\n", "  repeats: 0\n"), 14, "greater than or equal to 1"),
    (GOOD + "extra: 1\n", 15, "Extra inputs"),
    ("targets: [\n", 2, "not valid YAML"),
])
def test_errors_name_the_line(text, line, words):
    with pytest.raises(PlanError) as e:
        parse_plan(text, "p.yaml")
    assert str(e.value).startswith(f"p.yaml:{line}:"), str(e.value)
    assert words in str(e.value)


def test_ssh_targets_need_an_inventory():
    text = "targets: [{name: a, ssh: cmp1}]\nfio: {vms: [1]}\n"
    with pytest.raises(PlanError, match="need inventory"):
        parse_plan(text, "p.yaml")


@pytest.mark.parametrize("path", sorted((ROOT / "examples" / "sweep").glob("*.yaml")),
                         ids=lambda p: p.name)
def test_example_plans_load(path):
    plan = load_plan(path)
    assert points(plan)


def test_parse_bs():
    assert parse_bs("4k") == 4096 and parse_bs("64KiB") == 65536 and parse_bs("1m") == 1 << 20
    assert parse_bs("4096") == 4096 and parse_bs("4k-16k") is None


@given(st.lists(st.integers(1, 10_000), min_size=1, max_size=200),
       st.sampled_from([1.0, 50.0, 90.0, 99.0, 99.9, 100.0]))
def test_percentile_rule_is_nearest_rank_over_buckets(samples, p):
    """fio's rule over a histogram whose bucket values are the samples themselves is the
    nearest-rank percentile: the smallest value with at least p% of samples at or below."""
    bins: dict[int, int] = {}
    for s in samples:
        bins[s] = bins.get(s, 0) + 1
    got = percentile_from_bins(bins, [p])[p]
    s = sorted(samples)
    want = next(v for i, v in enumerate(s, 1) if i >= p / 100 * len(s))
    assert got == want


@pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
def test_fio_json_plus_percentiles_match_fio_and_merge_sums(tmp_path):
    """Real fio (2 jobs, no group_reporting): each job's percentiles from its bins equal
    fio's own; the merge sums bandwidth and IOPS and reads percentiles from summed bins."""
    out = subprocess.run(
        ["fio", "--name=t", f"--directory={tmp_path}", "--size=8m", "--rw=randread",
         "--bs=4k", "--ioengine=psync", "--numjobs=2", "--time_based", "--runtime=1",
         "--output-format=json+"], capture_output=True, text=True, timeout=60, check=True)
    doc = json.loads(out.stdout)
    for job in doc["jobs"]:
        clat = job["read"]["clat_ns"]
        bins = {int(k): v for k, v in clat["bins"].items()}
        mine = percentile_from_bins(bins, [float(k) for k in clat["percentile"]])
        assert {f"{k:f}": v for k, v in mine.items()} == clat["percentile"]
    one = [parse_fio({**doc, "jobs": [j]}) for j in doc["jobs"]]
    both = parse_fio(doc)
    assert both.iops == pytest.approx(sum(j["read"]["iops"] for j in doc["jobs"]))
    assert both.bw_bytes_s == sum(j["read"]["bw_bytes"] for j in doc["jobs"])
    merged = merge_fio(one)
    assert merged.pct_ns == both.pct_ns
    assert sum(merged.bins.values()) == sum(j["read"]["total_ios"] for j in doc["jobs"])


def test_iperf_error_document_is_a_failed_result():
    doc = {"start": {"test_start": {"protocol": "TCP", "num_streams": 1}}, "end": {},
           "error": "unable to connect to server: Connection refused"}
    r = parse_iperf(doc)
    assert r.error and "refused" in r.error and r.received_bps == 0
