"""The typed run manifest: one writer per section, stages derived, older formats upgraded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stacklens.errors import StoreError
from stacklens.manifest import MANIFEST_FORMAT_VERSION, IngestSection, TraceSection, upgrade
from stacklens.pipeline import IngestOptions, StageProgress, ingest_step, trace_step
from stacklens.store import RunStore

LOG = """\
2025-03-01 10:00:00.000 100 INFO nova.osapi_compute.wsgi.server [None req-11111111-1111-1111-1111-111111111111 u p - - -] 127.0.0.1 "GET /v2.1/servers HTTP/1.1" status: 200 len: 10 time: 0.0500000
2025-03-01 10:00:05.000 100 INFO nova.osapi_compute.wsgi.server [None req-22222222-2222-2222-2222-222222222222 u p - - -] 127.0.0.1 "GET /v2.1/flavors HTTP/1.1" status: 200 len: 10 time: 0.0200000
"""


def test_sections_keep_each_other_and_stages_are_derived(tmp_path: Path):
    store = RunStore(tmp_path)
    store.write_section("run", {"run_id": "r1", "prefix": "sl-r1-", "state": "finished"})
    store.write_section("ingest", IngestSection(lines=10, records=8), inputs=["/logs"])
    store.write_section("trace", TraceSection(traces=3))
    m = store.read_manifest()
    # format 1 lost 'run' from stages when the run's logs were ingested after the load
    assert m.stages == ["run", "ingest", "trace"]
    assert m.run == {"run_id": "r1", "prefix": "sl-r1-", "state": "finished"}
    assert m.inputs == ["/logs"] and m.ingest is not None and m.ingest.records == 8
    doc = json.loads((tmp_path / "manifest.json").read_text())
    assert doc["format_version"] == MANIFEST_FORMAT_VERSION and doc["stacklens_version"]
    with pytest.raises(KeyError):
        store.write_section("nonsense", {})


def test_format_1_is_upgraded_and_newer_refused(tmp_path: Path):
    v1 = {"format_version": 1, "stacklens_version": "0.1.0", "stages": ["ingest", "trace"],
          "inputs": ["a"], "ingest": {"files_read": 2, "lines": 5, "some_new_key": 1},
          "run": {"prefix": "sl-x-"}}
    m = upgrade(v1)
    assert m.stages == ["run", "ingest", "trace"]
    assert m.ingest is not None and m.ingest.files_read == 2
    assert m.ingest.model_extra == {"some_new_key": 1}  # unknown keys survive a rewrite
    with pytest.raises(StoreError, match="newer stacklens"):
        upgrade({"format_version": MANIFEST_FORMAT_VERSION + 1})
    (tmp_path / "manifest.json").write_text("{not json")
    with pytest.raises(StoreError, match="not valid JSON"):
        RunStore(tmp_path).read_manifest()


def test_pipeline_steps_report_progress_and_keep_the_window(tmp_path: Path):
    logs = tmp_path / "logs" / "ctl" / "nova"
    logs.mkdir(parents=True)
    (logs / "nova-api.log").write_text(LOG)
    store = RunStore(tmp_path / "run")
    seen: list[StageProgress] = []
    t0 = 1740823200 * 10**9  # 2025-03-01 10:00:00 UTC
    sec = ingest_step(store, [str(tmp_path / "logs")],
                      IngestOptions(window_ns=(t0 - 1, t0 + 10**9)), seen.append)
    assert sec.records == 1 and seen and seen[-1].stage == "ingest" and seen[-1].done == 1
    stats = store.read("ingest_stats").filter(kind="outside_run_window")
    assert stats["count"].to_list() == [1]
    tr = trace_step(store)
    assert tr.traces >= 1
    assert store.read_manifest().stages == ["ingest", "trace"]
