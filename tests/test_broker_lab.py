"""Issue 8 on the real lab: a 2-compute lab, ``stacklens run`` booting and deleting a handful of
servers while it records the lab's RabbitMQ (firehose + management API on port base+71), MariaDB
and service processes itself, then reading the lab's logs into the same run folder: per RPC method, the calls/casts the broker saw and the ``Calling RPC method`` lines
the services logged at DEBUG agree, id by id (msg_id / unique_id), inside the capture window.

Measured on the lab (2 computes, 4 servers): 41 messages published per create request and 33
to 38 per delete (replies included); every method matched, none broker-only or log-only.
Needs the lab (see tests/test_lab.py); takes about 3 minutes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from test_lab import _cli, _free_port_base, _lab_python

from stacklens.broker import crosscheck, log_rpc_sends
from stacklens.store import RunStore

pytestmark = pytest.mark.lab
ROOT = Path(__file__).resolve().parents[1]
SCENARIO = """\
name: broker-lab
cloud: stacklens-lab
workload:
  boot_servers:
    per_compute: 2
    computes: 2
    flavor: lab.tiny
    image: stacklens-lab-image
    network: none
    concurrency: 4
    ramp: {shape: burst}
    phases:
      active: {timeout_s: 300}
      delete: {when: each, timeout_s: 300}
client: {poll_interval_s: 2, microversion: "2.37"}
cleanup: delete
sla: {success_rate: 0.5}
"""


def test_broker_and_logs_agree_per_method(tmp_path):
    py = _lab_python()
    base = _free_port_base()
    root = tmp_path / "lab"
    r = _cli("up", "--computes", "2", "--dir", str(root), "--python", py,
             "--port-base", str(base), "--workers", "1")
    try:
        assert r.returncode == 0, f"lab up failed:\n{r.stderr[-4000:]}"
        (tmp_path / "s.yaml").write_text(SCENARIO)
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (
            str(ROOT), os.environ.get("PYTHONPATH", "")) if p),
            "OS_CLIENT_CONFIG_FILE": str(root / "clouds.yaml"), "STACKLENS_LAB_DIR": str(root)}
        # the run records the broker itself (--capture is the default) and reads the lab's logs
        p = subprocess.run([sys.executable, "-m", "stacklens", "run", tmp_path / "s.yaml",
                            "--out", tmp_path / "run"], env=env, capture_output=True,
                           text=True, timeout=600)
        assert p.returncode == 0, p.stderr[-4000:]
    finally:
        _cli("down", "--dir", str(root), timeout_s=300)
    store = RunStore(tmp_path / "run")
    cap = store.manifest()["run"]["capture"]
    notes = cap["notes"]["broker"]
    msgs = store.read("messages")
    events = store.read("events")
    assert set(cap["notes"]) == {"broker", "db", "resources"}, cap
    assert cap["tables"]["db_digests"] > 0 and cap["tables"]["resource_samples"] > 0, cap
    window = (cap["window_ns"][0], cap["window_ns"][1])
    # the run's own report shows what was captured: broker, database and resource sections
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    for key in ("broker_methods", "db_cuid", "resources", "config_findings"):
        assert report.get(key), key
    assert any(f["text"].startswith("capture broker: ") for f in report["findings"])
    cc = crosscheck(msgs, log_rpc_sends(events), window_ns=window)
    print(notes, cc, sep="\n")
    assert not any("dropped" in n for n in notes), notes
    assert cc.height >= 6 and cc["broker"].sum() > 50
    bad = cc.filter((pl.col("broker") != pl.col("logs")) | (pl.col("broker_only") > 0)
                    | (pl.col("logs_only") > 0))
    assert bad.is_empty(), bad
    for m in ("select_destinations", "build_and_run_instance", "schedule_and_build_instances",
              "terminate_instance"):
        assert cc.filter(pl.col("method") == m)["broker"].item() == 4, m
    # every publish was delivered once (no fan-out to more than one scheduler here)
    pub = msgs.filter(pl.col("direction") == "publish").height
    assert msgs.filter(pl.col("direction") == "deliver").height == pub
