"""``stacklens run`` and ``stacklens cleanup`` as subprocesses against the fake nova served over
real HTTP on 127.0.0.1 (``tests/doubles/fake_nova.py``): exit codes, stderr, the run
folder, Ctrl-C. Small and bounded: a few dozen servers, the fake stops itself after 120 s."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from conftest import fake_nova

# the real entry point (stacklens.cli.main: error lines, exit codes)
ENTRY = "from stacklens.cli import main; main()"

SCENARIO = """\
name: cli
workload:
  boot_servers:
    count: {count}
    flavor: m1.tiny
    image: cirros
    concurrency: {count}
client:
  poll_interval_s: 0.2
cleanup: {cleanup}
sla:
  success_rate: {rate}
"""


def cli(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", ENTRY, *args], capture_output=True, text=True,
                          timeout=120, **kw)


def popen(*args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", ENTRY, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def nova():
    """A fake nova on 127.0.0.1 (servers ACTIVE after 1 s): yields its endpoint."""
    with fake_nova("--build-s", "1.0", "--max-s", "120", "--hosts", "3") as endpoint:
        yield endpoint


def live(endpoint: str) -> list[dict]:
    r = httpx.get(f"{endpoint}/servers/detail", headers={"X-Auth-Token": "a:b"})
    return r.json()["servers"]


def scenario(tmp_path: Path, count=6, cleanup="delete", rate=0.5) -> Path:
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO.format(count=count, cleanup=cleanup, rate=rate))
    return f


def test_help():
    for cmd in ("run", "cleanup"):
        r = cli(cmd, "--help")
        assert r.returncode == 0 and "Usage" in r.stdout, r.stderr


def test_run_writes_the_run_folder(nova, tmp_path):
    out = tmp_path / "run"
    r = cli("run", str(scenario(tmp_path)), "--out", str(out), "--endpoint", nova,
            "--token", "u:p", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert info["state"] == "finished" and info["summary"]["outcomes"] == {"ok": 6}
    assert (out / "tables" / "requests.parquet").exists() and (out / "scenario.yaml").exists()
    assert len((out / "requests.jsonl").read_text().splitlines()) >= 6
    assert not [s for s in live(nova) if s["name"].startswith(info["prefix"])]


def test_no_token_is_a_user_error(nova, tmp_path):
    r = cli("run", str(scenario(tmp_path)), "--out", str(tmp_path / "run"), "--endpoint", nova)
    assert r.returncode == 1 and "HTTP 401" in r.stderr  # the flavor look-up fails first


def test_sla_breach_exits_3(nova, tmp_path):
    f = scenario(tmp_path, rate=1.0)
    f.write_text(f.read_text() + "  p95_s: 0.001\n")  # nothing is ACTIVE within 1 ms
    r = cli("run", str(f), "--out", str(tmp_path / "run"), "--endpoint", nova, "--token", "u:p")
    assert r.returncode == 3, r.stderr
    assert "SLA failed: p95_s" in r.stderr and "success_rate" not in r.stderr.splitlines()[-1]
    assert (tmp_path / "run" / "tables" / "requests.parquet").exists()  # written before exit 3


def test_a_bad_scenario_is_one_line_with_the_line_number(tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text("name: x\nworkload:\n  boot_servers:\n    count: many\n    flavor: f\n"
                 "    image: i\n    colour: blue\n")
    r = cli("run", str(f), "--out", str(tmp_path / "run"), "--endpoint", "http://127.0.0.1:9/v2.1")
    assert r.returncode == 1
    assert r.stderr.startswith(f"stacklens: error: {f}:4: workload.boot_servers.count"), r.stderr
    assert "(also line 7: workload.boot_servers.colour" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_ctrl_c_deletes_what_the_run_created(nova, tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO.format(count=40, cleanup="delete", rate=0.5).replace(
        "    concurrency: 40\n", "    concurrency: 40\n    ramp: {shape: constant, rate_per_s: 1}\n"))
    out = tmp_path / "run"
    p = popen("run", str(f), "--out", str(out), "--endpoint", nova, "--token", "u:p")
    jsonl = out / "requests.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not jsonl.exists() or len(jsonl.read_text()) < 2000):
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "stopping and deleting" in err
    m = json.loads((out / "manifest.json").read_text())["run"]
    assert m["state"] == "interrupted" and m["leftovers"] == []
    assert 0 < m["stats"]["issued"] < 40
    assert not [s for s in live(nova) if s["name"].startswith(m["prefix"])]


def test_cleanup_removes_what_a_run_kept(nova, tmp_path):
    f = scenario(tmp_path, count=5, cleanup="keep")
    f.write_text(f.read_text().replace("    concurrency: 5\n",
                                       "    concurrency: 5\n    phases: {delete: {enabled: false}}\n"))
    out2 = tmp_path / "run2"
    r = cli("run", str(f), "--out", str(out2), "--endpoint", nova, "--token", "u:p", "--json")
    assert r.returncode == 0, r.stderr
    info = json.loads(r.stdout)
    assert len(info["leftovers"]) == 5
    assert len([s for s in live(nova) if s["name"].startswith(info["prefix"])]) == 5
    r = cli("cleanup", str(out2), "--endpoint", nova, "--token", "u:p")
    assert r.returncode == 0, r.stderr
    assert "5 found, 5 deleted, 0 remaining" in r.stdout
    assert not [s for s in live(nova) if s["name"].startswith(info["prefix"])]
    r = cli("cleanup", str(tmp_path / "nope"))
    assert r.returncode == 1 and "no such run folder" in r.stderr
