"""Run metadata for ``stacklens compare``: what ``stacklens run`` captures of the cloud (config
files with secrets redacted, service versions, hosts) and that compare reads it back by the same
names. The config text is the lab's own (:mod:`stacklens_lab.config` writes it), not a copy."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import httpx
import polars as pl

from stacklens.compare.load import load_run
from stacklens.compare.model import compare_runs
from stacklens.drive.capture import CloudFacts, api_versions, capture, redact_config_text
from stacklens.drive.client import ComputeClient, Connection
from stacklens.store import RunStore
from stacklens_lab.config import LabPaths, LabSpec, nova_conf, nova_db_conf, placement_conf

ROOT = Path(__file__).resolve().parents[1]


def _lab_etc(root: Path, spread: bool) -> Path:
    """The config files a 4-compute lab at ``root`` runs with (default or spread scheduler)."""
    spec = LabSpec(root=root, python=sys.executable, computes=4, scheduler_spread=spread)
    paths = LabPaths(root)
    (paths.etc / "nova").mkdir(parents=True)
    (paths.etc / "placement").mkdir(parents=True)
    (paths.etc / "nova" / "nova.conf").write_text(nova_conf(spec, paths))
    (paths.etc / "nova" / "nova-db.conf").write_text(nova_db_conf(spec))
    (paths.etc / "placement" / "placement.conf").write_text(placement_conf(spec, paths))
    return paths.etc


def test_redaction_keeps_settings_and_hides_secrets():
    text = (
        "[DEFAULT]\ntransport_url = rabbit://guest:s3cret@127.0.0.1:5672/\n"
        "# admin_password = commented\n[database]\n"
        "connection = mysql+pymysql://nova:dbpw@db/nova?charset=utf8\n"
        "[keystone_authtoken]\npassword = hunter2\nadmin_token=abc\nusername = nova\n"
        "[filter_scheduler]\nhost_subset_size = 4\n"
    )
    out = redact_config_text(text)
    for secret in ("s3cret", "dbpw", "hunter2", "abc"):
        assert secret not in out
    assert "rabbit://guest:***@127.0.0.1:5672/" in out
    assert "mysql+pymysql://nova:***@db/nova?charset=utf8" in out
    assert "username = nova" in out and "host_subset_size = 4" in out
    assert out.count("\n") == text.count("\n")


def test_capture_writes_redacted_copies_and_manifest_keys(tmp_path):
    etc = _lab_etc(tmp_path / "lab", spread=False)
    files = tuple(sorted(p for p in etc.rglob("*") if p.is_file()))
    missing = etc / "nova" / "gone.conf"
    facts = CloudFacts(config_files=(*files, missing), config_root=etc,
                       service_versions={"nova": "31.0.0"}, hosts=("fake-2", "controller"))
    info = capture(facts, tmp_path / "run")
    assert sorted(info["config_files"]) == ["nova/nova-db.conf", "nova/nova.conf",
                                           "placement/placement.conf"]
    assert info["hosts"] == ["controller", "fake-2"]
    assert info["service_versions"] == {"nova": "31.0.0"}
    assert "nova/gone.conf" in info["config_skipped"]
    copied = (tmp_path / "run" / "config" / "nova" / "nova-db.conf").read_text()
    from stacklens_lab.config import DB_PASSWORD, DB_USER

    assert f"://{DB_USER}:***@127.0.0.1" in copied
    assert f":{DB_PASSWORD}@" not in copied
    copied = (tmp_path / "run" / "config" / "nova" / "nova.conf").read_text()
    assert "rabbit://guest:***@" in copied and "token = ***" in copied


def test_compare_reads_what_a_run_captured(tmp_path):
    """Two run folders as ``stacklens run`` leaves them against a default and a spread lab:
    the scheduler options differ, nothing else of the config, versions and hosts say the same."""
    runs = []
    for name, spread in (("default", False), ("spread", True)):
        etc = _lab_etc(tmp_path / f"lab-{name}", spread)
        out = tmp_path / name
        files = tuple(sorted(p for p in etc.rglob("*") if p.is_file()))
        info = capture(CloudFacts(config_files=files, config_root=etc,
                                  service_versions={"nova": "31.0.0"},
                                  hosts=("controller", "fake-1")), out)
        RunStore(out).write_section("run", {"run_id": name, "state": "finished", **info})
        RunStore(out).write({"requests": pl.DataFrame({
            "scenario": ["s"] * 3, "outcome": ["ok"] * 3, "create_s": [1.0, 2.0, 3.0],
            "delete_s": [0.5] * 3, "submit_ns": [0, 1, 2], "gone_ns": [5, 6, 7],
            "active_ns": [4, 5, 6], "accepted_ns": [1, 2, 3]})})
        runs.append(load_run(out))
    r = compare_runs(runs)
    meta = {m["key"]: m for m in r["metadata"]}
    assert meta["version:nova"]["values"] == ["31.0.0", "31.0.0"]
    assert meta["hosts"]["values"] == ["controller, fake-1"] * 2
    differs = sorted(k for k, m in meta.items() if m["differs"] and k.startswith("config:"))
    # lab folders differ in name, so paths in the files differ too; the scheduler keys must be
    # there and no file is listed again by its hash
    assert "config:nova/nova.conf [filter_scheduler] host_subset_size" in differs
    assert "config:nova/nova.conf [filter_scheduler] shuffle_best_same_weighed_hosts" in differs
    assert meta["config:nova/nova.conf [filter_scheduler] host_subset_size"]["values"] == [
        None, "4"]
    assert "config:nova/nova.conf" not in meta
    assert not any("hunter" in str(m["values"]) for m in meta.values())
    # the section name is text, not terminal markup
    from stacklens.compare.render import render_text

    assert "nova/nova.conf [filter_scheduler] host_subset_size" in render_text(r, width=200)


def test_run_window_keeps_only_the_runs_own_requests(tmp_path):
    """A request that started before the run (the previous run's tail, read through the logs'
    60 s margin) is left out, with a note; one inside the run is kept."""
    s = 1_000_000_000
    out = tmp_path / "run"
    store = RunStore(out)
    store.write({"traces": pl.DataFrame({
        "trace_id": ["old", "mine", "late"], "operation": ["server.delete", "server.create",
                                                          "server.create"],
        "dur_s": [1.0, 2.0, 3.0], "outcome": ["success"] * 3, "http_status": [204, 202, 202],
        "start_ns": [50 * s, 101 * s, 300 * s], "end_ns": [51 * s, 103 * s, 303 * s]})})
    store.write_section("run", {"run_id": "x", "state": "finished", "started_ns": 100 * s,
                                "ended_ns": 200 * s})
    run = load_run(out)
    assert run.traces["trace_id"].to_list() == ["mine"]
    assert run.notes == ["2 requests outside the run's window (its logs' margin) left out"]


def test_api_versions_reads_novas_version_document():
    def handler(req: httpx.Request) -> httpx.Response:
        assert req.url.path == "/v2.1/"
        return httpx.Response(200, json={"version": {"id": "v2.1", "version": "2.96",
                                                     "min_version": "2.1"}})

    async def go() -> tuple[dict[str, str], dict[str, int]]:
        async with ComputeClient(Connection("http://nova.test/v2.1"),
                                 transport=httpx.MockTransport(handler)) as c:
            return await api_versions(c), dict(c.calls)

    versions, calls = asyncio.run(go())
    assert versions == {"compute_api": "v2.1 2.1-2.96"}
    assert calls == {"metadata": 1}


def test_run_help_names_the_config_file_option():
    p = subprocess.run([sys.executable, "-m", "stacklens", "run", "--help"], capture_output=True,
                       text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT),
                                                    "COLUMNS": "200"})
    assert p.returncode == 0 and "--config-file" in p.stdout
