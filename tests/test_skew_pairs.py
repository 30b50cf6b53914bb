"""Causal pairs without RPC DEBUG ids (:mod:`stacklens.trace.causal`), the words of
``clock_offsets``, and shift-and-recover on a real nova 2025.1 lab run.

Synthetic logs are written in the exact line format of nova/placement/neutron 2025.1 with
oslo.log's default ``logging_context_format_string`` (oslo_log/_options.py:
``%(asctime)s.%(msecs)03d %(process)d %(levelname)s %(name)s [%(global_request_id)s
%(request_id)s %(user_identity)s] %(instance)s%(message)s``), then ingested as files.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path

import polars as pl
import pytest
from conftest import need

from stacklens.ingest.pipeline import ingest
from stacklens.trace.clocks import correct_clocks
from stacklens.trace.skew import causal_constraints, estimate_offsets

#: a lab run (``$STACKLENS_LAB``, default the lead's run folder); its hosts share one real clock
LAB = Path(os.environ.get("STACKLENS_LAB", "/work/artifacts/labrun")) / "logs"
T0 = dt.datetime(2026, 11, 22, 23, 24, 0, tzinfo=dt.UTC)
RID = "req-{:08x}-0000-4000-8000-{:012x}"


def stamp(true_s: float, offset_s: float) -> str:
    """Timestamp a host whose clock needs ``offset_s`` added writes at true time ``true_s``
    (seconds after T0), truncated to the millisecond as oslo.log does."""
    t = T0 + dt.timedelta(milliseconds=int((true_s - offset_s) * 1000))
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def ctx(rid: str, gid: str | None = None) -> str:
    return f"[{gid or 'None'} {rid} admin admin - - -]"


def write_cloud(root: Path, offsets: dict[str, float], n: int = 12) -> None:
    """``n`` server boots: nova-api (controller) answers POST /servers, the scheduler picks a
    compute, the compute builds and calls neutron on the controller through keystoneauth
    (DEBUG ``REQ: curl`` / ``used request id`` lines), neutron logs its access line with the
    caller's id as global_request_id. No oslo.messaging lines at all."""
    lines: dict[tuple[str, str], list[tuple[float, str]]] = {}

    def log(host: str, svc: str, t: float, pid: int, level: str, logger: str, c: str, msg: str):
        text = f"{stamp(t, offsets[host])} {pid} {level} {logger} {c} {msg}"
        lines.setdefault((host, svc), []).append((t, text))

    for i in range(n):
        t = 1.0 + i * 0.7
        api, nreq = RID.format(i, 1), RID.format(i, 2)
        comp = "compute-1" if i % 2 else "compute-2"
        uuid = f"{i:08x}-1111-4111-8111-{i:012x}"
        # nova/api/openstack/wsgi + eventlet.wsgi access line (nova 2025.1 osapi_compute)
        log("controller", "nova-api", t + 0.004, 100, "INFO", "nova.api.openstack.compute.servers",
            ctx(api), f"Creating server {uuid}")
        log("controller", "nova-api", t + 0.120, 100, "INFO", "nova.osapi_compute.wsgi.server",
            ctx(api), '10.0.0.1 "POST /v2.1/servers HTTP/1.1" status: 202 len: 400 time: 0.1180000')
        # nova/scheduler/manager.py select_destinations (DEBUG)
        log("controller", "nova-scheduler", t + 0.200, 200, "DEBUG", "nova.scheduler.manager",
            ctx(api), f"Starting to schedule for instances: ['{uuid}'] select_destinations "
            "/usr/lib/python3/site-packages/nova/scheduler/manager.py:187")
        # compute: build starts (cast from the conductor, 5-30 ms after the scheduler)
        tb = t + 0.205 + (i % 5) * 0.006
        log(comp, "nova-compute", tb, 300, "INFO", "nova.compute.claims", ctx(api) + f" [instance: {uuid}]",
            "Claim successful on node " + comp)
        # keystoneauth1/session.py _http_log_request, then neutron, then "used request id"
        url = "http://controller:9696/v2.0/ports"
        log(comp, "nova-compute", tb + 0.010, 300, "DEBUG", "keystoneauth.session", ctx(api),
            f'REQ: curl -g -i -X POST {url} -H "User-Agent: nova" _http_log_request '
            "/usr/lib/python3/site-packages/keystoneauth1/session.py:559")
        hop = 0.002 + (i % 3) * 0.001
        log("controller", "neutron-server", tb + 0.010 + hop + 0.001, 400, "DEBUG", "neutron.api.v2.base",
            ctx(nreq, api), "Request body: {'port': {}}")
        log("controller", "neutron-server", tb + 0.010 + hop + 0.050, 400, "INFO", "neutron.wsgi",
            ctx(nreq, api), '10.0.0.2 "POST /v2.0/ports HTTP/1.1" status: 201  len: 900 time: 0.0490000')
        log(comp, "nova-compute", tb + 0.010 + 2 * hop + 0.050, 300, "DEBUG", "keystoneauth.session",
            ctx(api), f"POST call to network for {url} used request id {nreq} request "
            "/usr/lib/python3/site-packages/keystoneauth1/session.py:1082")
    for (host, svc), rows in lines.items():
        d = root / host / "var" / "log" / svc.split("-")[0]
        d.mkdir(parents=True, exist_ok=True)
        (d / f"{svc}.log").write_text("\n".join(x for _, x in sorted(rows)) + "\n")


TRUTH = {"controller": 0.0, "compute-1": 0.4213, "compute-2": -1.3377}


@pytest.fixture(scope="module")
def cloud_events(tmp_path_factory):
    root = tmp_path_factory.mktemp("cloud")
    write_cloud(root, TRUTH)
    return ingest([str(root)]).events


def test_every_new_pair_kind_is_found_and_true(cloud_events):
    c = causal_constraints(cloud_events)
    assert set(c["kind"]) == {"http_origin", "schedule_build", "http_caller", "http_callee"}
    assert c.filter(pl.col("kind") == "http_callee")["dst_host"].str.starts_with("compute").all()
    assert c.filter(pl.col("kind") == "http_caller")["src_host"].str.starts_with("compute").all()
    # every row holds for the true offsets: offset[dst] - offset[src] >= lower_s
    true = c.with_columns(
        d=pl.col("dst_host").replace_strict(TRUTH) - pl.col("src_host").replace_strict(TRUTH)
    )
    assert (true["d"] >= true["lower_s"] - 1e-9).all()
    assert (c["lower_s"] > 0).sum() > 0  # the raw clocks do violate some


def test_offsets_recovered_from_http_and_scheduling_pairs(cloud_events):
    res = estimate_offsets(causal_constraints(cloud_events), reference="controller")
    assert res.dropped.height == 0 and res.violations_after == 0
    for r in res.offsets.iter_rows(named=True):
        assert r["status"] in ("reference", "bounded")
        assert abs(r["offset_s"] - TRUTH[r["host"]]) <= r["uncertainty_s"] + 1e-9
        assert abs(r["offset_s"] - TRUTH[r["host"]]) < 0.005, r
    _, off = correct_clocks(cloud_events)
    notes = dict(off.select("host", "note").iter_rows())
    assert notes["compute-1"].startswith("+42") and "ms +/- " in notes["compute-1"]
    assert " vs controller from " in notes["compute-1"]
    assert "http_callee" in notes["compute-2"] and off["applied"].all()


def test_only_one_sided_pairs_leave_the_offset_unknown_and_say_so(cloud_events):
    # without keystoneauth DEBUG lines only controller -> compute bounds remain
    ev = cloud_events.filter(~pl.col("logger").str.starts_with("keystoneauth"))
    _, off = correct_clocks(ev)
    o = {r["host"]: r for r in off.iter_rows(named=True)}
    assert o["controller"]["status"] == "reference"
    for h in ("compute-1", "compute-2"):
        assert o[h]["status"] == "lower_only" and not o[h]["applied"]
        assert "no upper bound: offset unknown" in o[h]["note"]


def test_compute_made_context_seen_by_the_scheduler_is_not_a_scheduling_pair():
    # Kilo compute periodic task context, synced to the scheduler (nova/scheduler/host_manager.py
    # "Successfully synced instances from host"): the compute logged it first, legitimately
    rid = RID.format(1, 9)
    ev = pl.DataFrame(
        {
            "ts_ns": [1_000_000_000, 5_000_000_000],
            "host": ["n3", "c1"],
            "service": ["nova-compute", "nova-scheduler"],
            "logger": ["nova.compute.resource_tracker", "nova.scheduler.host_manager"],
            "request_id": [rid, rid],
            "message": ["Auditing locally available compute resources", "Successfully synced instances from host 'n3'."],
        }
    )
    from stacklens.schema import conform

    assert causal_constraints(conform(ev, "events")).height == 0


def test_several_hosts_without_pairs_say_so_in_words(tmp_path):
    for h in ("controller1", "compute-2", "compute-3"):
        d = tmp_path / h / "var" / "log" / "nova"
        d.mkdir(parents=True)
        (d / "nova-compute.log").write_text(
            f"2026-11-22 23:24:00.000 7 INFO nova.service [-] Starting compute node on {h}\n"
        )
    ev = ingest([str(tmp_path)]).events
    out, off = correct_clocks(ev)
    assert out.equals(ev)
    assert off.height == 3 and set(off["status"]) == {"unconstrained"}
    note = off["note"][0]
    assert note.startswith("3 hosts (compute-2, compute-3, controller1), no causal pairs")
    assert "offsets are unknown" in note and "single host" not in note


# --- the lab: real nova 2025.1, 1 controller + fake computes ----------------------------

_TS = re.compile(rb"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3})")
LAB_SHIFT = {"fake-3": 0.8374, "fake-10": -1.2519}
LAB_FILES = [
    "controller/var/log/nova/nova-api.log",
    "controller/var/log/nova/nova-conductor.log",
    "controller/var/log/nova/nova-scheduler.log",
    "controller/var/log/placement/placement-api.log",
    "fake-3/var/log/nova/nova-compute.log",
    "fake-10/var/log/nova/nova-compute.log",
]


def shifted_copy(src: Path, dst: Path, shift_s: float, lo: bytes, hi: bytes) -> None:
    """Lines of ``src`` whose timestamp is in [lo, hi) (and the lines that follow them),
    timestamps moved by ``shift_s`` (a clock that is ``shift_s`` ahead)."""
    out, keep = [], False
    with src.open("rb") as f:
        for line in f:
            m = _TS.match(line)
            if m:
                keep = lo <= m.group(1)[11:] < hi
                if keep and shift_s:
                    t = dt.datetime.strptime(m.group(1).decode(), "%Y-%m-%d %H:%M:%S.%f")
                    t += dt.timedelta(milliseconds=round(shift_s * 1000))
                    line = t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3].encode() + line[m.end():]
            if keep:
                out.append(line)
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(b"".join(out))


@pytest.mark.parametrize("rpc", [True, False], ids=["with-rpc", "without-rpc-debug"])
def test_lab_compute_clock_shift_recovered(tmp_path, rpc):
    need(LAB)
    for rel in LAB_FILES:
        host = rel.split("/")[0]
        shifted_copy(LAB / rel, tmp_path / rel, LAB_SHIFT.get(host, 0.0), b"23:24:40", b"23:25:10")
    ev = ingest([str(tmp_path)]).events
    if not rpc:
        lg = pl.col("logger").fill_null("")
        ev = ev.filter(~lg.str.starts_with("oslo_messaging") & ~lg.str.starts_with("oslo.messaging"))
    res = estimate_offsets(causal_constraints(ev), reference="controller")
    o = {r["host"]: r for r in res.offsets.iter_rows(named=True)}
    for h, shift in LAB_SHIFT.items():
        if rpc:  # all hosts share one real clock: the truth is -shift
            assert o[h]["status"] == "bounded"
            assert abs(o[h]["offset_s"] + shift) < 0.005, o[h]
            assert abs(o[h]["offset_s"] + shift) <= o[h]["uncertainty_s"] + 0.001
        else:  # INFO/DEBUG lines of 2025.1 bound a compute from one side only
            assert o[h]["status"] == "lower_only" and o[h]["lo_s"] <= -shift + 0.001
