"""Outcomes, completion markers and root causes on synthetic logs of three releases.

The logs are written by :mod:`synth_nova` in each release's exact oslo.log format (Havana
2013.2, Mitaka 13.0.0, 2025.1 31.0.0) and run through the real pipeline (ingest -> trace).
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest
from synth_nova import CPU, LV, Cloud, boot_success, delete_success, rid, uid

from stacklens.analyze.queries import QUERIES
from stacklens.ingest.pipeline import ingest
from stacklens.trace import build_traces
from stacklens.trace.completion import MARKERS

RELEASES = ["havana", "mitaka", "2025.1"]
MEMCACHE = ("Could not load 'oslo_cache.memcache_pool': No module named 'memcache': "
            "ModuleNotFoundError: No module named 'memcache'")


def run(c: Cloud, tmp_path: Path) -> dict[str, dict]:
    res = ingest([str(c.write(tmp_path))])
    out = build_traces(res.events)
    return {r["trace_id"]: r for r in out["traces"].iter_rows(named=True)} | {"_out": out}


def create(c: Cloud, n: int, t: float = 0.5, status: int = 202) -> None:
    c.api(t, rid(n), "POST", c.servers(), status)


@pytest.mark.parametrize("release", RELEASES)
def test_create_success_ends_at_active(tmp_path: Path, release: str):
    c = Cloud(release)
    create(c, 1)
    end = boot_success(c, 1)
    # benign ERROR on the same request (2025.1 lab: stevedore cannot import memcache)
    c.log("ctl", "nova-api", 0.4, "ERROR", "stevedore.extension", rid(1), MEMCACHE)
    # 2: accepted, build never completed in the logs
    create(c, 2)
    c.log("cpu1", "nova-compute", 1.0, "AUDIT", CPU, rid(2), "Starting instance...", uid(2))
    got = run(c, tmp_path)
    ok = got[rid(1)]
    assert ok["operation"] == "server.create" and ok["outcome"] == "success"
    assert ok["end_exact"] and ok["dur_s"] == pytest.approx(end - 0.3, abs=2e-3)  # start = 0.5 - 0.2
    assert ok["n_error_records"] == 1 and ok["first_error"] == MEMCACHE and ok["error"] is None
    un = got[rid(2)]
    assert un["outcome"] == "unknown" and un["outcome_reason"] == "no completion or failure logged"
    assert not un["end_exact"]


@pytest.mark.parametrize("release", RELEASES)
def test_no_valid_host_is_failed_with_scheduler_cause(tmp_path: Path, release: str):
    c = Cloud(release)
    create(c, 1)
    c.log("ctl", "nova-api", 0.4, "ERROR", "stevedore.extension", rid(1), MEMCACHE)
    svc, method = ("nova-scheduler", "scheduler_run_instance") if release == "havana" else (
        "nova-conductor", "compute_task_build_instances")
    if release == "2025.1":
        # conductor schedule_and_build_instances: LOG.exception('Failed to schedule instances')
        c.log("ctl", svc, 1.0, "ERROR", "nova.conductor.manager", rid(1), "Failed to schedule instances")
    # scheduler/utils.py set_vm_state_and_notify
    c.log("ctl", svc, 1.1, "WARNING", "nova.scheduler.utils", rid(1),
          f"Failed to {method}: No valid host was found. ")
    c.log("ctl", svc, 1.2, "WARNING", "nova.scheduler.utils", rid(1), "Setting instance to ERROR state.", uid(1))
    got = run(c, tmp_path)[rid(1)]
    assert got["outcome"] == "failed" and got["outcome_reason"] == "failure logged"
    want = "Failed to schedule instances" if release == "2025.1" else f"Failed to {method}: No valid host"
    assert got["error"].startswith(want)  # never the benign nova-api ERROR before it
    assert got["error_service"] == svc and got["n_error_records"] >= 1


@pytest.mark.parametrize("release", RELEASES)
def test_spawn_failure_then_error_state(tmp_path: Path, release: str):
    c = Cloud(release)
    create(c, 1)
    r, u = rid(1), uid(1)
    c.log("cpu1", "nova-compute", 1.0, "AUDIT", CPU, r, "Starting instance...", u)
    c.log("cpu1", "nova-compute", 2.0, "ERROR", CPU, r, "Instance failed to spawn", u)
    if release == "havana":
        # not rescheduled: _run_instance sets ERROR without a log line; the traceback follows
        c.trace("cpu1", "nova-compute", 2.0, CPU, u, ["Traceback (most recent call last):",
                                                      "libvirtError: internal error"])
    else:
        c.log("cpu1", "nova-compute", 2.2, "ERROR", CPU, r,
              f"Build of instance {u} aborted: libvirtError: internal error", u)
    got = run(c, tmp_path)[r]
    assert got["outcome"] == "failed"
    assert got["error"].endswith("Instance failed to spawn") and got["error_service"] == "nova-compute"


@pytest.mark.parametrize("release", RELEASES)
def test_reschedule_then_success_is_retried(tmp_path: Path, release: str):
    c = Cloud(release)
    create(c, 1)
    r, u = rid(1), uid(1)
    c.log("cpu1", "nova-compute", 1.0, "AUDIT", "nova.compute.claims", r, "Claim successful", u)
    c.log("cpu1", "nova-compute", 2.0, "ERROR", CPU, r, "Instance failed to spawn", u)
    if release == "havana":
        c.log("cpu1", "nova-compute", 2.1, "ERROR", CPU, r, "Error: internal error", u)
    # 2025.1 at INFO: the reschedule itself is DEBUG and not logged; claims on two hosts show it
    end = boot_success(c, 1, host="cpu2", t=3.0)
    got = run(c, tmp_path)[r]
    assert got["outcome"] == "retried" and got["retries"] == 1
    assert got["error"] is None and got["n_error_records"] >= 1
    assert got["dur_s"] == pytest.approx(end - 0.3, abs=2e-3)


@pytest.mark.parametrize("release", RELEASES)
def test_delete_ends_at_last_delete_work(tmp_path: Path, release: str):
    c = Cloud(release)
    path = f"{c.servers()}/{uid(1)}"
    c.api(0.3, rid(1), "DELETE", path, 204, dur_s=0.1)
    end = delete_success(c, 1, t=0.5, lock_wait_s=12.0)
    # benign ERROR on the delete
    c.log("cpu1", "nova-compute", 0.45, "ERROR", "stevedore.extension", rid(1), MEMCACHE)
    # 2: delete accepted, no compute record: unknown, not success at the API response
    c.api(0.3, rid(2), "DELETE", f"{c.servers()}/{uid(2)}", 204, dur_s=0.1)
    # 3: poll of a deleted server: rejected, not failed
    c.api(20.0, rid(3), "GET", path, 404, dur_s=0.05)
    got = run(c, tmp_path)
    d = got[rid(1)]
    assert d["operation"] == "server.delete" and d["outcome"] == "success" and d["end_exact"]
    assert d["dur_s"] == pytest.approx(end - 0.2, abs=2e-3)
    assert d["n_error_records"] == 1 and d["error"] is None
    if release == "2025.1":
        assert d["dur_s"] > 12  # the compute_resources wait is part of the delete
        ph = got["_out"]["phases"].filter(pl.col("trace_id") == rid(1))
        ph = dict(zip(ph["phase"], ph["dur_s"], strict=True))
        assert ph["teardown"] == pytest.approx(1.0, abs=2e-3)
        assert ph["resource_cleanup"] == pytest.approx(12.3, abs=2e-3)
    assert got[rid(2)]["outcome"] == "unknown"
    assert got[rid(3)]["outcome"] == "rejected" and got[rid(3)]["outcome_reason"] == "HTTP 404"


def test_local_delete_in_the_api_completes(tmp_path: Path):
    c = Cloud("2025.1")
    c.log("ctl", "nova-api", 0.2, "WARNING", "nova.compute.api", rid(1),
          "instance's host cpu9 is down, deleting from database", uid(1))
    c.api(0.3, rid(1), "DELETE", f"/v2.1/servers/{uid(1)}", 204)
    assert run(c, tmp_path)[rid(1)]["outcome"] == "success"


@pytest.mark.parametrize("release", RELEASES)
def test_live_migration_and_resize_end_at_completion(tmp_path: Path, release: str):
    c = Cloud(release)
    act = f"{c.servers()}/{uid(1)}/action"
    c.api(0.3, rid(1), "POST", act, 202)
    c.log("cpu1", "nova-compute", 5.0, "INFO", CPU, rid(1), "Migrating instance to cpu2 finished successfully.", uid(1))
    c.log("cpu2", "nova-compute", 5.5, "INFO", CPU, rid(1), "Post operation of migration started", uid(1))
    c.api(0.3, rid(2), "POST", act, 202)
    c.log("cpu1", "nova-compute", 1.0, "AUDIT", CPU, rid(2), "Migrating", uid(1))
    c.log("cpu2", "nova-compute", 9.0, "INFO", LV, rid(2), "Instance running successfully.", uid(1))
    c.api(0.3, rid(3), "POST", act, 202)
    c.log("cpu1", "nova-compute", 3.0, "ERROR", CPU, rid(3), "Live migration failed.", uid(1))
    c.api(0.3, rid(4), "POST", act, 202)  # reboot: no marker, synchronous as far as logs go
    c.api(0.3, rid(5), "POST", act, 202)  # an action that left the instance in ERROR
    c.log("cpu1", "nova-compute", 2.0, "ERROR", CPU, rid(5), "Setting instance vm_state to ERROR", uid(1))
    got = run(c, tmp_path)
    assert (got[rid(1)]["operation"], got[rid(1)]["outcome"]) == ("server.live_migrate", "success")
    assert got[rid(1)]["dur_s"] == pytest.approx(5.4, abs=2e-3)
    assert (got[rid(2)]["operation"], got[rid(2)]["outcome"]) == ("server.resize", "success")
    assert got[rid(2)]["dur_s"] == pytest.approx(8.9, abs=2e-3)
    assert (got[rid(3)]["operation"], got[rid(3)]["outcome"]) == ("server.live_migrate", "failed")
    assert got[rid(3)]["error"].endswith("Live migration failed.")
    assert (got[rid(4)]["operation"], got[rid(4)]["outcome"]) == ("server.action", "success")
    assert (got[rid(5)]["operation"], got[rid(5)]["outcome"]) == ("server.action", "failed")


@pytest.mark.parametrize("release", ["mitaka", "2025.1"])
def test_volume_create_and_attach(tmp_path: Path, release: str):
    c = Cloud(release)
    v = uid(7)
    c.api(0.3, rid(1), "POST", "/v3/volumes", 202, service="cinder-api")
    if release == "mitaka":  # cinder 8.0.0 flows/manager/create_volume.py CreateVolumeOnFinishTask
        c.log("ctl", "cinder-volume", 4.0, "INFO", "cinder.volume.flows.manager.create_volume", rid(1),
              f"Volume volume-{v} ({v}): created successfully")
    else:  # cinder 26.0.0 volume/manager.py create_volume, resource=volume
        c.log("ctl", "cinder-volume", 4.0, "INFO", "cinder.volume.manager", rid(1),
              f"[volume-{v}] Created volume successfully.")
    c.api(0.3, rid(2), "POST", "/v3/volumes", 202, service="cinder-api")
    c.log("ctl", "cinder-scheduler", 1.0, "ERROR", "cinder.scheduler.flow_utils", rid(2),
          "Failed to run task cinder.scheduler.flows.create_volume.ScheduleCreateVolumeTask;"
          "volume:create: No valid host was found. No weighed hosts available")
    got = run(c, tmp_path)
    assert got[rid(1)]["outcome"] == "success" and got[rid(1)]["dur_s"] == pytest.approx(3.9, abs=2e-3)
    assert got[rid(2)]["outcome"] == "failed" and got[rid(2)]["error_service"] == "cinder-scheduler"


def test_volume_attach_2025(tmp_path: Path):
    c = Cloud("2025.1")
    v, r = uid(7), rid(1)
    c.api(0.5, r, "POST", f"/v2.1/servers/{uid(1)}/os-volume_attachments", 200)
    c.log("cpu1", "nova-compute", 1.0, "INFO", CPU, r, f"Attaching volume {v} to /dev/vdb", uid(1))
    # cinder-volume logs nova's request id as the global id (X-OpenStack-Request-ID, Pike on)
    c.log("ctl", "cinder-volume", 2.0, "INFO", "cinder.volume.manager", rid(9), "attachment_update completed successfully.", glob=r)
    got = run(c, tmp_path)[r]
    assert got["operation"] == "server.volume_attach" and got["outcome"] == "success"
    assert got["dur_s"] == pytest.approx(1.7, abs=2e-3)


def test_headline_rates_leave_out_rejected_and_unknown():
    traces = pl.DataFrame({"outcome": ["success"] * 6 + ["retried", "failed", "rejected", "rejected", "unknown"],
                      "http_status": [202] * 8 + [404, 404, 202], "start_ns": [0] * 11, "end_ns": [1] * 11})
    con = duckdb.connect()
    con.register("traces", traces)
    s = con.sql(QUERIES["summary"]).pl().to_dicts()[0]
    assert (s["traces"], s["decided"]) == (11, 8)
    assert s["success_rate"] == pytest.approx(7 / 8) and s["failure_rate"] == pytest.approx(1 / 8)
    assert s["rejected_rate"] == pytest.approx(2 / 11) and s["unknown_rate"] == pytest.approx(1 / 11)


def test_marker_table_is_well_formed():
    import re

    for m in MARKERS:
        re.compile(m.regex)
        assert m.ops and m.releases and m.source
        assert m.meaning in ("done", "work", "failed", "spawn_failed", "retry", "attempt")


def test_multi_instance_create_on_two_hosts_is_not_a_retry(tmp_path: Path):
    c = Cloud("2025.1")
    create(c, 1)
    boot_success(c, 1, host="cpu1")
    # the second instance of the same request (min_count=2) is built on another host
    r, u2 = rid(1), uid(2)
    c.log("cpu2", "nova-compute", 1.1, "INFO", "nova.compute.claims", r, "Claim successful on node cpu2", u2)
    c.log("cpu2", "nova-compute", 6.0, "INFO", CPU, r, "Took 4.90 seconds to build instance.", u2)
    got = run(c, tmp_path)[r]
    assert got["outcome"] == "success" and got["retries"] == 0


@pytest.mark.parametrize("release", ["mitaka", "2025.1"])
def test_reschedule_limit_is_failed_under_the_first_spawn_error(tmp_path: Path, release: str):
    c = Cloud(release)
    create(c, 1)
    r, u = rid(1), uid(1)
    for i, host in enumerate(("cpu1", "cpu2")):
        t = 1.0 + 2 * i
        c.log(host, "nova-compute", t, "INFO", "nova.compute.claims", r, "Claim successful", u)
        c.log(host, "nova-compute", t + 0.5, "ERROR", CPU, r, f"Instance failed to spawn (attempt {i + 1})", u)
    # conductor build_instances: MaxRetriesExceeded -> scheduler/utils.py set_vm_state_and_notify
    c.log("ctl", "nova-conductor", 5.0, "WARNING", "nova.scheduler.utils", r,
          "Failed to compute_task_build_instances: Exceeded maximum number of retries. Exhausted all "
          f"hosts available for retrying build failures for instance {u}.")
    c.log("ctl", "nova-conductor", 5.1, "WARNING", "nova.scheduler.utils", r, "Setting instance to ERROR state.", u)
    got = run(c, tmp_path)[r]
    assert got["outcome"] == "failed" and got["retries"] == 1
    assert got["error"].endswith("Instance failed to spawn (attempt 1)")
    assert got["error_service"] == "nova-compute" and got["dur_s"] == pytest.approx(4.8, abs=2e-3)


def test_confirm_resize_2025_ends_at_migration_allocations_deleted(tmp_path: Path):
    c = Cloud("2025.1")
    c.api(0.3, rid(1), "POST", f"/v2.1/servers/{uid(1)}/action", 204)
    c.log("cpu1", "nova-compute", 0.5, "DEBUG", CPU, rid(1), "Going to confirm migration 17", uid(1))
    c.log("cpu1", "nova-compute", 2.5, "INFO", "nova.scheduler.client.report", rid(1),
          f"Deleted allocations for migration {uid(9)}")
    got = run(c, tmp_path)[rid(1)]
    assert (got["operation"], got["outcome"]) == ("server.confirm_resize", "success")
    assert got["dur_s"] == pytest.approx(2.4, abs=2e-3)


def test_client_view_of_deletes_beside_the_server_view():
    from stacklens.analyze.queries import CLIENT_QUERIES
    from stacklens.schema import conform

    req = conform(pl.DataFrame({
        "name": ["a", "b"], "outcome": ["ok", "ok"], "create_http_status": [202, 202],
        "request_id": [rid(1), rid(2)], "delete_request_id": [rid(3), rid(4)],
        "delete_s": [4.0, 6.0], "create_s": [10.0, 12.0], "submit_ns": [0, 0], "active_ns": [1, 1],
    }), "requests")
    traces = conform(pl.DataFrame({
        "trace_id": [rid(1), rid(2), rid(3), rid(4)], "outcome": ["success"] * 4,
        "dur_s": [9.0, 11.0, 40.0, 42.0], "start_ns": [0] * 4, "end_ns": [1] * 4,
    }), "traces")
    con = duckdb.connect()
    con.register("requests", req)
    con.register("traces", traces)
    s = con.sql(CLIENT_QUERIES["client_server_summary"]).pl().to_dicts()[0]
    assert (s["client_delete_p50_s"], s["server_delete_p50_s"]) == (5.0, 41.0)


@pytest.mark.parametrize("ok", [True, False])
def test_volume_attach_ends_when_compute_releases_the_instance_lock(tmp_path: Path, ok: bool):
    # Newton (14.0.0) devstack: cinder's completion carries its own request id, nova's attach
    # ends with the release of the do_attach_volume instance lock (oslo_concurrency, DEBUG)
    c = Cloud("mitaka")
    r, u, v = rid(1), uid(1), uid(7)
    c.api(0.3, r, "POST", f"/v2.1/servers/{u}/os-volume_attachments", 200)
    c.log("cpu1", "nova-compute", 0.4, "INFO", CPU, r, f"Attaching volume {v} to /dev/vdb", u)
    if not ok:
        c.log("cpu1", "nova-compute", 5.0, "ERROR", CPU, r, f"Failed to attach {v} at /dev/vdb", u)
    c.log("cpu1", "nova-compute", 8.8, "DEBUG", "oslo_concurrency.lockutils", r,
          f'Lock "{u}" released by "nova.compute.manager.do_attach_volume" :: held 8.444s')
    got = run(c, tmp_path)[r]
    assert got["outcome"] == ("success" if ok else "failed")
    assert got["dur_s"] == pytest.approx(8.7 if ok else 4.9, abs=2e-3)
