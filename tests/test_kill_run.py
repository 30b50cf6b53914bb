"""``stacklens run`` killed with SIGKILL mid-storm, against the fake nova served over real HTTP
(``tests/doubles/fake_nova.py``): every server the cloud created before the kill has its
record in ``requests.jsonl``, a torn last line is counted and tolerated, and ``stacklens cleanup
RUN`` leaves zero servers. Bounded: 60 servers at most, the fake stops itself after 120 s."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import httpx
import pytest
from conftest import fake_nova

from stacklens.drive.records import RecordWriter, RequestRecord, read_records_checked

REPO = Path(__file__).resolve().parents[1]
ENTRY = "from stacklens.cli import main; main()"
ENV = {**os.environ, "PYTHONPATH": str(REPO)}

SCENARIO = """\
name: storm
workload:
  boot_servers:
    count: 60
    flavor: m1.tiny
    image: cirros
    concurrency: 60
    ramp: {shape: constant, rate_per_s: 5}
client:
  poll_interval_s: 0.2
cleanup: delete
"""


@pytest.fixture()
def nova():
    """A fake nova on 127.0.0.1 (servers ACTIVE after 1 s, deletes take 1 s): its endpoint."""
    with fake_nova("--build-s", "1.0", "--delete-s", "1.0", "--max-s", "120", "--hosts", "3",
                   env=ENV) as endpoint:
        yield endpoint


def servers(endpoint: str, prefix: str, deleted_too: bool = False) -> list[dict]:
    """Every server whose name starts with ``prefix`` (all pages; with ``deleted_too`` through
    ``changes-since``, which shows deleted servers as nova does)."""
    out: list[dict] = []
    q = {"name": f"^{prefix}", "limit": "1000"}
    if deleted_too:
        q["changes-since"] = "1970-01-01T00:00:00Z"
    while True:
        r = httpx.get(f"{endpoint}/servers/detail", params=q, headers={"X-Auth-Token": "a:b"})
        page = r.json()["servers"]
        out += page
        if not r.json().get("servers_links") or not page:
            return out
        q["marker"] = page[-1]["id"]


def _ts(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def test_sigkill_mid_storm_keeps_records_and_cleanup_leaves_nothing(nova, tmp_path):
    f = tmp_path / "s.yaml"
    f.write_text(SCENARIO)
    out = tmp_path / "run"
    p = subprocess.Popen([sys.executable, "-c", ENTRY, "run", str(f), "--out", str(out),
                          "--endpoint", nova, "--token", "u:p"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, env=ENV)
    jsonl = out / "requests.jsonl"
    deadline = time.monotonic() + 90
    ok = 0
    while time.monotonic() < deadline and ok < 20 and p.poll() is None:
        time.sleep(0.1)
        if jsonl.exists():
            ok = sum('"outcome":"ok"' in ln for ln in jsonl.read_text().splitlines())
    assert p.poll() is None, p.stderr.read()[-2000:]
    assert ok >= 20, "the storm never got going"
    p.send_signal(signal.SIGKILL)
    p.wait(30)
    killed_at = time.time()
    p.stderr.close()
    assert p.returncode == -signal.SIGKILL

    prefix = json.loads((out / "manifest.json").read_text())["run"]["prefix"]
    got = read_records_checked(jsonl)
    assert got.bad_lines == 0 and not got.torn_last_line  # one flushed write per record
    by_id = {r.server_id: r for r in got.records if r.server_id}
    assert sum(r.outcome == "ok" for r in got.records) >= ok  # nothing written was lost
    # every server the cloud created 2 s before the kill has its record (with its id)
    created = servers(nova, prefix, deleted_too=True)
    old = [s for s in created if _ts(s["created"]) < killed_at - 2]
    assert old, "nothing created 2 s before the kill"
    assert not [s["id"] for s in old if s["id"] not in by_id]
    assert servers(nova, prefix), "the kill left no server behind: nothing to clean up"

    r = subprocess.run([sys.executable, "-c", ENTRY, "cleanup", str(out), "--endpoint", nova,
                        "--token", "u:p", "--json"], capture_output=True, text=True, env=ENV,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["remaining"] == [] and res["found"] >= 1
    assert servers(nova, prefix) == []
    assert "records kept" in r.stderr  # the killed run's table was rebuilt from the JSONL
    assert (out / "tables" / "requests.parquet").exists()


def _rec(i: int, **kw) -> RequestRecord:
    return RequestRecord(run_id="r1", name=f"sl-r1-{i}", server_id=f"id-{i}", **kw)


def test_torn_last_line_is_counted_and_tolerated(tmp_path):
    path = tmp_path / "requests.jsonl"
    with RecordWriter(path) as w:
        for i in range(5):
            w.write(_rec(i, outcome="ok"))
    with open(path, "a", encoding="utf-8") as f:  # a writer killed mid-line
        f.write(_rec(5).to_json()[:37])
    got = read_records_checked(path)
    assert len(got.records) == 5 and got.bad_lines == 1 and got.torn_last_line
    # a writer reopening the file starts a fresh line: the torn one stays one bad line
    with RecordWriter(path) as w:
        w.write(_rec(6, outcome="ok"))
    got = read_records_checked(path)
    assert len(got.records) == 6 and got.bad_lines == 1 and not got.torn_last_line
    assert got.records[-1].server_id == "id-6"


def test_garbage_lines_are_counted_not_raised(tmp_path):
    path = tmp_path / "requests.jsonl"
    path.write_bytes(_rec(1).to_json().encode() + b"\n[1, 2]\n\xff\xfe{\n{\"v\": 1}\n\n"
                     + _rec(2).to_json().encode() + b"\n")
    got = read_records_checked(path)
    assert [r.server_id for r in got.records] == ["id-1", "id-2"]
    assert got.bad_lines == 3 and not got.torn_last_line


def test_writer_flushes_every_record_before_close(tmp_path):
    path = tmp_path / "requests.jsonl"
    w = RecordWriter(path, batch=1000)
    w.write(_rec(1))
    # another reader (a process after a SIGKILL) sees the line without close or sync
    assert read_records_checked(path).records[0].server_id == "id-1"
    w.close()
