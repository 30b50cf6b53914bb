"""Workload ``mixed`` on ``stacklens lab up --neutron`` (issue 13): a boot storm with real ports
and a port storm at the same time, in one run.

Needs the lab python and the neutron python (the skips of tests/test_lab_neutron.py). Brings up
4 fake computes with --neutron on ports 27600+, creates a shared network for the servers, and
runs 8 servers (each with a port on it) beside 40 ports (a network of the run's own, bound
round-robin to the agent stand-ins' hosts), both parts started together, through
:func:`stacklens.drive.session.run_scenario`; then analyzes the lab's logs into the run folder.
Checks: every part finishes, every port ok and every server ok or failed with its reason (3 in
4 ok at least), records of both operations in requests.jsonl,
the report's client steps split per part (servers with an active step, ports without), both
operations among the server-side traces, and nothing of the run left after cleanup. Prints the
numbers per operation. A few minutes on 2 cores; the lab is always brought down.
"""

from __future__ import annotations

import asyncio
import json
import time
import urllib.parse
import urllib.request

import pytest

N_SERVERS, N_PORTS, K_COMPUTES, PORT_BASE = 8, 40, 4, 27600

SCENARIO = """\
name: mixed-lab
workload:
  mixed:
    start: together
    parts:
      - boot_servers:
          count: {servers}
          flavor: lab.tiny
          image: stacklens-lab-image
          network: {net}
          concurrency: {servers}
          phases:
            active: {{timeout_s: 300}}
            delete: {{enabled: true, when: each, timeout_s: 300}}
      - create_ports:
          count: {ports}
          concurrency: {ports}
          cidr: 10.81.0.0/24
          project_id: {project}
          binding: agents
          delete: {{enabled: true, when: all, hold_s: 2}}
client: {{request_timeout_s: 300}}
sla: {{success_rate: 0.75}}
"""


def _api(method: str, url: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode() if body is not None else None, method=method,
        headers={"Content-Type": "application/json", "X-Auth-Token": "admin:admin"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


@pytest.mark.lab
def test_lab_mixed_boot_and_port_storms_at_once(tmp_path):
    from test_lab_neutron import PROJECT, _cli, _pythons

    from stacklens.drive.client import ComputeClient, Connection
    from stacklens.drive.mixed import MixedWorkload
    from stacklens.drive.records import read_records
    from stacklens.drive.scenario import parse_scenario
    from stacklens.drive.session import run_scenario
    from stacklens.pipeline import analyze_logs
    from stacklens.store import RunStore
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
        neutron, nova = f"http://127.0.0.1:{p.neutron}", f"http://127.0.0.1:{p.nova_api}/v2.1"
        net = _api("POST", f"{neutron}/v2.0/networks",
                   {"network": {"name": "mixed-boot-net", "shared": True}})["network"]
        _api("POST", f"{neutron}/v2.0/subnets", {"subnet": {
            "network_id": net["id"], "ip_version": 4, "cidr": "10.80.0.0/24"}})
        conn = Connection(nova, "admin:admin", network_endpoint=neutron)
        scn = parse_scenario(SCENARIO.format(servers=N_SERVERS, ports=N_PORTS, net=net["id"],
                                             project=PROJECT))
        t0 = time.monotonic()
        res = asyncio.run(run_scenario(scn, conn, tmp_path / "run"))
        wall_s = time.monotonic() - t0
        s = res.summary
        assert not s.interrupted and not s.errors and s.leftovers == [], s.errors
        recs = s.records
        servers = [x for x in recs if x.scenario == "mixed-lab/boot_servers"]
        ports = [x for x in recs if x.scenario == "mixed-lab/create_ports"]
        assert (len(servers), len(ports)) == (N_SERVERS, N_PORTS)
        # mixed's own contract: every part's every step ends with an outcome. A lab server that
        # does not get ACTIVE in time (seen once in ten minutes of 2 cores shared with a test
        # suite) is the lab's, not mixed's: it must fail with its reason, not vanish
        assert {x.outcome for x in ports} == {"ok"}, [x.error for x in ports if x.error]
        bad_servers = [(x.outcome, x.error) for x in servers if x.outcome != "ok"]
        assert all(o and e for o, e in bad_servers), bad_servers
        ok_servers = len(servers) - len(bad_servers)
        assert ok_servers >= N_SERVERS * 3 // 4, bad_servers
        if bad_servers:
            print(f"\nmixed lab: servers not ok: {bad_servers}")
        assert all(x.name.startswith(f"sl-{res.plan.run_id}-p0-") for x in servers)
        assert all(x.name.startswith(f"sl-{res.plan.run_id}-p1-") for x in ports)
        # at once: the port storm ran while the servers were building
        assert min(x.submit_ns for x in ports) < max(  # type: ignore
            x.active_ns for x in servers if x.active_ns is not None)
        assert all(c.ok for c in res.sla)
        jsonl, bad = read_records(tmp_path / "run/requests.jsonl")
        assert bad == 0 and {x.scenario for x in jsonl} == {"mixed-lab/boot_servers",
                                                            "mixed-lab/create_ports"}

        # nothing left: the run's servers, ports and network, and a cleanup finds nothing
        # A delete is seen done at status DELETED (nova's compute saved vm_state deleted); nova
        # destroys the row only after placement's allocations are gone (compute manager
        # _delete_instance, then _complete_deletion), seconds later on a busy lab: wait for it,
        # bounded
        run_prefix = res.plan.prefix
        deadline = time.monotonic() + 90
        while True:
            left = _api("GET", f"{nova}/servers/detail?name="
                        f"{urllib.parse.quote('^' + run_prefix)}")["servers"]
            if not left or time.monotonic() > deadline:
                break
            assert {x["status"] for x in left} <= {"DELETED"}, [(x["name"], x["status"])
                                                                for x in left]
            time.sleep(2)
        left = [(x["name"], x["status"]) for x in left]
        names = [x["name"] for kind in ("ports", "networks", "subnets")
                 for x in _api("GET", f"{neutron}/v2.0/{kind}?fields=name")[kind]]
        assert left == [] and not [n for n in names if n.startswith(run_prefix)]

        async def sweep():
            async with ComputeClient(conn) as client:
                return await MixedWorkload.cleanup(client, run_prefix, 60.0, 1.0)

        swept = asyncio.run(sweep())
        assert (swept.found, swept.remaining, swept.errors) == (0, [], [])

        # the report: client steps per part, both operations among the traces
        report = analyze_logs(RunStore(tmp_path / "run"), [str(root / "logs")], html=False)[2]
        steps = {(x["scenario"], x["step"]): x for x in report["client_steps"]}
        assert steps[("mixed-lab/boot_servers", "active")]["ok"] == ok_servers
        assert steps[("mixed-lab/create_ports", "create")]["ok"] == N_PORTS
        assert ("mixed-lab/create_ports", "active") not in steps
        ops = {o["operation"] for o in report["operations"]}
        assert {"server.create", "port.create"} <= ops, ops

        m = json.loads((tmp_path / "run/manifest.json").read_text())["run"]["summary"]
        for label, dur in (("boot_servers", "create_s"), ("create_ports", "api_s")):
            ps = m["parts"][label]
            print(f"\nmixed lab: {label}: {ps['servers']} records, success "
                  f"{ps['success_rate']:.3f}, {dur} p50 {ps[dur]['p50']:.2f} s p95 "
                  f"{ps[dur]['p95']:.2f} s; delete_s p50 {ps['delete_s']['p50']:.2f} s")
        print(f"mixed lab: run {(s.ended_ns - s.started_ns) / 1e9:.1f} s of driving, "
              f"{wall_s:.1f} s with planning and cleanup; calls {s.calls}")
    finally:
        _cli("down", "--dir", str(root), timeout_s=300)
