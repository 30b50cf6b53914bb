"""Workload ``create_ports`` (issue 13): N neutron ports at once on one subnet, then deleted.

The first tests need nothing (the config, the record's JSONL line, the plan's refusal without
neutron). The lab test needs the lab python and the neutron python (see
tests/test_lab_neutron.py, whose skips it shares); it brings up 2 fake computes with --neutron
on ports 27200+ (below the kernel's ephemeral range, so no outgoing connection takes one),
runs a 20-port storm bound round-robin to the agent stand-ins' hosts through
:func:`stacklens.drive.session.run_scenario`, and checks every record (ok, distinct fixed IPs of
the /24, request ids in neutron-server's log) and that the run left nothing behind. About 2
minutes on 2 cores; the lab is always brought down.
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import pytest

from stacklens.drive.client import ComputeClient, Connection
from stacklens.drive.create_ports import CreatePortsWorkload, PortRecord
from stacklens.drive.records import read_records
from stacklens.drive.scenario import ScenarioError, load_scenario, parse_scenario
from stacklens.errors import UserError

REPO = Path(__file__).resolve().parents[1]
PORT_BASE, K_COMPUTES, N_PORTS = 27200, 2, 20
PROJECT = "5eed" * 8

SCENARIO = f"""\
name: ports
workload:
  create_ports:
    count: {N_PORTS}
    concurrency: {N_PORTS}
    cidr: 10.78.0.0/24
    project_id: {PROJECT}
    binding: agents
"""


def test_example_port_storm_parses():
    scn = load_scenario(REPO / "examples" / "port-storm.yaml")
    name, cfg = scn.workload.chosen()
    assert name == "create_ports"
    assert (cfg.count, cfg.concurrency, cfg.binding, cfg.delete.when) == (200, 50, "agents", "all")
    assert CreatePortsWorkload.durations == ("api_s", "delete_s")


def test_config_errors_name_the_line():
    with pytest.raises(ScenarioError, match=r"s.yaml:8: workload.create_ports.binding"):
        parse_scenario(SCENARIO.replace("binding: agents", "binding: all"), "s.yaml")
    with pytest.raises(ScenarioError, match="count"):
        parse_scenario(SCENARIO.replace(f"count: {N_PORTS}", "count: 0"), "s.yaml")


def test_port_record_keeps_its_fixed_ip_in_the_jsonl(tmp_path):
    from stacklens.drive.records import RecordWriter

    rec = PortRecord(run_id="r", name="sl-r-r0-00000").evolve(fixed_ip="10.78.0.5",
                                                              server_id="p1")
    assert isinstance(rec, PortRecord)
    with RecordWriter(tmp_path / "requests.jsonl") as w:
        w.write(rec)
    line = json.loads((tmp_path / "requests.jsonl").read_text())
    assert (line["fixed_ip"], line["server_id"], line["v"]) == ("10.78.0.5", "p1", 1)
    back, bad = read_records(tmp_path / "requests.jsonl")
    assert (bad, back[0].server_id) == (0, "p1")  # readers ignore the extra key


def test_plan_needs_a_network_endpoint():
    scn = parse_scenario(SCENARIO)

    async def go() -> None:
        async with ComputeClient(Connection("http://127.0.0.1:9/v2.1")) as client:
            await CreatePortsWorkload(scn.workload.chosen()[1]).plan(scn, client, "0badf00d")

    with pytest.raises(UserError, match="needs neutron"):
        asyncio.run(go())


# --- the lab ---------------------------------------------------------------------------------

def _get(url: str) -> dict:
    req = urllib.request.Request(url, headers={"X-Auth-Token": "admin:admin"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)


@pytest.mark.lab
def test_lab_create_ports_storm(tmp_path):
    from test_lab_neutron import _cli, _pythons

    from stacklens.drive.session import run_scenario
    from stacklens_lab.config import Ports
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
        p = Ports(PORT_BASE)
        neutron = f"http://127.0.0.1:{p.neutron}"
        conn = Connection(f"http://127.0.0.1:{p.nova_api}/v2.1", "admin:admin",
                          network_endpoint=neutron)
        scn = parse_scenario(SCENARIO)
        res = asyncio.run(run_scenario(scn, conn, tmp_path / "run"))
        recs = res.summary.records
        assert len(recs) == N_PORTS and not res.summary.errors
        assert {r.outcome for r in recs} == {"ok"}, [r.error for r in recs if r.error]
        assert {r.create_http_status for r in recs} == {201}
        assert {r.delete_http_status for r in recs} == {204}
        assert {r.host for r in recs} == {f"fake-{i}" for i in range(1, K_COMPUTES + 1)}
        ips = {r.fixed_ip for r in recs if isinstance(r, PortRecord)}
        assert len(ips) == N_PORTS and all(ip and ip.startswith("10.78.0.") for ip in ips)
        assert all(r.api_s and r.api_s > 0 and r.delete_s is not None for r in recs)
        log = (root / "logs/controller/var/log/neutron/neutron-server.log").read_text()
        assert all(r.request_id and r.request_id.startswith("req-") and r.request_id in log
                   for r in recs)
        assert all(r.global_request_id in log for r in recs)  # sent, and logged by neutron
        jsonl = [json.loads(x) for x in (tmp_path / "run/requests.jsonl").read_text().split()]
        assert {x["fixed_ip"] for x in jsonl if x["outcome"] == "ok"} == ips
        left = _get(f"{neutron}/v2.0/networks?name=sl-{res.plan.run_id}-net")["networks"]
        assert left == [] and res.summary.leftovers == []
        summary = json.loads((tmp_path / "run/manifest.json").read_text())["run"]["summary"]
        assert summary["success_rate"] == 1.0 and summary["api_s"]["p95"] > 0
    finally:
        _cli("down", "--dir", str(root), timeout_s=300)
