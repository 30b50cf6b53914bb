"""A forecast says how far it went beyond its calibration (issue 9): per stage, the draws at a
load above the highest its calibration samples had, and the storm's size against the
calibration's, as report findings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from stacklens.analyze.forecast_notes import forecast_notes
from stacklens.forecast.calibrate import load_model
from stacklens.forecast.dist import LoadDist, fit
from stacklens.forecast.model import simulate
from stacklens.forecast.records import (
    STAGE_COMPONENT,
    beyond_by_component,
    extrapolation,
    summary,
)
from stacklens.forecast.run import knobs_for, shipped_model


def test_fit_keeps_the_highest_sample_load_and_beyond_reads_it():
    d = fit([1, 2, 3, 4, 5, 6, 7, 8, 9, 30], [0.1] * 10, max_bins=2, min_per_bin=5)
    assert d.max_load == 30.0
    assert d.loads[-1] < 30.0  # the top bin's mean is lower: not the threshold
    assert not d.beyond(30.0) and d.beyond(30.5)
    back = LoadDist.from_json(json.loads(json.dumps(d.to_json())))
    assert back.max_load == 30.0 and back.beyond(31.0) and not back.beyond(29.0)
    old = d.to_json()
    del old["max_load"]  # a model of format 8: the top bin's mean load stands in
    assert LoadDist.from_json(old).calibrated_max() == d.loads[-1]
    assert not LoadDist.constant(1.0).beyond(1e9)  # no samples: nothing is measured beyond


def _drawn(computes: int, servers: int, concurrency: int) -> dict[str, dict]:
    cal = load_model(shipped_model())
    res = simulate(cal, knobs_for(cal, computes=computes, servers=servers,
                                  concurrency=concurrency))
    ext = extrapolation(res)
    assert set(ext) <= set(STAGE_COMPONENT)
    for stage, e in ext.items():
        assert 0 <= e["beyond"] <= e["draws"]
        assert e["calibrated_load_max"] == cal.stages[stage].calibrated_max()
        assert (e["beyond"] > 0) == (e["load_max"] > e["calibrated_load_max"])
    by = beyond_by_component(res)
    for c, share in by.items():
        mine = [e for e in ext.values() if e["component"] == c]
        assert share == round(sum(e["beyond"] for e in mine) / sum(e["draws"] for e in mine), 4)
    assert summary(res)["beyond_calibration"] == by
    return ext


def test_the_calibrations_own_storm_stays_within_and_a_big_one_goes_beyond():
    own = _drawn(4, 40, 20)  # the shipped model's calibration storm
    assert sum(e["beyond"] for e in own.values()) <= 0.05 * sum(e["draws"] for e in own.values())
    big = _drawn(100, 1000, 500)  # 25x: up to ~29 boots in flight, the lab's up to 20
    for stage in ("api", "conductor", "scheduler", "to_compute"):
        assert big[stage]["beyond_share"] > 0.2, (stage, big[stage])


def test_notes_of_a_measured_run_and_of_old_forecasts_are_empty():
    assert forecast_notes({"run": {}}) == []
    assert forecast_notes({"forecast": {"simulated": True}}) == []


def test_scale_note_warns_beyond_the_validated_step():
    cal = {"computes": 4, "servers": 40, "concurrency": 20}

    def note(**knobs):
        man = {"forecast": {"knobs": knobs, "calibration": {"knobs": cal}}}
        (n,) = forecast_notes(man)
        return n

    assert note(computes=4, servers=40, concurrency=20)["severity"] == "info"
    n = note(computes=8, servers=80, concurrency=40)
    assert n["severity"] == "info" and n["evidence"]["ratios"]["computes"] == 2.0
    n = note(computes=600, servers=12000, concurrency=600)
    assert n["severity"] == "warning"
    assert "150x" in n["text"] and n["evidence"]["ratios"]["servers"] == 300.0


def test_extrapolation_note_lists_components_by_share():
    def e(component, draws, beyond):
        return {"component": component, "draws": draws, "beyond": beyond}

    man = {"forecast": {"extrapolation": {
        "conductor": e("nova-conductor", 100, 90), "to_compute": e("nova-conductor", 100, 70),
        "api": e("nova-api", 100, 20), "build": e("nova-compute", 100, 4)},
        # the per-component shares of those stages, as the summary gives them
        "summary": {"beyond_calibration": {"nova-conductor": 0.8, "nova-api": 0.2,
                                           "nova-compute": 0.04}}}}
    (n,) = forecast_notes(man)
    assert n["severity"] == "warning"
    assert n["text"].index("nova-conductor 80%") < n["text"].index("nova-api 20%")
    assert "nova-compute" not in n["text"]  # 4 %: under the listed share
    assert n["evidence"]["components"]["nova-compute"] == 0.04
    man["forecast"]["extrapolation"] = {"build": e("nova-compute", 100, 4)}
    man["forecast"]["summary"] = {"beyond_calibration": {"nova-compute": 0.04}}
    (n,) = forecast_notes(man)
    assert n["severity"] == "info" and "at most 4% beyond" in n["text"]


def test_report_of_a_big_forecast_says_it_is_extrapolated(tmp_path: Path):
    out = tmp_path / "fc"
    p = subprocess.run([sys.executable, "-m", "stacklens", "forecast", "--computes", "100",
                        "--servers", "1000", "--concurrency", "500", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    man = json.loads((out / "manifest.json").read_text())
    assert man["forecast"]["extrapolation"]["conductor"]["beyond"] > 0
    p = subprocess.run([sys.executable, "-m", "stacklens", "report", str(out), "--json"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    notes = [f for f in json.loads(p.stdout)["findings"] if f["rule"] == "forecast"]
    assert notes[0]["severity"] == "warning" and "25x the calibration's 4" in notes[0]["text"]
    assert notes[1]["severity"] == "warning" and "extrapolated" in notes[1]["text"]
    assert "nova-conductor" in notes[1]["text"]
    # the shipped model's recorded validations: its own size within 15 %, 2x not all
    own, twice = notes[2:]
    assert own["severity"] == "info" and "computes 4, servers 40" in own["text"]
    assert twice["severity"] == "warning" and "beyond: nova-conductor p50_s" in twice["text"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stacklens", *args], capture_output=True,
                          text=True, timeout=300)


def test_validate_record_keeps_the_validation_in_the_model(tmp_path: Path):
    model = tmp_path / "m.json"
    model.write_text(shipped_model().read_text())
    runs = tmp_path / "runs"
    p = _cli("forecast", str(model), "-k", "4", "-n", "24", "-c", "12", "--out", str(runs))
    assert p.returncode == 0, p.stderr
    assert "drawn beyond the calibrated load: " in p.stdout
    before = load_model(model).validations
    p = _cli("forecast", "validate", str(model), str(runs), "--seeds", "2", "--record")
    assert p.returncode == 0, p.stderr
    assert "drawn beyond the calibrated load" in p.stdout
    (*old, rec) = load_model(model).validations
    assert tuple(old) == before
    assert rec["storm"] == {"computes": 4, "servers": 24, "concurrency": 12}
    assert rec["runs"] == 1 and rec["seeds"] == 2 and rec["target_pct"] == 15.0
    assert set(rec["error_pct"]) >= {"create_p50_s", "nova-conductor p50_s"}
    assert set(rec["beyond_calibration"]) <= set(STAGE_COMPONENT.values())
    out = tmp_path / "fc"
    p = _cli("forecast", str(model), "-k", "4", "-n", "24", "-c", "12", "--out", str(out))
    assert p.returncode == 0, p.stderr
    man = json.loads((out / "manifest.json").read_text())
    notes = forecast_notes(man)
    assert any("validated against 1 measured run of computes 4, servers 24" in n["text"]
               for n in notes)
    # a validation of the model with knobs set says so
    p = _cli("forecast", "validate", str(model), str(runs), "--seeds", "1", "--record",
             "--set", "saturation=false")
    assert p.returncode == 0, p.stderr
    last = load_model(model).validations[-1]
    assert last["set"] == ["saturation=false"] and rec["set"] == []
    text = forecast_notes({"forecast": {"calibration": {"validations": [last]}}})[0]["text"]
    assert "with --set saturation=false" in text
    # the shipped model is installed with stacklens: not written
    p = _cli("forecast", "validate", "lab-2025.1", str(runs), "--seeds", "1", "--record")
    assert p.returncode == 1 and "file path" in p.stderr


def test_a_model_without_validations_says_so():
    man = {"forecast": {"calibration": {"knobs": {}, "validations": []}}}
    (n,) = forecast_notes(man)
    assert n["severity"] == "info" and "no recorded validation" in n["text"]
