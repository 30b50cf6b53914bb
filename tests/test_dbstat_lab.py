"""Integration: database accounting and resource profiles during a boot storm on the real lab
(MariaDB with performance_schema, nova/placement/glance 2025.1, 2 fake computes).

DbRecorder (the lab's MariaDB over TCP, as the services reach it) and ResourceRecorder (every
process the lab started, :func:`stacklens_lab.services.service_pids`) record while 12 servers
boot at once and are deleted. Checks: CUID shares add to 100 % for every schema, nova,
nova_api and placement all show statements, per-service CPU and RSS are recorded for the
control-plane services. Prints the figures (``-s`` shows them).

Skips without the lab (see tests/test_lab.py). Wrap in ``flock /work/notes/lab.lock`` where the
lab is shared. About two to three minutes on 2 cores; the lab is always brought down.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import duckdb
import pytest
from test_lab import _cli, _free_port_base, _lab_python

pytestmark = pytest.mark.lab
N_SERVERS, K_COMPUTES = 12, 2


@pytest.fixture
def lab(tmp_path):
    from stacklens_lab.config import Ports

    py = _lab_python()
    base = _free_port_base()
    root = tmp_path / "lab"
    r = _cli("up", "--computes", str(K_COMPUTES), "--dir", str(root), "--python", py,
             "--port-base", str(base), "--workers", "1")
    try:
        assert r.returncode == 0, f"lab up failed:\n{r.stderr[-4000:]}"
        yield root, Ports(base)
    finally:
        _cli("down", "--dir", str(root), timeout_s=300)


def _storm(nova, image: str) -> None:
    def boot(i: int) -> str:
        status, body = nova.call("POST", "/servers", {"server": {
            "name": f"dbstat-{i}", "imageRef": image, "flavorRef": "lab-tiny",
            "networks": "none"}})
        assert status == 202, f"POST /servers: HTTP {status} {body}"
        return str(body["server"]["id"])

    with ThreadPoolExecutor(N_SERVERS) as ex:
        ids = set(ex.map(boot, range(N_SERVERS)))
    deadline = time.monotonic() + 300
    for _ in range(300):
        status, body = nova.call("GET", "/servers/detail?name=^dbstat-")
        now = {s["id"]: s["status"] for s in body["servers"] if s["id"] in ids}
        if all(now.get(i) in ("ACTIVE", "ERROR") for i in ids) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert sorted(now.values()) == ["ACTIVE"] * N_SERVERS, now
    for i in ids:
        nova.call("DELETE", f"/servers/{i}")
    for _ in range(300):
        _, body = nova.call("GET", "/servers/detail?name=^dbstat-")
        if not [s for s in body["servers"] if s["id"] in ids] or time.monotonic() > deadline:
            break
        time.sleep(1)


def test_db_and_resources_during_a_boot_storm(lab):
    from stacklens.analyze.build import section_rows
    from stacklens.analyze.db_sections import DB_SECTIONS
    from stacklens.analyze.resource_sections import RESOURCE_SECTIONS
    from stacklens.dbstat import DbRecorder, DbTarget
    from stacklens.recorder import recording
    from stacklens.resources import ResourceRecorder
    from stacklens_lab.client import Api
    from stacklens_lab.config import DB_PASSWORD, DB_USER
    from stacklens_lab.services import service_pids

    root, ports = lab
    st = json.loads(_cli("status", "--dir", str(root), "--json").stdout)
    nova = Api(f"http://127.0.0.1:{ports.nova_api}/v2.1", token="demo:demo")
    targets = service_pids(root / "run")
    assert {"mariadb", "nova-conductor", "nova-scheduler", "nova-compute"} <= {
        s for s, _ in targets.values()}
    db = DbRecorder(DbTarget(port=ports.mariadb, user=DB_USER, password=DB_PASSWORD),
                    interval_s=2.0)
    res = ResourceRecorder(targets, interval_s=1.0)
    with recording([db, res]) as rec:
        _storm(nova, st["state"]["image"])
    assert rec.notes == {"db": [], "resources": []}, rec.notes

    con = duckdb.connect()
    for name, df in rec.tables.items():
        con.register(name, df)
    sec = {s.name: s for s in (*DB_SECTIONS, *RESOURCE_SECTIONS)}
    cuid = {r["schema"]: r for r in section_rows(con, sec["db_cuid"])}
    summary = section_rows(con, sec["db_summary"])[0]
    per = section_rows(con, sec["resources"])
    print("\nCUID per schema (statements, select/insert/update/delete %, time s):")
    for s, r in cuid.items():
        shares = " / ".join(f"{100 * (r[f'{k}_share'] or 0):.1f}"
                            for k in ("select", "insert", "update", "delete"))
        print(f"  {s:12} {r['statements']:7} {shares}  {r['time_s']:.2f}")
    print("db summary:", {k: summary[k] for k in ("snapshots", "deadlocks", "lock_waits",
                                                  "lock_wait_s", "peak_threads_connected",
                                                  "snapshot_mean_s")})
    print("per service (peak CPU %, mean CPU %, peak RSS MiB):")
    for r in per:
        print(f"  {r['service']:16} x{r['instances']} {100 * (r['peak_cpu'] or 0):6.1f} "
              f"{100 * (r['mean_cpu'] or 0):6.1f} {r['peak_rss_mib']:7.0f}")

    assert {"nova", "nova_api", "placement"} <= set(cuid), cuid.keys()
    for s, r in cuid.items():
        cuid_n = sum(r[f"{k}_n"] for k in ("select", "insert", "update", "delete"))
        if cuid_n:
            assert sum(r[f"{k}_share"] for k in ("select", "insert", "update", "delete")) == (
                pytest.approx(1.0)), s
    assert cuid["nova_api"]["insert_n"] >= N_SERVERS  # one build request per server at least
    assert summary["deadlocks"] is not None and summary["snapshots"] >= 3
    services = {r["service"] for r in per}
    services_main = {"nova-conductor", "nova-scheduler", "mariadb", "nova-api"}
    assert services_main <= services
    # every sampled process was seen alive; the daemons beside the services (epmd) are small
    assert all(r["peak_rss_mib"] > 0 for r in per)
    assert all(r["peak_rss_mib"] > 10 for r in per if r["service"] in services_main), per
