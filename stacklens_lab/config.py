"""The lab's shape (:class:`LabSpec`) and the files it writes under the lab folder.

Layout of a lab folder::

    lab.json                  spec, versions and timings of the last ``up`` (read by down/status)
    clouds.yaml               openstacksdk entry ``stacklens-lab``
    etc/nova/                 api-paste.ini, nova.conf, nova-db.conf, nova-api.conf, fake-N.conf
    etc/placement/placement.conf
    etc/glance/               glance-api.conf, glance-api-paste.ini
    py/stacklens_lab_runtime.py   WSGI entry points and the token paste filter (lab python)
    logs/<host>/var/log/<project>/<service>.log   oslo.log files, DEBUG on
    data/                     MariaDB datadir, RabbitMQ mnesia, nova state, glance file store
    run/                      PID files, stdout/stderr of every process, sockets

Logs use the collected multi-host layout (``<host>/var/log/...``) so that ``stacklens analyze
<lab>/logs`` sees ``controller`` and each ``fake-N`` compute as its own host. Every non-obvious
setting below cites the fact in ``shared/docs/lab-notes.md`` that makes it necessary.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

from stacklens_lab.paste import GLANCE_PASTE, NOVA_PASTE

__all__ = [
    "LAB_CLOUD",
    "LabCloud",
    "LabPaths",
    "LabSpec",
    "Ports",
    "default_lab_dir",
    "lab_cloud",
    "write_configs",
    "write_state",
]

#: The clouds.yaml entry ``stacklens lab up`` writes.
LAB_CLOUD = "stacklens-lab"

DB_USER, DB_PASSWORD = "stacklens", "lab"
DATABASES = ("nova_api", "nova", "nova_cell0", "placement", "glance")
CONTROLLER = "controller"


def default_lab_dir() -> Path:
    """``$STACKLENS_LAB_DIR`` or ``~/.local/share/stacklens/lab``."""
    env = os.environ.get("STACKLENS_LAB_DIR")
    return Path(env) if env else Path.home() / ".local" / "share" / "stacklens" / "lab"


@dataclass(frozen=True)
class LabCloud:
    """Where a lab that ``stacklens lab up`` wrote keeps what a load run needs: its
    ``clouds.yaml`` (entry :data:`LAB_CLOUD`) and its log folder; each None when absent."""

    clouds_yaml: Path | None
    logs: Path | None


def lab_cloud(root: Path | None = None) -> LabCloud:
    """The lab at ``root`` (default :func:`default_lab_dir`): its clouds.yaml and log folder,
    each None when the lab has not written it. Reads the file system only; never raises."""
    paths = LabPaths(root or default_lab_dir())
    return LabCloud(paths.clouds if paths.clouds.is_file() else None,
                    paths.logs if paths.logs.is_dir() else None)


EPHEMERAL_RANGE_FILE = Path("/proc/sys/net/ipv4/ip_local_port_range")


@dataclass(frozen=True)
class Ports:
    """Loopback ports, offsets from one base so that two labs can run side by side."""

    base: int = 28700

    @property
    def mariadb(self) -> int:
        return self.base + 6

    @property
    def epmd(self) -> int:
        return self.base + 69

    @property
    def rabbit_mgmt(self) -> int:  # broker accounting (issue 8): management API and firehose
        return self.base + 71

    @property
    def amqp(self) -> int:
        return self.base + 72

    @property
    def rabbit_dist(self) -> int:
        return self.base + 73

    @property
    def nova_api(self) -> int:
        return self.base + 74

    @property
    def placement(self) -> int:
        return self.base + 78

    @property
    def glance(self) -> int:
        return self.base + 92

    @property
    def neutron(self) -> int:
        return self.base + 96

    def all(self) -> dict[str, int]:
        """Every port by name (for the free-port check and ``lab status``)."""
        names = ("mariadb", "epmd", "rabbit_mgmt", "amqp", "rabbit_dist", "nova_api", "placement", "glance",
                 "neutron")
        return {n: getattr(self, n) for n in names}

    def in_ephemeral_range(self, range_file: Path = EPHEMERAL_RANGE_FILE) -> dict[str, int]:
        """The ports (by name) inside the kernel's ephemeral range (Linux
        ``net.ipv4.ip_local_port_range``, default 32768-60999). Any outgoing connection on the
        machine may take such a port as its local port, and a listener then fails to bind with
        EADDRINUSE at a random moment. Empty when the range file cannot be read."""
        try:
            lo, hi = (int(x) for x in range_file.read_text().split()[:2])
        except (OSError, ValueError):
            return {}
        return {n: port for n, port in self.all().items() if lo <= port <= hi}


@dataclass(frozen=True)
class LabSpec:
    """What ``stacklens lab up`` builds. The scheduler knobs are the scenario's to set: the
    defaults keep nova's own behaviour observable unless ``scheduler_spread`` is asked for."""

    root: Path
    python: str  # interpreter that has nova, placement, glance installed
    computes: int = 3
    workers: int = 2  # nova-api, placement, glance (gunicorn), conductor, scheduler
    scheduler_spread: bool = False
    max_concurrent_builds: int = 10  # nova's default
    ports: Ports = field(default_factory=Ports)
    # --neutron (issue 13): interpreter with neutron 26.x; "" = the loopback stand-in
    neutron_python: str = ""
    # --neutron-green-context: neutron-server with oslo.context's store green-local
    neutron_green_context: bool = False

    def to_json(self) -> dict:
        """A JSON-safe dict (``lab.json``)."""
        d = asdict(self)
        d["root"] = str(self.root)
        return d

    @classmethod
    def from_json(cls, d: dict) -> LabSpec:
        """Inverse of :meth:`to_json`."""
        d = dict(d)
        d["root"] = Path(d["root"])
        d["ports"] = Ports(**d["ports"])
        return cls(**d)


@dataclass(frozen=True)
class LabPaths:
    """Every path of one lab folder (see the module docstring)."""

    root: Path

    @property
    def etc(self) -> Path:
        return self.root / "etc"

    @property
    def py(self) -> Path:
        return self.root / "py"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def run(self) -> Path:
        return self.root / "run"

    @property
    def state(self) -> Path:
        return self.root / "lab.json"

    @property
    def clouds(self) -> Path:
        return self.root / "clouds.yaml"

    @property
    def db_socket(self) -> Path:
        return self.run / "mariadb.sock"

    def log(self, host: str, project: str, service: str) -> Path:
        """``logs/<host>/var/log/<project>/<service>.log``, folder created."""
        p = self.logs / host / "var" / "log" / project / f"{service}.log"
        p.parent.mkdir(parents=True, exist_ok=True)
        return p


def _ini(sections: Mapping[str, Mapping[str, object]]) -> str:
    out = []
    for name, opts in sections.items():
        out.append(f"[{name}]")
        out += [f"{k} = {v}" for k, v in opts.items()]
        out.append("")
    return "\n".join(out)


def _db_url(spec: LabSpec, db: str) -> str:
    return (f"mysql+pymysql://{DB_USER}:{DB_PASSWORD}@127.0.0.1:{spec.ports.mariadb}/{db}"
            "?charset=utf8")


def _pool(spec: LabSpec) -> dict[str, object]:
    # lab-notes: with 64 computes the scheduler hit "QueuePool limit of size 10 overflow 20
    # reached"; the pools grow with the compute count.
    return {"max_pool_size": max(10, spec.computes), "max_overflow": max(20, 2 * spec.computes)}


# oslo.log's default_log_levels with oslo.messaging raised from INFO to DEBUG: ``debug = True``
# alone does not log the amqpdriver lines (``CALL msg_id: ...``, ``received reply msg_id``) that
# link RPC calls across services in a trace.
LOG_LEVELS = ",".join([
    "amqp=WARN", "amqplib=WARN", "boto=WARN", "qpid=WARN", "sqlalchemy=WARN", "suds=INFO",
    "oslo.messaging=DEBUG", "oslo_messaging=DEBUG", "iso8601=WARN",
    "requests.packages.urllib3.connectionpool=WARN", "urllib3.connectionpool=WARN",
    "websocket=WARN", "requests.packages.urllib3.util.retry=WARN", "urllib3.util.retry=WARN",
    "keystonemiddleware=WARN", "routes.middleware=WARN", "stevedore=WARN", "taskflow=WARN",
    "keystoneauth=WARN", "oslo.cache=INFO", "oslo_policy=INFO", "dogpile.core.dogpile=INFO",
    "glanceclient=WARN", "oslo.privsep.daemon=INFO",
])
_POLICY = {"enforce_new_defaults": "false", "enforce_scope": "false"}  # lab-notes: 2025.1 RBAC


def nova_conf(spec: LabSpec, paths: LabPaths) -> str:
    """nova.conf shared by every nova process, computes included: no database settings here
    (lab-notes: "No DB access allowed in nova-compute")."""
    p = spec.ports
    admin_token = {"auth_type": "admin_token", "token": "admin"}
    sched: dict[str, object] = {}
    if spec.scheduler_spread:
        # lab-notes: under a burst identical weights pile most servers onto one host; these two
        # spread them. Off by default so that the stale-view effect stays observable.
        sched = {"shuffle_best_same_weighed_hosts": "true", "host_subset_size": spec.computes}
    return _ini({
        "DEFAULT": {
            "debug": "True",  # lab-notes: RPC msg ids and lock waits are DEBUG lines
            "default_log_levels": LOG_LEVELS,
            "transport_url": f"rabbit://guest:guest@127.0.0.1:{p.amqp}/",
            # lab-notes: plain FakeDriver makes a random node uuid and refuses to restart
            "compute_driver": "fake.FakeDriverWithoutFakeNodes",
            "host": CONTROLLER,
            "my_ip": "127.0.0.1",
            "state_path": paths.data / "nova",
            "heal_instance_info_cache_interval": -1,  # lab-notes: no neutron to poll
            "max_concurrent_builds": spec.max_concurrent_builds,
            "use_rootwrap_daemon": "false",
        },
        "api": {"auth_strategy": "noauth2"},  # lab-notes: token "user:project"
        "oslo_policy": _POLICY,
        "oslo_messaging_notifications": {"driver": "noop"},
        "oslo_concurrency": {"lock_path": paths.data / "nova" / "locks"},
        # lab-notes: keystone-less service clients
        "placement": {**admin_token, "endpoint_override": f"http://127.0.0.1:{p.placement}"},
        "neutron": {**admin_token, "endpoint_override": f"http://127.0.0.1:{p.neutron}"},
        "glance": {"endpoint_override": f"http://127.0.0.1:{p.glance}"},
        "quota": {k: -1 for k in ("instances", "cores", "ram", "metadata_items",
                                  "key_pairs", "server_groups", "server_group_members")},
        "scheduler": {"workers": spec.workers, "discover_hosts_in_cells_interval": -1},
        "filter_scheduler": sched,
        "conductor": {"workers": spec.workers},
        "vnc": {"enabled": "false"},
        "spice": {"enabled": "false"},
        "serial_console": {"enabled": "false"},
    })


def nova_db_conf(spec: LabSpec) -> str:
    """Database settings, read only by nova-api, conductor, scheduler and nova-manage."""
    return _ini({
        "database": {"connection": _db_url(spec, "nova"), **_pool(spec)},
        "api_database": {"connection": _db_url(spec, "nova_api"), **_pool(spec)},
    })


def glance_conf(spec: LabSpec, paths: LabPaths) -> str:
    """glance-api.conf: file store, no keystone, DEBUG logs."""
    g = paths.data / "glance"
    return _ini({
        "DEFAULT": {
            "debug": "True",
            "log_file": paths.log(CONTROLLER, "glance", "glance-api"),
            "enabled_backends": "fs:file",
            # lab-notes: required by glance 30 under a WSGI server
            "worker_self_reference_url": f"http://127.0.0.1:{spec.ports.glance}",
        },
        "database": {"connection": _db_url(spec, "glance"), **_pool(spec)},
        "glance_store": {"default_backend": "fs"},
        "fs": {"filesystem_store_datadir": g / "images"},
        "os_glance_staging_store": {"filesystem_store_datadir": g / "staging"},
        "os_glance_tasks_store": {"filesystem_store_datadir": g / "tasks"},
        "paste_deploy": {"flavor": "", "config_file": paths.etc / "glance" / "glance-api-paste.ini"},
        "oslo_policy": _POLICY,
        "oslo_concurrency": {"lock_path": g / "locks"},
    })


def placement_conf(spec: LabSpec, paths: LabPaths) -> str:
    """placement.conf: noauth2 (token ``admin`` gives the admin role), MariaDB, DEBUG logs."""
    return _ini({
        "DEFAULT": {"debug": "True",
                    "log_file": paths.log(CONTROLLER, "placement", "placement-api")},
        "api": {"auth_strategy": "noauth2"},
        "placement_database": {"connection": _db_url(spec, "placement"), **_pool(spec)},
        "oslo_policy": _POLICY,
    })


def clouds_yaml(spec: LabSpec) -> str:
    """openstacksdk entry ``stacklens-lab``. lab-notes: openstacksdk sent ``X-Auth-Token: None``
    until the entry carried a top-level ``auth_token``."""
    p = spec.ports
    return f"""\
# written by `stacklens lab up`; export OS_CLIENT_CONFIG_FILE={spec.root / 'clouds.yaml'}
clouds:
  stacklens-lab:
    auth_type: admin_token
    auth:
      endpoint: http://127.0.0.1:{p.nova_api}/v2.1
      token: admin:admin
    auth_token: admin:admin
    region_name: RegionOne
    compute_endpoint_override: http://127.0.0.1:{p.nova_api}/v2.1
    image_endpoint_override: http://127.0.0.1:{p.glance}
    placement_endpoint_override: http://127.0.0.1:{p.placement}
    network_endpoint_override: http://127.0.0.1:{p.neutron}   # {_NET[bool(spec.neutron_python)]}
"""


_NET = ("the loopback neutron stand-in", "neutron-server (lab up --neutron)")


def write_configs(spec: LabSpec, paths: LabPaths) -> None:
    """Write every config file, the runtime module and ``clouds.yaml`` (idempotent)."""
    for d in (paths.etc / "nova", paths.etc / "placement", paths.etc / "glance", paths.py,
              paths.run, paths.data / "nova" / "locks", paths.data / "glance"):
        d.mkdir(parents=True, exist_ok=True)
    for sub in ("images", "staging", "tasks", "locks"):
        (paths.data / "glance" / sub).mkdir(parents=True, exist_ok=True)
    nova = paths.etc / "nova"
    (nova / "api-paste.ini").write_text(NOVA_PASTE)
    (nova / "nova.conf").write_text(nova_conf(spec, paths))
    (nova / "nova-db.conf").write_text(nova_db_conf(spec))
    api_log = paths.log(CONTROLLER, "nova", "nova-api")
    (nova / "nova-api.conf").write_text(_ini({"DEFAULT": {"log_file": api_log}}))
    for i in range(1, spec.computes + 1):
        host = f"fake-{i}"
        (nova / f"{host}.conf").write_text(_ini({"DEFAULT": {
            "host": host,
            "state_path": paths.data / "nova" / host,
            "log_file": paths.log(host, "nova", "nova-compute"),
        }}))
        (paths.data / "nova" / host).mkdir(parents=True, exist_ok=True)
    (paths.etc / "placement" / "placement.conf").write_text(placement_conf(spec, paths))
    (paths.etc / "glance" / "glance-api.conf").write_text(glance_conf(spec, paths))
    (paths.etc / "glance" / "glance-api-paste.ini").write_text(
        GLANCE_PASTE.format(disable=paths.run / "glance-healthcheck-disable"))
    shutil.copyfile(Path(__file__).with_name("runtime.py"), paths.py / "stacklens_lab_runtime.py")
    paths.clouds.write_text(clouds_yaml(spec))


def write_state(paths: LabPaths, state: dict) -> None:
    """Write ``lab.json`` atomically."""
    tmp = paths.state.with_suffix(".tmp")
    tmp.write_text(json.dumps(state, indent=2, default=str) + "\n")
    tmp.replace(paths.state)
