"""``stacklens lab up --neutron``: a real neutron-server (2025.1) and one L2 agent stand-in per host.

Without ``--neutron`` the lab answers nova's neutron calls with the loopback stand-in
(:mod:`stacklens_lab.neutron_standin`) and nothing here runs. With it:

- a database ``neutron`` in the lab's MariaDB, migrated by ``neutron-db-manage upgrade heads``
  (beside the other schema syncs);
- ``neutron-server`` (eventlet, the 2025.1 console script) from its own venv (the *neutron
  python*, ``.ci/lab-neutron-setup.sh``), on the port the stand-in uses otherwise, so nova's
  ``[neutron]`` section is the same; ML2 with ``openvswitch`` + ``l2population``, type drivers
  ``flat``/``vxlan`` (tenant networks vxlan), security groups on, ``auth_strategy = noauth``
  (neutron then gives every request an admin context), the lab's RabbitMQ; log in
  ``logs/controller/var/log/neutron/neutron-server.log``;
- per fake compute ``fake-N`` one ``neutron-agent-standin-fake-N``
  (:mod:`stacklens_lab.neutron_agent_standin`): NOT an Open vSwitch agent (there is no Open
  vSwitch here), a small process that reports state through neutron's real RPC API as an
  ``Open vSwitch agent`` (so ML2's openvswitch driver binds ports to its host) and consumes the
  fan-out queues an OVS agent consumes, counting what arrives. Its binary is
  ``neutron-openvswitch-agent-standin``, so ``GET /v2.0/agents`` names it a stand-in too.

Every option below is one neutron reads in stable/2025.1 (``neutron/conf/common.py``,
``neutron/conf/plugins/ml2/config.py``, ``neutron/conf/agent/common.py``).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from stacklens.errors import LabError
from stacklens_lab import services as sv
from stacklens_lab.config import CONTROLLER, DB_PASSWORD, DB_USER, LOG_LEVELS, LabPaths, LabSpec

__all__ = [
    "AGENT_STANDIN",
    "NEUTRON_DB",
    "NEUTRON_PYTHON_ENV",
    "NeutronPython",
    "agent_name",
    "agents",
    "neutron_conf",
    "probe",
    "schema_job",
    "server",
    "wait_agents",
    "write_configs",
]

NEUTRON_PYTHON_ENV = "STACKLENS_LAB_NEUTRON_PYTHON"
NEUTRON_DB = "neutron"
AGENT_STANDIN = "neutron-agent-standin"  # process name prefix: neutron-agent-standin-fake-N
INSTALL_HINT = ("bash .ci/lab-neutron-setup.sh, then pass --neutron-python "
                f"LABVENV-NEUTRON/bin/python or set {NEUTRON_PYTHON_ENV}")
REPORT_INTERVAL_S = 30  # neutron's [agent] report_interval default
AGENT_DOWN_TIME_S = 75  # neutron's default; agents older than this are not bound to

_PROBE = """
import json, sys, sysconfig
from importlib import metadata
from neutron.api.rpc.callbacks import resources
print(json.dumps({"prefix": sys.prefix, "scripts": sysconfig.get_path("scripts"),
                  "resource_versions": resources.LOCAL_RESOURCE_VERSIONS,
                  "versions": {d: metadata.version(d) for d in
                               ("neutron", "neutron-lib", "oslo.messaging", "eventlet")}}))
"""


class NeutronPython:
    """What the neutron python holds (from :func:`probe`): ``python`` (path), ``prefix``,
    ``scripts`` (where ``neutron-server`` is), ``versions`` {distribution: version} and
    ``resource_versions`` {object type: version} (``LOCAL_RESOURCE_VERSIONS``, which the agent
    stand-ins report so that neutron pushes to the topics they consume)."""

    def __init__(self, python: str, d: dict) -> None:
        self.python = python
        self.prefix = Path(d["prefix"])
        self.scripts = Path(d["scripts"])
        self.versions: dict[str, str] = dict(d["versions"])
        self.resource_versions: dict[str, str] = dict(d["resource_versions"])


def probe(python: str) -> NeutronPython:
    """Ask the neutron python for its layout and versions. LabError (with the install hint)
    when it is absent or has no neutron."""
    if not python:
        raise LabError(f"lab: --neutron needs a neutron python: {INSTALL_HINT}")
    if not (Path(python).is_file() or shutil.which(python)):
        raise LabError(f"lab: neutron python {python!r} does not exist. To make one: "
                       f"{INSTALL_HINT}")
    try:
        r = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=120)
        d = json.loads(r.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        raise LabError(f"lab: neutron python {python!r} cannot import neutron ({e}). To make "
                       f"one: {INSTALL_HINT}") from e
    return NeutronPython(python, d)


def _ini(sections: dict[str, dict[str, object]]) -> str:
    out = []
    for name, opts in sections.items():
        out.append(f"[{name}]")
        out += [f"{k} = {v}" for k, v in opts.items()]
        out.append("")
    return "\n".join(out)


def neutron_conf(spec: LabSpec, paths: LabPaths) -> str:
    """neutron.conf for neutron-server and neutron-db-manage."""
    p = spec.ports
    pool = {"max_pool_size": max(10, spec.computes), "max_overflow": max(20, 2 * spec.computes)}
    return _ini({
        "DEFAULT": {
            "debug": "True",  # request ids, RPC msg ids, the l2pop "Fanout notify" lines
            "default_log_levels": LOG_LEVELS,
            "log_file": paths.log(CONTROLLER, "neutron", "neutron-server"),
            "host": CONTROLLER,
            "bind_host": "127.0.0.1",
            "bind_port": p.neutron,  # the stand-in's port: nova's [neutron] stays as it is
            "core_plugin": "ml2",
            "service_plugins": "",
            "auth_strategy": "noauth",  # every request gets an admin context
            "api_paste_config": paths.etc / "neutron" / "api-paste.ini",
            "transport_url": f"rabbit://guest:guest@127.0.0.1:{p.amqp}/",
            "state_path": paths.data / "neutron",
            "api_workers": spec.workers,
            "rpc_workers": 1,
            "rpc_state_report_workers": 1,
            "agent_down_time": AGENT_DOWN_TIME_S,
            # no DHCP agent runs; its notifications would only log warnings
            "dhcp_agent_notification": "false",
            # network-vif-plugged events go to the lab's nova-api (admin under noauth2)
            "notify_nova_on_port_status_changes": "true",
            "notify_nova_on_port_data_changes": "true",
        },
        "nova": {"auth_type": "admin_token", "token": "admin:admin",
                 "endpoint": f"http://127.0.0.1:{p.nova_api}/v2.1"},
        "database": {"connection": (f"mysql+pymysql://{DB_USER}:{DB_PASSWORD}@127.0.0.1:"
                                    f"{p.mariadb}/{NEUTRON_DB}?charset=utf8"), **pool},
        "agent": {"report_interval": REPORT_INTERVAL_S},
        "oslo_policy": {"enforce_new_defaults": "false", "enforce_scope": "false"},
        "oslo_messaging_notifications": {"driver": "noop"},
        "oslo_concurrency": {"lock_path": paths.data / "neutron" / "locks"},
    })


def ml2_conf() -> str:
    """ml2_conf.ini: openvswitch (bound through the agent stand-ins' reports) + l2population,
    flat and vxlan type drivers, vxlan tenant networks, security groups on."""
    return _ini({
        "ml2": {"type_drivers": "flat,vxlan", "tenant_network_types": "vxlan",
                "mechanism_drivers": "openvswitch,l2population",
                "extension_drivers": "port_security"},
        "ml2_type_flat": {"flat_networks": "physnet1"},
        "ml2_type_vxlan": {"vni_ranges": "1:10000"},
        "securitygroup": {"enable_security_group": "true", "firewall_driver": "openvswitch"},
    })


def write_configs(spec: LabSpec, paths: LabPaths, npy: NeutronPython) -> None:
    """``etc/neutron/{neutron.conf, ml2_conf.ini, api-paste.ini}`` (the last is neutron's own,
    copied from the neutron python's ``etc/neutron``) and the stand-in script under ``py/``."""
    etc = paths.etc / "neutron"
    for d in (etc, paths.data / "neutron" / "locks", paths.py):
        d.mkdir(parents=True, exist_ok=True)
    (etc / "neutron.conf").write_text(neutron_conf(spec, paths))
    (etc / "ml2_conf.ini").write_text(ml2_conf())
    paste = npy.prefix / "etc" / "neutron" / "api-paste.ini"
    if not paste.is_file():
        raise LabError(f"lab: neutron's api-paste.ini is not at {paste}; reinstall: "
                       f"{INSTALL_HINT}")
    shutil.copyfile(paste, etc / "api-paste.ini")
    shutil.copyfile(Path(__file__).with_name("neutron_agent_standin.py"),
                    paths.py / "stacklens_lab_neutron_agent_standin.py")


def _conf_args(paths: LabPaths) -> list[str]:
    etc = paths.etc / "neutron"
    return ["--config-file", str(etc / "neutron.conf"), "--config-file",
            str(etc / "ml2_conf.ini")]


def schema_job(paths: LabPaths, npy: NeutronPython,
               run: Callable[[list[str], LabPaths, str], str]) -> Callable[[], object]:
    """A job for the lab's schema step: ``neutron-db-manage upgrade heads`` (``run`` is the
    lab's one-shot runner, which raises LabError on failure)."""
    argv = [str(npy.scripts / "neutron-db-manage"), *_conf_args(paths), "upgrade", "heads"]
    return lambda: run(argv, paths, "neutron-db-manage upgrade heads")


#: ``neutron-server``'s console script with ``eventlet.monkey_patch()`` first (see
#: :func:`server`); neutron's own ``monkey_patch()`` then finds eventlet patched already and
#: only configures pyroute2, as it would.
GREEN_SERVER = ("import sys, eventlet; eventlet.monkey_patch(); "
                "from neutron.cmd.eventlet.server import main; sys.argv[0] = 'neutron-server'; "
                "sys.exit(main())")


def server(paths: LabPaths, npy: NeutronPython, green_context: bool = False) -> sv.ProcSpec:
    """The neutron-server process (ready when ``GET /v2.0/networks`` answers).

    Stock (the console script ``neutron-server``): ``neutron/cmd/eventlet/__init__.py`` calls
    ``neutron/common/eventlet_utils.monkey_patch()``, whose module imported ``oslo_log`` and
    with it ``oslo_context`` first: oslo.context's ``_request_store`` is then a real
    ``threading.local`` that every green thread shares, and a record carries the context of the
    request that stored one last (measured: stacklens's finding ``request_id_reuse``).
    ``green_context``: the same ``main()`` run after ``eventlet.monkey_patch()``
    (:data:`GREEN_SERVER`), so that the store is green-thread-local and each request logs its
    own ids: what neutron logs when its patching comes first."""
    head = ([npy.python, "-c", GREEN_SERVER] if green_context
            else [str(npy.scripts / "neutron-server")])
    return sv.ProcSpec("neutron-server", [*head, *_conf_args(paths)])


def agent_name(host: str) -> str:
    """Process name of the stand-in on ``host`` (``services.service_pids`` splits it into
    service ``neutron-agent-standin`` on host ``fake-N``)."""
    return f"{AGENT_STANDIN}-{host}"


def agents(spec: LabSpec, paths: LabPaths, npy: NeutronPython) -> list[sv.ProcSpec]:
    """One agent stand-in per fake compute, run by the neutron python (it needs
    oslo.messaging only). Each logs to ``logs/fake-N/var/log/neutron/<name>.log`` and writes
    its counts to ``run/<name>.counts.json``."""
    out = []
    for i in range(1, spec.computes + 1):
        host = f"fake-{i}"
        name = agent_name(host)
        out.append(sv.ProcSpec(name, [
            npy.python, str(paths.py / "stacklens_lab_neutron_agent_standin.py"),
            "--host", host, "--tunneling-ip", f"127.0.1.{i % 250 + 1}",
            "--transport-url", f"rabbit://guest:guest@127.0.0.1:{spec.ports.amqp}/",
            "--log", str(paths.log(host, "neutron", AGENT_STANDIN)),
            "--counts", str(paths.run / f"{name}.counts.json"),
            "--report-interval", str(REPORT_INTERVAL_S),
            "--resource-versions", json.dumps(npy.resource_versions),
        ]))
    return out


def _utc(ts: str) -> float:
    return datetime.strptime(ts, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp()


def fresh_agents(base_url: str, since: float) -> set[str]:
    """Hosts whose ``Open vSwitch agent`` (stand-ins included) is alive and has reported at or
    after ``since`` (epoch s; neutron's heartbeat_timestamp is UTC, whole seconds)."""
    try:
        with urllib.request.urlopen(f"{base_url}/v2.0/agents", timeout=10) as r:
            rows = json.load(r).get("agents", [])
    except (OSError, ValueError):
        return set()
    return {a["host"] for a in rows
            if a.get("alive") and a.get("agent_type") == "Open vSwitch agent"
            and _utc(a["heartbeat_timestamp"]) >= int(since)}


def wait_agents(spec: LabSpec, paths: LabPaths, since: float) -> float:
    """Wait (bounded) until every ``fake-N`` stand-in has reported after ``since``; seconds."""
    want = {f"fake-{i}" for i in range(1, spec.computes + 1)}
    base = f"http://127.0.0.1:{spec.ports.neutron}"
    t0 = time.monotonic()
    sv.wait_until(lambda: want <= fresh_agents(base, since),
                  f"{spec.computes} neutron agent stand-ins to report state", run=paths.run,
                  watch=["neutron-server", *(agent_name(h) for h in sorted(want))],
                  timeout_s=90 + 2 * spec.computes, interval_s=1.0)
    return time.monotonic() - t0
