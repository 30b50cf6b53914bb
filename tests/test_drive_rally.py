"""Rally results as client-side records: the real boot-and-delete report (format 1.2), and the
older ``rally task results`` list."""

from __future__ import annotations

import json
from collections import Counter

import pytest
from conftest import DATA, need

from stacklens.drive.rally import read_rally, records_from_rally
from stacklens.drive.records import to_frame
from stacklens.errors import UserError
from stacklens.schema import REQUESTS

RALLY = DATA / "rally" / "msds-rally"


def test_real_boot_and_delete_report():
    path = need(RALLY / "j_boot_delete_output.json")
    recs = read_rally(path)
    doc = json.loads(path.read_text())
    w = doc["tasks"][0]["subtasks"][0]["workloads"][0]
    assert len(recs) == w["total_iteration_count"] == 750
    got = Counter(r.outcome for r in recs)
    assert got["ok"] == 750 - w["failed_iteration_count"] == 745
    assert got == {"ok": 745, "error": 3, "timeout": 2}
    assert {r.source for r in recs} == {"rally"} and {r.run_id for r in recs} == {doc["tasks"][0]["uuid"]}
    assert {r.scenario for r in recs} == {"NovaServers.boot_and_delete_server"}
    # timings are the atomic actions: boot = submit..ACTIVE, force delete = delete..gone
    first = recs[0]
    boot, delete = w["data"][0]["atomic_actions"]
    assert delete["name"] == "nova.force_delete_server"
    assert first.create_s == pytest.approx(boot["finished_at"] - boot["started_at"], abs=1e-6)
    assert first.delete_s == pytest.approx(delete["finished_at"] - delete["started_at"], abs=1e-6)
    assert first.status == "DELETED" and first.profiler_trace_id == "06c7f927-2db3-49d9-87b9-5c623aadc492"
    assert all(r.profiler_trace_id for r in recs)
    # failures keep what Rally knew: the server name, and its id and status on a timeout
    err = [r for r in recs if r.outcome == "error"]
    assert all(r.status == "ERROR" and r.name.startswith("s_rally_") and r.active_ns is None
               for r in err)
    assert "has ERROR status" in err[0].error
    tmo = [r for r in recs if r.outcome == "timeout"]
    assert [r.server_id for r in tmo] == ["aa262f37-6887-4fe5-a7b4-50b532d26197",
                                          "d8597b81-ef46-41ef-b2db-ae670efdbc19"]
    assert {r.status for r in tmo} == {"BUILD"} and "300.00 seconds" in tmo[0].error
    df = to_frame(recs)
    assert dict(df.schema) == REQUESTS and df.height == 750
    assert df["create_s"].median() == pytest.approx(42.3, abs=0.1)


def test_reports_without_server_boots_give_no_records():
    for name in ("j_image_output.json", "output_jasmin_image.json"):
        assert read_rally(need(RALLY / name)) == []


OLD = [
    {
        "key": {"name": "NovaServers.boot_and_delete_server", "pos": 0,
                "kw": {"args": {}, "runner": {"type": "constant"}, "context": {}, "sla": {}}},
        "result": [
            {"timestamp": 1000.0, "duration": 12.0, "idle_duration": 0.0, "error": [],
             "atomic_actions": {"nova.boot_server": 10.0, "nova.delete_server": 2.0}},
            {"timestamp": 1001.0, "duration": 5.0, "idle_duration": 0.0,
             "error": ["ClientException",
                       "Unexpected API Error. (HTTP 500) (Request-ID: "
                       "req-0a1b2c3d-0000-4000-8000-00000000000a)", "Traceback..."],
             "atomic_actions": {"nova.boot_server": None}},
            {"timestamp": 1002.0, "duration": 30.0, "idle_duration": 0.0,
             "error": ["NotFound", "Instance could not be found (HTTP 404)", "Traceback..."],
             "atomic_actions": {"nova.boot_server": 8.0, "nova.delete_server": None}},
        ],
        "sla": [], "load_duration": 40.0, "full_duration": 45.0, "created_at": "2016-01-01T00:00:00",
    }
]


def test_old_task_results_list():
    recs = records_from_rally(OLD)
    assert [r.outcome for r in recs] == ["ok", "api_error", "delete_failed"]
    ok, api, dele = recs
    assert ok.submit_ns == 1000 * 10**9 and ok.create_s == 10.0 and ok.delete_s == 2.0
    assert api.create_http_status == 500 and api.request_id == "req-0a1b2c3d-0000-4000-8000-00000000000a"
    assert api.active_ns is None
    assert dele.create_s == 8.0 and dele.gone_ns is None and "HTTP 404" in dele.error
    assert {r.run_id for r in recs} == {"rally"}


def test_new_format_list_of_atomics_matches_the_old_mapping():
    new = {"info": {"format_version": "1.2"}, "tasks": [{"uuid": "t", "subtasks": [{
        "title": "NovaServers.boot_and_delete_server", "workloads": [{
            "position": 0, "scenario": {"NovaServers.boot_and_delete_server": {}},
            "data": [{"timestamp": 1000.0, "error": [], "atomic_actions": [
                {"name": "nova.boot_server", "started_at": 1000.0, "finished_at": 1010.0,
                 "children": []},
                {"name": "nova.delete_server", "started_at": 1010.0, "finished_at": 1012.0,
                 "children": []}]}]}]}]}]}
    (a,) = records_from_rally(new)
    b = records_from_rally(OLD)[0]
    assert (a.submit_ns, a.active_ns, a.delete_ns, a.gone_ns, a.outcome) == (
        b.submit_ns, b.active_ns, b.delete_ns, b.gone_ns, b.outcome)


def test_not_rally(tmp_path):
    p = tmp_path / "x.json"
    p.write_text('{"hello": 1}')
    with pytest.raises(UserError, match="not Rally results"):
        read_rally(p)
    with pytest.raises(UserError, match="no such file"):
        read_rally(tmp_path / "nope.json")
