"""``stacklens config check``: the real entry point as a subprocess; exit codes 0 (no error
finding), 3 (an error finding), 1 (user error, one line on stderr), 2 (usage)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl

from stacklens.store import RunStore

ROOT = Path(__file__).resolve().parents[1]

NOVA = "[DEFAULT]\nrpc_response_timeout = 180\n[filter_scheduler]\nhost_subset_size = 3\n"
NEUTRON_BAD = "[DEFAULT]\nagent_down_time = 40\n[agent]\nreport_interval = 30\n"


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "stacklens", "config", "check", *args],
                          capture_output=True, text=True, env=env, timeout=120)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        p = root / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_clean_config_exits_0(tmp_path):
    d = _write(tmp_path / "etc", {"nova/nova.conf": NOVA})
    r = _cli(str(d))
    assert r.returncode == 0, r.stderr
    assert "Config advice" in r.stdout and "release 2025.1" in r.stdout


def test_error_finding_exits_3_and_json(tmp_path):
    d = _write(tmp_path / "etc", {"neutron/neutron.conf": NEUTRON_BAD})
    r = _cli(str(d), "--json", "--release", "2024.1")
    assert r.returncode == 3
    assert "1 finding(s) of severity error" in r.stderr
    doc = json.loads(r.stdout)
    assert doc["release"] == "2024.1" and doc["files"] == ["neutron/neutron.conf"]
    bad = [f for f in doc["findings"] if f["severity"] == "error"]
    assert [(f["rule_id"], f["option"], f["value"]) for f in bad] == [
        ("neutron-agent-liveness", "agent_down_time", "40")]


def test_user_errors_exit_1(tmp_path):
    r = _cli(str(tmp_path / "missing"))
    assert r.returncode == 1 and "does not exist" in r.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    r = _cli(str(empty))
    assert r.returncode == 1 and "no config file the rules read" in r.stderr
    r = _cli(str(_write(tmp_path / "e", {"nova.conf": NOVA})), "--release", "mystery")
    assert r.returncode == 1 and "unknown release" in r.stderr
    r = _cli(str(tmp_path / "e"), "--write")
    assert r.returncode == 1 and "--write needs --run" in r.stderr


def test_usage_error_exits_2():
    r = _cli("--no-such-option")
    assert r.returncode == 2


def test_run_symptoms_and_write(tmp_path):
    run = tmp_path / "run"
    store = RunStore(run)
    msg = ("sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 10 reached, "
           "connection timed out, timeout 30.00 (Background on this error at: "
           "https://sqlalche.me/e/20/3o7r)")
    store.write({"events": pl.DataFrame([{"ts_ns": 1, "host": "ctl", "service": "nova-conductor",
                                          "level": "ERROR", "message": msg}])})
    _write(run / "config", {"nova/nova.conf": "[database]\nconnection = mysql+pymysql://nova:"
                                              "***@db/nova\nmax_pool_size = 5\n"
                                              "max_overflow = 10\n"})
    r = _cli("--run", str(run), "--write", "--json")
    assert r.returncode == 3, r.stderr
    doc = json.loads(r.stdout)
    assert [s["kind"] for s in doc["symptoms"]] == ["db_pool_exhausted"]
    df = store.read("config_findings")
    linked = df.filter(pl.col("symptom_count") == 1)
    assert set(linked["option"]) >= {"max_pool_size", "max_overflow"}
    assert set(linked.filter(pl.col("rule_id") == "db-pool")["severity"]) == {"error"}
