"""What ``stacklens run`` records beside the load (issue 8), without a cloud: which recorders a
run gets from its options, what it says about the ones it cannot have, and how their tables and
notes reach the run folder and the report. The recorders themselves run against the real
RabbitMQ / MariaDB / processes in tests/test_broker_lab.py, test_dbstat*.py, test_resources.py."""

from __future__ import annotations

import os
import subprocess

import polars as pl
import pytest

from stacklens.analyze.build import capture_notes
from stacklens.cli._capture import keep, recorders
from stacklens.dbstat import DbRecorder
from stacklens.errors import StacklensError
from stacklens.recorder import Recording
from stacklens.resources import ResourceRecorder
from stacklens.store import RunStore


def test_another_cloud_gets_only_what_its_options_name():
    recs, skipped = recorders(None, None, None)
    assert recs == []
    assert [s.split(":")[0] for s in skipped] == ["broker", "db", "resources"]
    recs, skipped = recorders(None, None, "mysql+pymysql://u:p@db.example:3307/nova")
    assert [type(r) for r in recs] == [DbRecorder]
    assert recs[0].target.port == 3307 and recs[0].target.password == "p"
    assert "db" not in " ".join(skipped)
    with pytest.raises(StacklensError):
        recorders(None, None, "postgresql://u@h/db")


def test_a_lab_folder_without_a_lab_records_nothing_of_it(tmp_path):
    recs, skipped = recorders(tmp_path / "no-lab", None, None)
    assert recs == [] and len(skipped) == 3


def test_own_process_tree_is_recorded_and_reported(tmp_path):
    """A real ResourceRecorder over a real child process; its table and notes land in the run
    folder and the report's findings."""
    child = subprocess.Popen(["sleep", "5"])
    try:
        rec = ResourceRecorder({os.getpid(): ("stacklens", "here")}, interval_s=0.2)
        out = Recording()
        rec.start()
        subprocess.run(["sleep", "0.7"], check=True)
        out.tables, notes = rec.stop()
        out.notes = {"resources": notes + ["a test note"]}
    finally:
        child.kill()
        child.wait()
    store = RunStore(tmp_path / "run")
    store.write_section("run", {"run_id": "x"})
    block = keep(store.path, out, ["broker: not captured (no --broker-mgmt-url)"], (1, 2))
    assert block["tables"]["resource_samples"] >= 3
    assert store.read("resource_samples").filter(pl.col("service") == "stacklens").height >= 3
    cap = store.manifest()["run"]["capture"]
    assert cap["window_ns"] == [1, 2] and store.manifest()["run"]["run_id"] == "x"
    texts = [f["text"] for f in capture_notes(store.manifest())]
    assert "capture resources: a test note" in texts
    assert "capture broker: not captured (no --broker-mgmt-url)" in texts
