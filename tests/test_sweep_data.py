"""``sweep analyze`` on the real shared sets (fio-plot benchmark data, cloudpilot iperf3
runs): aggregates pinned to hand computations from the files; mixed-in text files and logs
counted as skipped; bad files never crash. Skips when ../shared/data is absent."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import pytest
from conftest import DATA, need
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stacklens.sweep.foreign import _classify, scan
from stacklens.sweep.knee import find_knees
from stacklens.sweep.tables import build_tables

FIO = DATA / "fio" / "fio-plot-benchmark-data"
IPERF = DATA / "iperf3" / "cloudpilot-intercloud"
EAST4 = IPERF / "host-eu-west-2_aws" / "target-us-west-2_aws" / "proxy-us-east4_gcp"
SAMSUNG = FIO / "HPDL380G8" / "HBA" / "SAMSUNG_860PRO"


@pytest.fixture(scope="module")
def fio_tables():
    found = scan([need(SAMSUNG)])
    return found, build_tables(found.runs)


def test_fio_plot_point_equals_hand_computation(fio_tables):
    found, t = fio_tables
    assert len(found.runs) == 98 and not found.skipped  # 7 iodepths x 7 numjobs x 2 rw
    doc = json.loads((SAMSUNG / "randread-2-32.json").read_text())
    r = doc["jobs"][0]["read"]
    row = t["sweep_summary"].filter(
        t["sweep_summary"]["point"] == "fio-randread-bs4k-qd2-nj32").to_dicts()[0]
    # fio 3.1 writes bw in KiB/s (no bw_bytes): 220955 KiB/s = 215.776... MiB/s
    assert row["bw_mib_s"] == pytest.approx(r["bw"] / 1024) == pytest.approx(215.7763671875)
    assert row["iops"] == pytest.approx(55238.926107)
    # one job with group_reporting and no json+ bins: fio's own percentile is kept
    assert row["lat_p99_us"] == pytest.approx(r["clat_ns"]["percentile"]["99.000000"] / 1000)
    assert row["lat_p99_us"] == pytest.approx(11206.656)
    assert row["n_repeats"] == 1 and row["n_failed"] == 0


def test_fio_plot_knee_along_iodepth(fio_tables):
    _, t = fio_tables
    knees = {(k.series["rw"], k.series["numjobs"]): k for k in find_knees(t["sweep_repeats"])
             if k.axis == "iodepth"}
    k = knees[("randread", 1)]
    assert k.xs == [1, 2, 4, 8, 16, 32, 64]
    assert k.knee == 16 and k.after == "holds"  # 36 53 72 144 221 228 226 MiB/s


def test_iperf3_medians_over_time_folders_equal_hand_computation():
    found = scan([need(EAST4)])
    t = build_tables(found.runs)
    s = t["sweep_summary"]
    row = s.filter(s["sweep"].str.ends_with("/large_file_proxy_host_direct")).to_dicts()[0]
    by_hand = []
    for d in sorted(EAST4.glob("time-*")):
        doc = json.loads((d / "large_file_proxy_host_direct.res").read_text())
        by_hand.append(doc["end"]["sum_received"]["bits_per_second"] / 1e6)
    assert row["n_repeats"] == len(by_hand) == 5
    assert row["bw_mbit_s"] == pytest.approx(statistics.median(by_hand))
    assert row["bw_mbit_s"] == pytest.approx(186.74133756708813)
    assert row["bw_mbit_s_min"] == pytest.approx(min(by_hand))
    assert row["bw_mbit_s_max"] == pytest.approx(max(by_hand))


def test_whole_sets_skip_text_and_logs_and_count_them():
    found = scan([need(FIO), need(IPERF)])
    kinds: dict[str, int] = {}
    for _, k, _ in found.skipped:
        kinds[k] = kinds.get(k, 0) + 1
    assert kinds == {"iperf3_text": 90, "fio_log": 5}
    assert found.n_files == 569 and len(found.runs) == 294 + 180


def test_bad_files_are_skipped_or_failed_never_fatal(tmp_path):
    (tmp_path / "cut.json").write_text('{"fio version": "fio-3.33", "jobs": [{"read"')
    (tmp_path / "empty.json").write_text("")
    (tmp_path / "blob.bin").write_bytes(b"\0\1\2" * 100)
    (tmp_path / "other.json").write_text('{"hello": 1}')
    (tmp_path / "err.json").write_text(json.dumps({
        "start": {"test_start": {"protocol": "TCP", "num_streams": 1}}, "intervals": [],
        "end": {}, "error": "unable to connect to server: Connection refused"}))
    (tmp_path / "nojobs.json").write_text('{"fio version": "fio-3.33", "jobs": [{}]}')
    found = scan([tmp_path])
    kinds = sorted(k for _, k, _ in found.skipped)
    assert kinds == ["bad_json", "binary", "empty", "other_json"]
    t = build_tables(found.runs)
    pts = {r["target"]: r for r in t["sweep_points"].to_dicts()}
    assert pts["err.json"]["status"] == "failed" and "refused" in pts["err.json"]["reason"]
    assert pts["nojobs.json"]["status"] == "failed"
    assert set(t["sweep_repeats"]["status"]) == {"failed"}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400) | st.text(max_size=400).map(str.encode))
def test_classify_never_raises(tmp_path, data):
    p = tmp_path / "f.json"
    p.write_bytes(data)
    kind, _ = _classify(p)
    assert isinstance(kind, str)


def test_cli_analyze_json(tmp_path):
    need(EAST4)
    r = subprocess.run([sys.executable, "-m", "stacklens", "sweep", "analyze", str(EAST4),
                        "--out", str(tmp_path / "o"), "--json"], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["overview"]["skipped_by_kind"] == {"iperf3_text": 25}
    assert rep["overview"]["repeats"] == 50 and rep["overview"]["failed"] == 0
    assert (tmp_path / "o" / "tables" / "sweep_summary.parquet").exists()
    r2 = subprocess.run([sys.executable, "-m", "stacklens", "sweep", "analyze",
                         str(tmp_path / "nope"), "--out", str(tmp_path / "o2")],
                        capture_output=True, text=True, timeout=120)
    assert r2.returncode == 1 and "no such file or folder" in r2.stderr


def test_cli_analyze_sanity_limits_flag_foreign_data(tmp_path):
    need(EAST4)
    by_hand = []  # every iperf3 JSON of the set: receiver Mbit/s (one pair per file)
    for f in sorted(EAST4.glob("time-*/*")):
        try:
            doc = json.loads(f.read_text())
        except ValueError:
            continue
        by_hand.append(doc["end"]["sum_received"]["bits_per_second"] / 1e6)
    limit = 150.0
    r = subprocess.run([sys.executable, "-m", "stacklens", "sweep", "analyze", str(EAST4),
                        "--out", str(tmp_path / "o"), "--json", "--max-link-mbit-s",
                        str(limit), "--max-pair-mbit-s", str(limit)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    above = sum(v > limit for v in by_hand)
    assert len(by_hand) == 50 and 0 < above < 50
    assert rep["flags"]["above_limit_total"] == rep["flags"]["above_limit_pair"] == above
    assert rep["overview"]["repeats"] == 50  # flagged, never dropped
    assert rep["meta"]["limits"] == {"pair_mbit_s": limit, "total_mbit_s": limit}


def test_fio_limit_flags_exactly_the_repeats_above_it(fio_tables):
    from stacklens.sweep.tables import Limits

    found, plain = fio_tables
    bw = plain["sweep_repeats"]["bw_mib_s"].to_list()
    limit = statistics.median(bw)
    flagged = build_tables(found.runs, Limits(bw_mib_s=limit))["sweep_repeats"]
    marks = ["above_limit_bw" in (f or "") for f in flagged["flags"].to_list()]
    assert marks == [v > limit for v in bw] and 0 < sum(marks) < len(bw)
