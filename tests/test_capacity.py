"""stacklens capacity on the forecast model: the boundary, every step kept as a run folder,
resuming an interrupted search, and user errors (CLI as a subprocess)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from stacklens.errors import UserError
from stacklens.forecast.capacity import Sla, parse_sla, search
from stacklens.forecast.run import forecast_run, knobs_for, resolve_model

SCENARIO = Path(__file__).resolve().parents[1] / "examples" / "boot-storm.yaml"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stacklens", *args], capture_output=True,
                          text=True, timeout=300)


def test_capacity_finds_the_boundary_and_resumes(tmp_path: Path):
    out = tmp_path / "cap"
    args = ("capacity", str(SCENARIO), "--vary", "concurrency", "--sla", "p95_s=60",
            "--out", str(out), "--start", "10", "--max", "320")
    p = cli(*args)
    assert p.returncode == 0, p.stderr
    assert "boundary: concurrency" in p.stdout and "saturated first:" in p.stdout
    state = json.loads((out / "capacity.json").read_text())
    b = state["boundary"]
    assert b["last_ok"] < b["first_fail"]
    ok = {s["value"]: not s["breaches"] for s in state["steps"]}
    assert ok[b["last_ok"]] and not ok[b["first_fail"]]
    for s in state["steps"]:  # every step's run is kept and is a run folder
        assert (out / s["run"] / "tables" / "traces.parquet").exists()
    # the model says how much of the break it extrapolated (the shipped model: up to 20 in flight)
    far = state["evidence"]["beyond_calibration_at_break"]
    assert set(far) >= {"nova-api", "nova-conductor"} and all(0 <= v <= 1 for v in far.values())
    assert ("beyond its calibrated load" in p.stdout) == any(v > 0 for v in far.values())
    n = len(state["steps"])
    # resume: the same command measures nothing again
    p = cli(*args)
    assert p.returncode == 0, p.stderr
    assert len(json.loads((out / "capacity.json").read_text())["steps"]) == n
    assert "capacity: concurrency=" not in p.stderr
    # other settings in the same folder: refused
    p = cli("capacity", str(SCENARIO), "--sla", "p95_s=30", "--out", str(out))
    assert p.returncode == 1 and "other settings" in p.stderr


def test_interrupted_search_resumes_where_it_stopped(tmp_path: Path):
    cal, name = resolve_model(None)
    calls: list[int] = []

    def step(v: int, run: Path) -> None:
        calls.append(v)
        if len(calls) == 3:
            raise KeyboardInterrupt  # the operator's Ctrl-C in the middle of the search
        forecast_run(cal, knobs_for(cal, computes=4, servers=max(40, 2 * v), concurrency=v),
                     run, name, force=True)

    sla = Sla((("p95_s", 45.0),))
    with pytest.raises(KeyboardInterrupt):
        search(tmp_path, "concurrency", sla, step, 5, 160)
    assert calls == [5, 10, 20]
    state = search(tmp_path, "concurrency", sla, step, 5, 160)
    assert calls[3] == 20  # 5 and 10 were read back, 20 is measured again
    assert 5 not in calls[3:] and 10 not in calls[3:]
    assert state["boundary"]["first_fail"] is not None


def test_sla_parsing():
    s = parse_sla(["p95_s=60", "success_rate=0.95"])
    assert s.breaches({"create_p95_s": 61.0, "success_rate": 1.0}) == ["p95_s 61 > 60"]
    assert s.breaches({"create_p95_s": 10.0, "success_rate": 0.9}) == ["success_rate 0.9 < 0.95"]
    with pytest.raises(UserError):
        parse_sla(["p99=3"])
    with pytest.raises(UserError):
        parse_sla([])


def test_cloud_target_varies_concurrency_only(tmp_path: Path):
    p = cli("capacity", str(SCENARIO), "--vary", "computes", "--target", "cloud",
            "--sla", "p95_s=60", "--out", str(tmp_path / "c"))
    assert p.returncode == 1 and "concurrency only" in p.stderr
