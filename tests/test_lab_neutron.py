"""``stacklens lab up --neutron``: a real neutron-server (2025.1) with agent stand-ins.

The first tests need nothing (configs, the stand-in's port handling). The lab test needs the
lab python (``bash .ci/lab-setup.sh``) and the neutron python (``bash .ci/lab-neutron-setup.sh``,
``$STACKLENS_LAB_NEUTRON_PYTHON`` or ``labvenv-neutron`` beside this clone); it skips with the
reason otherwise. It brings up 2 fake computes with --neutron on ports 27000+, creates a network,
a subnet and N ports concurrently through neutron's API, and checks binding, ACTIVE status (set
by the stand-ins through the real RPC API), request ids in neutron-server's log and the fan-out
the stand-ins counted. About 2 minutes on 2 cores; the lab is always brought down.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from stacklens_lab import neutron as nt
from stacklens_lab.config import LabPaths, LabSpec, Ports

REPO = Path(__file__).resolve().parents[1]
PORT_BASE, K_COMPUTES, N_PORTS = 27000, 2, 20
PROJECT = "5eed" * 8
CLI = [sys.executable, "-c",
       "import sys; from stacklens.cli.lab_cmd import lab_app; from stacklens.errors import "
       "StacklensError\ntry:\n    lab_app()\nexcept StacklensError as e:\n"
       "    print(f'stacklens: error: {e}', file=sys.stderr); sys.exit(e.exit_code)"]


def _cli(*args: str, timeout_s: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout_s)


def _standin_module():
    spec = importlib.util.spec_from_file_location(
        "neutron_agent_standin", REPO / "stacklens_lab" / "neutron_agent_standin.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_neutron_conf_keeps_nova_port_and_lab_services(tmp_path):
    spec = LabSpec(root=tmp_path, python="py", computes=4, ports=Ports(27000),
                   neutron_python="npy")
    conf = nt.neutron_conf(spec, LabPaths(tmp_path))
    assert "bind_port = 27096" in conf  # the stand-in's port: nova's [neutron] unchanged
    assert "auth_strategy = noauth" in conf
    assert "127.0.0.1:27006/neutron" in conf and "rabbit://guest:guest@127.0.0.1:27072/" in conf
    ml2 = nt.ml2_conf()
    assert "mechanism_drivers = openvswitch,l2population" in ml2
    assert "type_drivers = flat,vxlan" in ml2 and "enable_security_group = true" in ml2


def test_default_spec_has_no_neutron(tmp_path):
    spec = LabSpec(root=tmp_path, python="py")
    assert spec.neutron_python == ""
    assert LabSpec.from_json({k: v for k, v in spec.to_json().items()
                              if k != "neutron_python"}) == spec  # old lab.json still loads


def test_standin_marks_up_only_ports_bound_here():
    mod = _standin_module()

    class Probe:  # only what on_ports touches
        a = type("A", (), {"host": "fake-1"})()
        seen: list[list[str]] = []

        def devices_up(self, ports):
            self.seen.append(ports)

    def port(pid, host, status="DOWN", vif="ovs"):
        b = {"versioned_object.data": {"host": host, "status": "ACTIVE", "vif_type": vif}}
        return {"versioned_object.data": {"id": pid, "status": status, "bindings": [b]}}

    probe = Probe()
    mod.Agent.on_ports(probe, {"event_type": "updated", "resource_list": [
        port("a", "fake-1"), port("b", "fake-2"), port("c", "fake-1", status="ACTIVE"),
        port("d", "fake-1", vif="binding_failed")]})
    deadline = time.monotonic() + 5
    while not probe.seen and time.monotonic() < deadline:
        time.sleep(0.05)
    assert probe.seen == [["a"]]


# --- the lab ---------------------------------------------------------------------------------

def _pythons() -> tuple[str, str]:
    from stacklens_lab.deps import find_binaries, probe_python

    lab = [os.environ.get("STACKLENS_LAB_PYTHON"), str(REPO.parent / "labvenv/bin/python"),
           "/work/labvenv/bin/python"]
    neu = [os.environ.get(nt.NEUTRON_PYTHON_ENV), str(REPO.parent / "labvenv-neutron/bin/python"),
           "/work/labvenv-neutron/bin/python"]
    py = next((c for c in lab if c and Path(c).is_file()), None)
    npy = next((c for c in neu if c and Path(c).is_file()), None)
    if py is None:
        pytest.skip("no lab python: set STACKLENS_LAB_PYTHON or run bash .ci/lab-setup.sh")
    if npy is None:
        pytest.skip(f"no neutron python: set {nt.NEUTRON_PYTHON_ENV} or run "
                    "bash .ci/lab-neutron-setup.sh")
    if probe_python(py).missing:
        pytest.skip(f"lab python {py} is incomplete: run bash .ci/lab-setup.sh")
    _bins, missing = find_binaries()
    if missing:
        pytest.skip(f"Debian packages missing: {missing}: run bash .ci/lab-setup.sh")
    return py, npy


def _api(method: str, url: str, body: dict | None = None) -> tuple[dict, str]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode() if body is not None else None, method=method,
        headers={"Content-Type": "application/json", "X-Auth-Token": "admin:admin"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r), r.headers.get("X-OpenStack-Request-ID") or ""


@pytest.mark.lab
def test_lab_neutron_port_storm(tmp_path):
    from stacklens_lab.services import port_open

    py, npy = _pythons()
    if any(port_open(p) for p in Ports(PORT_BASE).all().values()):
        pytest.skip(f"lab ports {PORT_BASE}+ are in use")
    root = tmp_path / "lab"
    r = _cli("up", "--computes", str(K_COMPUTES), "--dir", str(root), "--python", py,
             "--neutron", "--neutron-python", npy, "--port-base", str(PORT_BASE),
             "--workers", "1")
    try:
        assert r.returncode == 0, f"lab up --neutron failed:\n{r.stderr[-4000:]}"
        state = json.loads((root / "lab.json").read_text())
        assert state["neutron"]["versions"]["neutron"].startswith("26.")
        base = f"http://127.0.0.1:{Ports(PORT_BASE).neutron}/v2.0"
        agents = _api("GET", f"{base}/agents")[0]["agents"]
        assert {(a["host"], a["binary"], a["alive"]) for a in agents} == {
            (f"fake-{i}", "neutron-openvswitch-agent-standin", True)
            for i in range(1, K_COMPUTES + 1)}

        net = _api("POST", f"{base}/networks",
                   {"network": {"name": "storm", "project_id": PROJECT}})[0]["network"]
        assert net["provider:network_type"] == "vxlan"
        _api("POST", f"{base}/subnets", {"subnet": {
            "network_id": net["id"], "ip_version": 4, "cidr": "10.77.0.0/24",
            "project_id": PROJECT}})

        def create(i: int) -> tuple[dict, str]:
            body, rid = _api("POST", f"{base}/ports", {"port": {
                "network_id": net["id"], "project_id": PROJECT, "device_owner": "compute:nova",
                "device_id": f"storm-{i}", "binding:host_id": f"fake-{i % K_COMPUTES + 1}"}})
            return body["port"], rid

        with ThreadPoolExecutor(N_PORTS) as ex:
            made = list(ex.map(create, range(N_PORTS)))
        # bound by ML2's openvswitch driver to the stand-in's host, DOWN until it is "wired"
        assert {(p["status"], p["binding:vif_type"]) for p, _ in made} == {("DOWN", "ovs")}
        assert len({p["fixed_ips"][0]["ip_address"] for p, _ in made}) == N_PORTS

        statuses: Counter = Counter()
        for _ in range(60):  # the stand-ins call update_device_list: ports go ACTIVE
            ports = _api("GET", f"{base}/ports?network_id={net['id']}&device_owner=compute:nova"
                         )[0]["ports"]
            statuses = Counter(p["status"] for p in ports)
            if statuses == Counter({"ACTIVE": N_PORTS}):
                break
            time.sleep(1)
        assert statuses == Counter({"ACTIVE": N_PORTS})

        log = (root / "logs/controller/var/log/neutron/neutron-server.log").read_text()
        assert all(rid.startswith("req-") and rid in log for _, rid in made)

        # a stand-in counts a device up when update_device_list's reply comes back, which is
        # after neutron-server set the port ACTIVE (seen seconds later on a loaded machine);
        # and it dumps its counts every 2 s: wait, bounded
        for _ in range(30):
            time.sleep(2)
            counts = [json.loads((root / f"run/{nt.agent_name(f'fake-{i}')}.counts.json")
                                 .read_text()) for i in range(1, K_COMPUTES + 1)]
            if sum(c["devices_up"] for c in counts) >= N_PORTS:
                break
        assert sum(c["devices_up"] for c in counts) == N_PORTS
        for c in counts:
            port_topic = next(t for t in c["received"] if t.startswith("neutron-vo-Port-"))
            assert c["received"][port_topic]["push"] >= N_PORTS
            assert c["received"]["q-agent-notifier-l2population-update"]["add_fdb_entries"] > 0
    finally:
        _cli("down", "--dir", str(root), timeout_s=300)


BOOT = """\
name: boot-ports
workload:
  boot_servers:
    count: {n}
    flavor: lab.tiny
    image: stacklens-lab-image
    network: {net}
    concurrency: {n}
    phases:
      active: {{timeout_s: 300}}
      delete: {{enabled: true, when: each, timeout_s: 300}}
"""


@pytest.mark.lab
def test_lab_neutron_boot_with_ports_traced(tmp_path):
    """Servers booted on a neutron network: nova-compute's calls to neutron-server join the
    server.create traces as neutron-server spans (global request id), and neutron's
    network-vif-plugged events reach nova-api (the stand-ins set the ports ACTIVE)."""
    import asyncio

    import duckdb

    from stacklens.drive.client import Connection
    from stacklens.drive.scenario import parse_scenario
    from stacklens.drive.session import run_scenario
    from stacklens.pipeline import analyze_logs
    from stacklens.store import RunStore
    from stacklens_lab.services import port_open

    py, npy = _pythons()
    base_port, n = PORT_BASE + 400, 4
    if any(port_open(p) for p in Ports(base_port).all().values()):
        pytest.skip(f"lab ports {base_port}+ are in use")
    root = tmp_path / "lab"
    r = _cli("up", "--computes", str(K_COMPUTES), "--dir", str(root), "--python", py,
             "--neutron", "--neutron-python", npy, "--port-base", str(base_port),
             "--workers", "1")
    try:
        assert r.returncode == 0, f"lab up --neutron failed:\n{r.stderr[-4000:]}"
        p = Ports(base_port)
        neutron = f"http://127.0.0.1:{p.neutron}"
        net = _api("POST", f"{neutron}/v2.0/networks",
                   {"network": {"name": "boot-net", "shared": True}})[0]["network"]
        _api("POST", f"{neutron}/v2.0/subnets", {"subnet": {
            "network_id": net["id"], "ip_version": 4, "cidr": "10.79.0.0/24"}})
        conn = Connection(f"http://127.0.0.1:{p.nova_api}/v2.1", "admin:admin",
                          network_endpoint=neutron)
        res = asyncio.run(run_scenario(parse_scenario(BOOT.format(n=n, net=net["id"])), conn,
                                       tmp_path / "run"))
        recs = res.summary.records
        assert len(recs) == n and {x.outcome for x in recs} == {"ok"}, [x.error for x in recs]
        nova_api = (root / "logs/controller/var/log/nova/nova-api.log").read_text()
        plugged = set(re.findall(r"Creating event network-vif-plugged:\S+ for instance "
                                 r"([0-9a-f-]{36})", nova_api))
        assert {x.server_id for x in recs} <= plugged
        store = RunStore(tmp_path / "an")
        analyze_logs(store, [str(root / "logs")], html=False)
        con = duckdb.connect()
        t = store.tables_dir
        rows = con.execute(f"""
            SELECT t.trace_id, count(s.span_id) AS neutron_spans
            FROM read_parquet('{t}/traces.parquet') t
            JOIN read_parquet('{t}/spans.parquet') s
              ON s.trace_id = t.trace_id AND s.service = 'neutron-server'
            WHERE t.operation = 'server.create' GROUP BY t.trace_id""").fetchall()
        assert len(rows) == n and all(k >= 1 for _, k in rows), rows
    finally:
        _cli("down", "--dir", str(root), timeout_s=300)


def test_green_context_server_patches_eventlet_before_neutron(tmp_path):
    npy = nt.NeutronPython("/x/bin/python", {"prefix": "/x", "scripts": "/x/bin", "versions": {},
                                            "resource_versions": {}})
    paths = LabPaths(tmp_path)
    assert list(nt.server(paths, npy).argv)[0] == "/x/bin/neutron-server"
    argv = list(nt.server(paths, npy, green_context=True).argv)
    assert argv[:2] == ["/x/bin/python", "-c"] and argv[3] == "--config-file"
    code = argv[2]
    assert code.index("eventlet.monkey_patch()") < code.index("from neutron")
    spec = LabSpec(root=tmp_path, python="py", neutron_python="npy", neutron_green_context=True)
    assert LabSpec.from_json(spec.to_json()) == spec


def test_ports_in_ephemeral_range_are_named(tmp_path):
    """A port base inside the kernel's ephemeral range is named (an outgoing connection can take
    such a port first: CI failed once with nova-api's EADDRINUSE on 33274); the tests' fixed
    bases sit below it."""
    rng = tmp_path / "range"
    rng.write_text("32768\t60999\n")
    assert Ports(28700).in_ephemeral_range(rng) == {}
    assert Ports(PORT_BASE).in_ephemeral_range(rng) == {}
    hit = Ports(32700).in_ephemeral_range(rng)
    assert hit["nova_api"] == 32774 and "mariadb" not in hit
    assert Ports(33200).in_ephemeral_range(tmp_path / "absent") == {}
