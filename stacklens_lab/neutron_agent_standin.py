"""A neutron L2 agent *stand-in* for one fake compute host: not an Open vSwitch agent.

There is no Open vSwitch in the lab, so no real L2 agent can run. This stand-in does the RPC part
of one, through neutron's real RPC API (neutron stable/2025.1, ``neutron/agent/rpc.py`` and
``ovs_neutron_agent.py``), and nothing on any data path:

- state: ``has_alive_neutron_server`` (call), then ``report_state`` on topic
  ``q-reports-plugin`` (version 1.3; a call with ``start_flag`` the first time, casts every
  ``--report-interval`` s after) with ``agent_type`` ``Open vSwitch agent`` (so ML2's
  openvswitch mechanism driver binds ports to this host), ``binary``
  ``neutron-openvswitch-agent-standin`` (so ``GET /v2.0/agents`` names it a stand-in),
  ``tunnel_types`` ``[vxlan]``, ``l2_population`` on, and ``resource_versions`` as given;
- fan-out: the queues an OVS agent with l2population consumes: ``q-agent-notifier-`` {
  ``tunnel-update``, ``tunnel-delete``, ``dvr-update``, ``l2population-update``} and the
  push-notification topics ``neutron-vo-<Type>-<version>`` of its resource cache (Port,
  SecurityGroup, SecurityGroupRule, Network, Subnet, AddressGroup) at the versions it
  reports; every message is counted by topic and method;
- devices: when a pushed Port is bound to this host and not ACTIVE, it calls
  ``update_device_list`` (topic ``q-plugin``, version 1.9) with the port as up, as an agent
  does once it has wired a port: neutron then sets the port ACTIVE, l2population fans out FDB
  entries and nova gets ``network-vif-plugged``.

Writes oslo.log-style lines to ``--log`` and the counts as JSON to ``--counts`` (every 2 s
when they changed, and at exit): ``{"host", "started_at", "reports", "devices_up",
"received": {topic: {method: n}}}``. Runs under the neutron python (oslo.messaging only);
imports nothing from stacklens or neutron. Stop with SIGTERM.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

BINARY = "neutron-openvswitch-agent-standin"
AGENT_TYPE = "Open vSwitch agent"  # neutron_lib.constants.AGENT_TYPE_OVS
CACHE_TYPES = ("Port", "SecurityGroup", "SecurityGroupRule", "Network", "Subnet",
               "AddressGroup")  # neutron.agent.rpc.CacheBackedPluginApi.RESOURCE_TYPES
FANOUT = ("q-agent-notifier-tunnel-update", "q-agent-notifier-tunnel-delete",
          "q-agent-notifier-dvr-update", "q-agent-notifier-l2population-update")
LOG = logging.getLogger("neutron_agent_standin")


class Counts:
    """Thread-safe message counts, dumped as JSON."""

    def __init__(self, host: str, path: Path) -> None:
        self.host, self.path = host, path
        self.lock = threading.Lock()
        self.received: dict[str, dict[str, int]] = {}
        self.reports = self.devices_up = 0
        self.started_at = time.time()
        self.dirty = True

    def add(self, topic: str, method: str) -> None:
        with self.lock:
            by = self.received.setdefault(topic, {})
            by[method] = by.get(method, 0) + 1
            self.dirty = True

    def bump(self, field: str) -> None:
        with self.lock:
            setattr(self, field, getattr(self, field) + 1)
            self.dirty = True

    def dump(self) -> None:
        with self.lock:
            if not self.dirty:
                return
            d = {"host": self.host, "started_at": self.started_at, "reports": self.reports,
                 "devices_up": self.devices_up, "received": self.received}
            self.dirty = False
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(d, indent=1, sort_keys=True) + "\n")
        tmp.replace(self.path)


def _ctx(req_id: str | None = None) -> dict:
    """An admin context as neutron's agents send it (``get_admin_context_without_session``
    serialized): neutron's RequestContextSerializer rebuilds a Context from this dict."""
    return {"is_admin": True, "roles": ["admin"], "user_id": None, "project_id": None,
            "tenant_id": None, "request_id": req_id or f"req-{uuid.uuid4()}",
            "global_request_id": None}


class Endpoint:
    """Counts every RPC method that arrives on one topic; on a Port push bound here, marks the
    port up. oslo.messaging finds methods with ``getattr``; any public name is accepted."""

    def __init__(self, om, topic: str, agent: Agent) -> None:
        # 1.99: compatible with every 1.x sender; namespace None like neutron's endpoints
        self.target = om.Target(version="1.99")
        self._topic, self._agent = topic, agent

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)

        def handle(ctxt, **kwargs):
            self._agent.counts.add(self._topic, method)
            ids = ctxt if isinstance(ctxt, dict) else {}
            LOG.debug("received %s on %s (%d bytes of arguments)", method, self._topic,
                      len(json.dumps(kwargs, default=str)),
                      extra={"req": f"{ids.get('global_request_id') or '-'} "
                                    f"{ids.get('request_id') or '-'}"})
            if method == "push" and self._topic.startswith("neutron-vo-Port-"):
                self._agent.on_ports(kwargs)
            return None

        return handle


class Agent:
    """One stand-in: its RPC clients, servers and report loop."""

    def __init__(self, a: argparse.Namespace) -> None:
        import oslo_messaging as om
        from oslo_config import cfg

        self.om, self.a = om, a
        # the global CONF, as neutron's agents use: oslo.messaging registers some of its
        # options (the metrics group) there only
        self.conf = cfg.CONF
        # neutron's exchange (neutron/common/rpc.py: set_transport_defaults), not "openstack"
        om.set_transport_defaults(control_exchange="neutron")
        self.conf([], project="neutron-agent-standin", default_config_files=[])
        self.transport = om.get_rpc_transport(self.conf, url=a.transport_url)
        self.counts = Counts(a.host, a.counts)
        self.agent_id = f"ovs-agent-standin-{a.host}"
        self.versions: dict[str, str] = json.loads(a.resource_versions)
        self.reports_client = om.get_rpc_client(
            self.transport, om.Target(topic="q-reports-plugin", version="1.3"))
        self.plugin_client = om.get_rpc_client(
            self.transport, om.Target(topic="q-plugin", version="1.9"))
        self.servers: list = []
        self.stop = threading.Event()
        self.state = {
            "binary": BINARY, "host": a.host, "topic": "N/A", "agent_type": AGENT_TYPE,
            "start_flag": True, "resource_versions": self.versions,
            "configurations": {
                "stand_in": True, "bridge_mappings": {}, "tunnel_types": ["vxlan"],
                "tunneling_ip": a.tunneling_ip, "l2_population": True,
                "arp_responder_enabled": False, "enable_distributed_routing": False,
                "integration_bridge": "br-int", "datapath_type": "system",
                "ovs_capabilities": {"datapath_types": ["system"], "iface_types": []},
                "ovs_hybrid_plug": False, "extensions": [], "devices": 0,
                "log_agent_heartbeats": False, "baremetal_smartnic": False,
            },
        }

    def topics(self) -> list[str]:
        """Every topic this stand-in consumes (fanout plus ``<topic>.<host>`` queues)."""
        vo = [f"neutron-vo-{t}-{self.versions[t]}" for t in CACHE_TYPES if t in self.versions]
        return [*FANOUT, *vo]

    def start_servers(self) -> None:
        for topic in self.topics():
            srv = self.om.get_rpc_server(
                self.transport, self.om.Target(topic=topic, server=self.a.host),
                [Endpoint(self.om, topic, self)], executor="threading")
            srv.start()
            self.servers.append(srv)
        LOG.info("consuming %d topics: %s", len(self.servers), ", ".join(self.topics()))

    def wait_server(self, tries: int = 60) -> None:
        """``has_alive_neutron_server`` until True, bounded by ``tries`` calls."""
        cctxt = self.reports_client.prepare(timeout=10)
        for _ in range(tries):
            if self.stop.is_set():
                return
            try:
                if cctxt.call(_ctx(), "has_alive_neutron_server"):
                    return
            except self.om.MessagingTimeout:
                LOG.warning("neutron-server did not answer has_alive_neutron_server; retrying")
            self.stop.wait(2)
        raise SystemExit("neutron-server never answered has_alive_neutron_server")

    def report(self) -> None:
        state = dict(self.state, uuid=str(uuid.uuid4()))
        start = bool(state.get("start_flag"))
        kwargs = {"agent_state": {"agent_state": state},
                  "time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")}
        cctxt = self.reports_client.prepare(timeout=self.a.report_interval)
        try:
            if start:
                cctxt.call(_ctx(), "report_state", **kwargs)
                self.state.pop("start_flag", None)
            else:
                cctxt.cast(_ctx(), "report_state", **kwargs)
            self.counts.bump("reports")
            LOG.debug("reported state (start_flag %s, uuid %s)", start, state["uuid"])
        except self.om.MessagingException as e:
            LOG.warning("report_state failed: %s", e)

    def on_ports(self, kwargs: dict) -> None:
        """Mark up every pushed port bound to this host whose status is not ACTIVE."""
        if kwargs.get("event_type") == "deleted":
            return
        up = []
        for prim in kwargs.get("resource_list") or [kwargs.get("resource") or {}]:
            data = (prim or {}).get("versioned_object.data") or {}
            if data.get("status") == "ACTIVE":
                continue
            for b in data.get("bindings") or []:
                bd = (b or {}).get("versioned_object.data") or {}
                if (bd.get("host") == self.a.host and bd.get("status") == "ACTIVE"
                        and bd.get("vif_type") not in ("unbound", "binding_failed")):
                    up.append(data["id"])
        if up:
            threading.Thread(target=self.devices_up, args=(up,), daemon=True).start()

    def devices_up(self, ports: list[str]) -> None:
        cctxt = self.plugin_client.prepare(timeout=60)
        try:
            cctxt.call(_ctx(), "update_device_list", devices_up=ports, devices_down=[],
                       agent_id=self.agent_id, host=self.a.host, refresh_tunnels=False)
            for _ in ports:
                self.counts.bump("devices_up")
            LOG.debug("update_device_list: up %s", ports)
        except self.om.MessagingException as e:
            LOG.warning("update_device_list for %s failed: %s", ports, e)

    def run(self) -> None:
        self.start_servers()
        self.wait_server()
        next_report = 0.0
        while not self.stop.is_set():  # bounded by SIGTERM; one pass per 2 s
            if time.monotonic() >= next_report:
                self.report()
                next_report = time.monotonic() + self.a.report_interval
            self.counts.dump()
            self.stop.wait(2)
        for srv in self.servers:
            srv.stop()
        self.counts.dump()


class _Fmt(logging.Formatter):
    """oslo.log's default line: ``date time.ms pid LEVEL logger [ids] message``."""

    def format(self, record: logging.LogRecord) -> str:
        t = datetime.fromtimestamp(record.created)
        ids = getattr(record, "req", None)
        ctx = f"[{ids} - - - - -]" if ids else "[-]"
        return (f"{t:%Y-%m-%d %H:%M:%S}.{t.microsecond // 1000:03d} {record.process} "
                f"{record.levelname} {record.name} {ctx} {record.getMessage()}")


def main(argv: list[str] | None = None) -> None:
    """Run one stand-in until SIGTERM."""
    ap = argparse.ArgumentParser(prog="neutron_agent_standin",
                                 description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--host", required=True)
    ap.add_argument("--tunneling-ip", required=True)
    ap.add_argument("--transport-url", required=True)
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--counts", type=Path, required=True)
    ap.add_argument("--report-interval", type=float, default=30.0)
    ap.add_argument("--resource-versions", default="{}")
    a = ap.parse_args(argv)
    a.log.parent.mkdir(parents=True, exist_ok=True)
    h = logging.FileHandler(a.log)
    h.setFormatter(_Fmt())
    LOG.addHandler(h)
    LOG.setLevel(logging.DEBUG)
    agent = Agent(a)
    signal.signal(signal.SIGTERM, lambda *_: agent.stop.set())
    LOG.info("stand-in for host %s (not an Open vSwitch agent) starting", a.host)
    agent.run()


if __name__ == "__main__":
    main()
