"""stacklens forecast: the CLI end to end (subprocess), the run folder a forecast writes (the
canonical tables that `report` reads unchanged, marked simulated), calibration round trip,
validation table, and the empirical distributions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from stacklens.errors import UserError
from stacklens.forecast.calibrate import STAGES, calibrate, load_model
from stacklens.forecast.dist import N_QUANTILES, LoadDist, fit
from stacklens.forecast.run import shipped_model
from stacklens.schema import TABLES
from stacklens.store import RunStore


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stacklens", *args], capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def sim_run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fc") / "run"
    p = cli("forecast", "--computes", "4", "--servers", "24", "--concurrency", "12",
            "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "simulated: 24 boots" in p.stdout
    return out


def test_forecast_writes_the_canonical_tables(sim_run: Path):
    st = RunStore(sim_run)
    for name in ("traces", "spans", "breakdown", "phases", "events", "flows",
                 "ingest_stats", "quarantine", "clock_offsets"):
        df = st.read(name)
        assert dict(df.schema) == TABLES[name], name
    tr = st.read("traces")
    assert tr.filter(pl.col("operation") == "server.create").height == 24
    assert tr.filter(pl.col("operation") == "server.delete").height == 24
    assert tr["outcome_reason"].str.starts_with("simulated").all()
    hosts = set(st.read("spans")["host"].unique().to_list())
    assert hosts and all(h.startswith("simulated-") for h in hosts)
    # breakdown rows of a trace sum to its end-to-end time
    bd = st.read("breakdown").group_by("trace_id").agg(pl.col("dur_s").sum().alias("sum_s"))
    j = tr.join(bd, on="trace_id")
    assert ((j["sum_s"] - j["dur_s"]).abs() < 1e-6).all()
    man = json.loads((sim_run / "manifest.json").read_text())
    assert man["forecast"]["simulated"] is True
    assert man["forecast"]["knobs"]["computes"] == 4
    assert man["inputs"][0].startswith("simulated")


def test_report_works_on_a_forecast_unchanged(sim_run: Path):
    p = cli("report", str(sim_run), "--json")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["summary"]["traces"] == 48
    ops = {o["operation"]: o for o in rep["operations"]}
    assert ops["server.create"]["count"] == 24
    assert {c["component"] for c in rep["components"]} >= {"nova-api", "nova-compute"}
    assert (sim_run / "report.html").exists()


def test_calibrate_round_trip_and_validate(sim_run: Path, tmp_path: Path):
    model = tmp_path / "m.json"
    p = cli("forecast", "calibrate", str(sim_run), "-o", str(model), "--provenance", "lab=test")
    assert p.returncode == 0, p.stderr
    cal = load_model(model)
    assert cal.provenance["lab"] == "test"
    assert cal.knobs["computes"] == 4 and cal.knobs["servers"] == 24
    p = cli("forecast", "validate", str(model), str(sim_run), "--seeds", "2")
    assert p.returncode == 0, p.stderr
    assert "create_p50_s" in p.stdout and "predicted" in p.stdout
    assert "burst_on_one_host" in p.stdout  # the runs' concurrency is known
    assert "seeds p10..p90" in p.stdout  # the seeds' spread beside the median


def test_seed_spread_shows_a_bimodal_burst():
    from stacklens.forecast.validate import compare, render, seed_spread

    # per seed the burst piles onto one host (p95 170 s) or splits (100 s): the median alone
    # moves with the seed set, the 10th..90th percentiles show both modes
    preds = [{"create_p95_s": 170.0 if s % 2 else 100.0, "x": None} for s in range(10)]
    got = seed_spread(preds)
    assert got["x"] is None
    lo, hi = got["create_p95_s"]  # type: ignore[misc]
    assert lo == pytest.approx(100.0) and hi == pytest.approx(170.0)
    rows = compare({"create_p95_s": 135.0}, {"create_p95_s": 164.0}, None, got)
    assert rows[0]["predicted_p10"] == lo
    text = render(rows)
    assert "100.00..170.00" in text and "> target" in text
    assert seed_spread([{"create_p95_s": 1.0}])["create_p95_s"] is None  # one seed
    lo, hi = seed_spread([{"b": 39.0}, {"b": 40.0}])["b"]  # type: ignore[misc]
    assert 39.0 <= lo <= hi <= 40.0  # never beyond the seeds (40 of 40 at most)


def test_render_separates_a_miss_from_the_runs_spread():
    from stacklens.forecast.validate import (
        compare,
        median_confidence,
        median_metrics,
        median_rank,
        record,
        render,
    )

    assert median_confidence(1) is None
    assert median_confidence(5) == pytest.approx(0.9375)  # P(min < median < max), 5 runs
    runs = [{"c": v, "b": w} for v, w in [(4.68, 1.65), (9.45, 1.79), (8.05, 1.66),
                                          (8.41, 1.67), (5.18, 1.70)]]
    meas, spread = median_metrics(runs)
    rows = compare({"c": 4.84, "b": 1.40}, meas, spread)
    text = render(rows, runs=5)
    c_line, b_line = text.splitlines()[1:3]
    assert c_line.endswith("> target")  # -40 %, but inside 4.68..9.45
    assert b_line.endswith("> target, outside range")  # -16 % and below 1.65
    assert "5 runs, a 93.8% confidence interval of their median" in text
    assert "confidence" not in render(rows)  # no run count, no claim
    assert "outside range" not in render(compare({"c": 4.84}, {"c": 8.05}))  # no range
    rec = record(rows, {"computes": 8}, 5, 40, {}, "2026-12-07T06:00:00+00:00")
    assert rec["outside_range"] == ["b"] and rec["range_confidence"] == 0.9375
    assert record(rows, {}, 1, 40, {}, "x")["range_confidence"] is None  # one run: no interval
    from stacklens.analyze.forecast_notes import forecast_notes

    (note,) = forecast_notes({"forecast": {"calibration": {"validations": [rec]}}})
    assert note["severity"] == "warning" and note["text"].endswith(
        "beyond: c -40%, b -16%; outside the measured runs' range (a 93.8% confidence "
        "interval of their median): b")
    # ten runs: the 2nd lowest..2nd highest, at 1 - 2 * 11 / 1024
    assert median_rank(10) == (2, pytest.approx(0.978515625))
    assert [median_rank(n)[0] for n in (2, 5, 8, 9, 12, 15)] == [1, 1, 1, 2, 3, 4]
    ten = [{"c": float(v)} for v in (9, 1, 5, 3, 7, 2, 8, 4, 10, 6)]
    med10, spread10 = median_metrics(ten)
    assert med10["c"] == 5.5 and spread10["c"] == (2.0, 9.0)
    text10 = render(compare({"c": 1.5}, med10, spread10), runs=10)
    assert "outside range" in text10.splitlines()[1]  # 1.5 is below the 2nd lowest
    assert "the 2nd lowest..2nd highest of 10 runs, a 97.9% confidence" in text10
    old = {k: x for k, x in rec.items() if k not in ("outside_range", "range_confidence")}
    (note,) = forecast_notes({"forecast": {"calibration": {"validations": [old]}}})
    assert "outside" not in note["text"]  # a record from before session 34


def test_burst_on_one_host_counts_the_first_creates(sim_run: Path):
    from stacklens.forecast.validate import measured_metrics

    assert "burst_on_one_host" not in measured_metrics(sim_run)  # no concurrency given
    spans = RunStore(sim_run).read("spans").filter(pl.col("service") == "nova-compute")
    first = (RunStore(sim_run).read("traces").filter(pl.col("operation") == "server.create")
             .sort("start_ns").head(12))
    hosts = (spans.sort("start_ns").group_by("trace_id", maintain_order=True)
             .agg(pl.col("host").first()).join(first.select("trace_id"), on="trace_id"))
    want = max(hosts.group_by("host").len()["len"].to_list())
    assert 12 / 4 <= want <= 12  # 12 boots over 4 hosts
    assert measured_metrics(sim_run, 12)["burst_on_one_host"] == want


def test_calibrate_in_process_matches_shipped_shape(sim_run: Path):
    cal = calibrate([sim_run])
    shipped = load_model(shipped_model())
    assert set(STAGES) <= set(cal.stages) <= set(shipped.stages)  # no lock lines: no kinds
    assert shipped.provenance["release"].startswith("OpenStack 2025.1")
    assert shipped.knobs["computes"] == 4 and shipped.knobs["concurrency"] == 20


def test_user_errors_are_one_line(tmp_path: Path, sim_run: Path):
    p = cli("forecast", "--set", "no_such_knob=1")
    assert p.returncode == 1 and "unknown knob" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = cli("forecast", "--out", str(sim_run))
    assert p.returncode == 1 and "--force" in p.stderr
    p = cli("forecast", str(tmp_path / "missing.json"))
    assert p.returncode == 1 and "cannot read calibration model" in p.stderr
    p = cli("forecast", "--set", "db_deadlock_rate=2")
    assert p.returncode == 1 and "rate" in p.stderr


def test_knobs_listed():
    p = cli("forecast", "knobs")
    assert p.returncode == 0
    assert "host_subset_size" in p.stdout and "max_concurrent_builds" in p.stdout


def test_dist_sampling_is_monotone_and_extrapolates():
    loads = [float(i % 20) for i in range(80)]
    times = [1.0 + 0.1 * x + (i % 7) * 0.01 for i, x in enumerate(loads)]
    d = fit(loads, times)
    assert all(len(q) == N_QUANTILES for q in d.qs)
    us = [i / 50 for i in range(50)]
    for load in (0.0, 10.0, 19.0):
        vals = [d.sample(u, load) for u in us]
        assert vals == sorted(vals)
    assert d.median(15.0) > d.median(2.0)
    assert d.sample(0.5, 60.0) > d.sample(0.5, 19.0)  # beyond the data: the fitted line
    assert d.sample(0.5, 1e9, max_slowdown=3.0) <= 3.0 * d.sample(0.5, 19.0) + 1e-9
    assert LoadDist.from_json(d.to_json()).median(5.0) == pytest.approx(d.median(5.0), abs=1e-5)


def test_fit_needs_samples():
    with pytest.raises(ValueError):
        fit([], [])


def test_attribution_scales_components_and_keeps_sums(sim_run: Path):
    from stacklens.forecast.attribution import fit_attribution

    cal = fit_attribution(calibrate([sim_run]), [sim_run], seeds=2)
    assert set(cal.attribution) <= {"nova-api", "nova-conductor", "nova-scheduler",
                                     "placement-api", "nova-compute", "between components"}
    assert all(0.2 <= f <= 5.0 for f in cal.attribution.values())
    shipped = load_model(shipped_model())
    assert shipped.attribution  # fitted on the lab runs the model was calibrated on


def test_work_index_and_per_stage_overrides(sim_run: Path):
    from stacklens.forecast.calibrate import Calibration
    from stacklens.forecast.model import simulate
    from stacklens.forecast.run import knobs_for
    from stacklens.forecast.samples import run_samples

    store = RunStore(sim_run)
    pipe = run_samples(store, "pipeline")["samples"]
    work = run_samples(store, "work")["samples"]
    # work = pipeline + the builds in their build phase (not waiting for the lock): never less
    for stage in ("conductor_call", "to_compute", "api"):
        assert len(work[stage]) == len(pipe[stage])
        assert all(w[0] >= p[0] for w, p in zip(sorted(work[stage], key=lambda x: x[2]),
                                                sorted(pipe[stage], key=lambda x: x[2]),
                                                strict=True))
    assert sum(w[0] for w in work["build"]) > sum(p[0] for p in pipe["build"])
    cal = calibrate([sim_run], stage_load={"conductor_call": "work"})
    assert cal.load == "pipeline" and cal.stage_load == {"conductor_call": "work"}
    back = Calibration.from_json(json.loads(json.dumps(cal.to_json())))
    assert back.stage_load == {"conductor_call": "work"}
    plain = Calibration.from_json(calibrate([sim_run]).to_json())
    assert back.stages["api"] == plain.stages["api"]  # the other stages: pipeline
    with pytest.raises(UserError, match="no stage conductr_call"):
        calibrate([sim_run], stage_load={"conductr_call": "work"})
    res = simulate(back, knobs_for(back, computes=4, servers=24, concurrency=12))
    assert len(res.boots) == 24 and all(b.outcome == "success" for b in res.boots)
