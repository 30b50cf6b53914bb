"""``lab up / down / status``: bring the whole control plane up in order, and down again.

Order of ``up`` (each step waits, bounded, for the previous one to be usable):

1. check dependencies and free ports, write configs (:mod:`stacklens_lab.config`);
2. MariaDB (own datadir, socket, 127.0.0.1) -> databases and one lab user;
3. epmd + RabbitMQ (own node name, mnesia, config; listener and distribution on 127.0.0.1);
4. schema: placement and glance syncs beside nova's ``api_db sync -> map_cell0 -> create_cell
   cell1 -> db sync`` (three threads: the two small syncs hide behind nova's);
5. placement-api, glance-api, the neutron stand-in, nova-api (gunicorn), then conductor and
   scheduler;
6. K nova-compute ``fake-N``; wait until all K, the conductor and the scheduler have sent a
   heartbeat *after* this ``up`` began (lab-notes: NoValidHost otherwise), then
   ``cell_v2 discover_hosts``;
7. flavor ``lab.tiny`` and image ``stacklens-lab-image``; ``lab.json`` records spec, versions
   and step timings.

Data survive ``down`` (a second ``up`` reuses them and is quicker); ``down --purge`` removes data
and logs. Any failure during ``up`` stops what it had started and says where the output is.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from stacklens.errors import LabError
from stacklens_lab import neutron as nt  # lab up --neutron (issue 13)
from stacklens_lab import services as sv
from stacklens_lab.client import Api, ensure_flavor, ensure_image, fresh_services
from stacklens_lab.config import (
    CONTROLLER,
    DATABASES,
    DB_PASSWORD,
    DB_USER,
    LabPaths,
    LabSpec,
    Ports,
    write_configs,
    write_state,
)
from stacklens_lab.deps import Binaries, check

__all__ = ["down", "read_state", "run_facts", "status", "up"]

Say = Callable[[str], None]
_TIERS = (  # stop order: clients of a tier first
    lambda n: n.startswith("nova-compute") or n in (
        "nova-scheduler", "nova-conductor", "nova-api", "glance-api", "placement-api",
        "neutron-standin") or n.startswith("neutron-"),  # --neutron: server, agent stand-ins
    lambda n: n == "rabbitmq",
    lambda n: True,
)


@contextmanager
def _step(timings: dict[str, float], name: str, say: Say):
    t0 = time.monotonic()
    say(f"lab: {name} ...")
    yield
    timings[name] = round(time.monotonic() - t0, 2)
    say(f"lab: {name} done in {timings[name]:.1f} s")


def _run(argv: list[str], paths: LabPaths, what: str, timeout_s: float = 300) -> str:
    """Run a one-shot command with output appended to ``run/setup.out``; LabError on failure."""
    log = paths.run / "setup.out"
    t0 = time.monotonic()
    # own session: on timeout the whole group goes (mariadb-install-db leaves a mariadbd)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired as e:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise LabError(f"lab: {what} timed out after {timeout_s:.0f} s") from e
    r = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    with open(log, "a") as f:
        f.write(f"$ {' '.join(argv)}\n{r.stdout}{r.stderr}# exit {r.returncode} after "
                f"{time.monotonic() - t0:.1f} s\n")
    if r.returncode != 0:
        raise LabError(f"lab: {what} failed (exit {r.returncode}); output in {log}:\n"
                       f"{sv.tail(log)}")
    return r.stdout


def _sql(bins: Binaries, paths: LabPaths, sql: str) -> None:
    _run([bins.mariadb, "--no-defaults", "-S", str(paths.db_socket), "-u", "root", "-e", sql],
         paths, "MariaDB setup")


def _mariadb(spec: LabSpec, paths: LabPaths, bins: Binaries) -> None:
    datadir = paths.data / "mariadb"
    if not (datadir / "mysql").is_dir():
        _run([bins.mariadb_install_db, "--no-defaults", f"--datadir={datadir}", "--user=root",
              "--auth-root-authentication-method=socket", "--skip-test-db"], paths,
             "mariadb-install-db")
    sv.start(sv.ProcSpec("mariadb", [
        bins.mariadbd, "--no-defaults", f"--datadir={datadir}", "--user=root",
        f"--port={spec.ports.mariadb}", "--bind-address=127.0.0.1", "--skip-name-resolve",
        f"--socket={paths.db_socket}", f"--pid-file={paths.run / 'mariadbd.pid-own'}",
        f"--log-error={paths.run / 'mariadb.err'}", "--max-connections=2000",
        # a lab: durability is not the point; without fsync a fresh schema sync is faster
        "--innodb-flush-log-at-trx-commit=2", "--innodb-flush-method=nosync",
        "--innodb-doublewrite=0",
        # statement digests for stacklens.dbstat (issue 8): the table and its consumers
        "--performance-schema=ON", "--performance-schema-consumer-statements-digest=ON",
        "--performance-schema-consumer-events-statements-current=ON",
    ]), paths.run)
    sv.wait_until(lambda: sv.port_open(spec.ports.mariadb) and paths.db_socket.exists(),
                  "MariaDB", run=paths.run, watch=["mariadb"], timeout_s=60)
    dbs = " ".join(f"CREATE DATABASE IF NOT EXISTS {d};" for d in DATABASES)
    _sql(bins, paths, f"{dbs} CREATE USER IF NOT EXISTS '{DB_USER}'@'127.0.0.1' IDENTIFIED BY "
                      f"'{DB_PASSWORD}'; GRANT ALL ON *.* TO '{DB_USER}'@'127.0.0.1';")


def _rabbitmq(spec: LabSpec, paths: LabPaths, bins: Binaries) -> None:
    p, base = spec.ports, paths.data / "rabbitmq"
    for d in ("mnesia", "home"):
        (base / d).mkdir(parents=True, exist_ok=True)
    # the management API (queue depths, rates, the firehose switch) for broker accounting
    (base / "rabbitmq.conf").write_text(
        f"listeners.tcp.default = 127.0.0.1:{p.amqp}\nloopback_users.guest = true\n"
        f"management.tcp.ip = 127.0.0.1\nmanagement.tcp.port = {p.rabbit_mgmt}\n")
    (base / "enabled_plugins").write_text("[rabbitmq_management].\n")
    # HOME holds the Erlang cookie; ERL_EPMD_* keep epmd ours and on loopback.
    env = {"HOME": str(base / "home"), "ERL_EPMD_PORT": str(p.epmd),
           "ERL_EPMD_ADDRESS": "127.0.0.1"}
    sv.start(sv.ProcSpec("epmd", [bins.epmd, "-address", "127.0.0.1", "-port", str(p.epmd)],
                         env), paths.run)
    sv.wait_until(lambda: sv.port_open(p.epmd), "epmd", run=paths.run, watch=["epmd"],
                  timeout_s=20)
    env |= {
        "RABBITMQ_NODENAME": f"stacklens-lab-{p.base}@localhost",
        "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
        "RABBITMQ_DIST_PORT": str(p.rabbit_dist),
        "RABBITMQ_MNESIA_BASE": str(base / "mnesia"),
        "RABBITMQ_LOG_BASE": str(paths.run / "rabbitmq-log"),
        "RABBITMQ_PID_FILE": str(paths.run / "rabbitmq.pid-own"),
        "RABBITMQ_CONFIG_FILE": str(base / "rabbitmq.conf"),
        "RABBITMQ_ENABLED_PLUGINS_FILE": str(base / "enabled_plugins"),
        "RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS": "-kernel inet_dist_use_interface {127,0,0,1}",
    }
    sv.start(sv.ProcSpec("rabbitmq", [bins.rabbitmq_server], env), paths.run)
    sv.wait_until(lambda: sv.port_open(p.amqp) and sv.port_open(p.rabbit_mgmt), "RabbitMQ",
                  run=paths.run, watch=["rabbitmq"], timeout_s=120)


def _schema(spec: LabSpec, paths: LabPaths, scripts: Path,
            extra: list[Callable[[], object]] | None = None) -> None:
    nova = [str(scripts / "nova-manage"), "--config-file", str(paths.etc / "nova" / "nova.conf"),
            "--config-file", str(paths.etc / "nova" / "nova-db.conf")]

    def nova_chain() -> None:
        _run([*nova, "api_db", "sync"], paths, "nova-manage api_db sync")
        _run([*nova, "cell_v2", "map_cell0"], paths, "nova-manage cell_v2 map_cell0")
        cells = _run([*nova, "cell_v2", "list_cells"], paths, "nova-manage cell_v2 list_cells")
        if " cell1 " not in cells:
            _run([*nova, "cell_v2", "create_cell", "--name", "cell1"], paths,
                 "nova-manage cell_v2 create_cell")
        _run([*nova, "db", "sync"], paths, "nova-manage db sync")

    jobs = [
        lambda: _run([str(scripts / "placement-manage"), "--config-file",
                      str(paths.etc / "placement" / "placement.conf"), "db", "sync"],
                     paths, "placement-manage db sync"),
        lambda: _run([str(scripts / "glance-manage"), "--config-file",
                      str(paths.etc / "glance" / "glance-api.conf"), "db_sync"],
                     paths, "glance-manage db_sync"),
        nova_chain,
        *(extra or []),  # --neutron: neutron-db-manage upgrade heads
    ]
    with ThreadPoolExecutor(len(jobs)) as ex:
        for f in [ex.submit(j) for j in jobs]:
            f.result()


def _gunicorn(name: str, factory: str, port: int, spec: LabSpec, paths: LabPaths,
              scripts: Path, env: dict[str, str]) -> sv.ProcSpec:
    return sv.ProcSpec(name, [
        str(scripts / "gunicorn"), "--bind", f"127.0.0.1:{port}", "--workers", str(spec.workers),
        "--timeout", "300", "--pythonpath", str(paths.py), "--name", name,
        f"stacklens_lab_runtime:{factory}()",
    ], {**env, "PYTHONPATH": str(paths.py)})


def _services(spec: LabSpec, paths: LabPaths, scripts: Path, say: Say,
              npy: nt.NeutronPython | None = None) -> None:
    p, etc = spec.ports, paths.etc
    neutron = (sv.ProcSpec("neutron-standin", [
        _own_python(), "-m", "stacklens_lab.neutron_standin", "--port", str(p.neutron),
        "--log", str(paths.log(CONTROLLER, "neutron", "neutron-standin"))]), f"{p.neutron}/")
    if npy is not None:  # --neutron: the real neutron-server on the stand-in's port
        neutron = (nt.server(paths, npy, spec.neutron_green_context),
                   f"{p.neutron}/v2.0/networks")
    nova_files = "api-paste.ini;nova.conf;nova-db.conf;nova-api.conf"
    apis = [
        (_gunicorn("placement-api", "placement_api", p.placement, spec, paths, scripts,
                   {"OS_PLACEMENT_CONFIG_DIR": str(etc / "placement")}), f"{p.placement}/"),
        (_gunicorn("glance-api", "glance_api", p.glance, spec, paths, scripts,
                   {"OS_GLANCE_CONFIG_DIR": str(etc / "glance")}), f"{p.glance}/versions"),
        neutron,
        (_gunicorn("nova-api", "nova_api", p.nova_api, spec, paths, scripts,
                   {"OS_NOVA_CONFIG_DIR": str(etc / "nova"), "OS_NOVA_CONFIG_FILES": nova_files}),
         f"{p.nova_api}/"),
    ]
    for ps, _ in apis:
        sv.start(ps, paths.run)
    for ps, url in apis:
        sv.wait_until(functools.partial(sv.http_ready, f"http://127.0.0.1:{url}"), ps.name,
                      run=paths.run, watch=[ps.name], timeout_s=180)
    conf = ["--config-file", str(etc / "nova" / "nova.conf")]
    db = ["--config-file", str(etc / "nova" / "nova-db.conf")]
    for b in ("nova-conductor", "nova-scheduler"):
        sv.start(sv.ProcSpec(b, [str(scripts / b), *conf, *db, "--log-file",
                                 str(paths.log(CONTROLLER, "nova", b))]), paths.run)
    for agent in nt.agents(spec, paths, npy) if npy is not None else []:  # --neutron
        sv.start(agent, paths.run)


def _own_python() -> str:
    return sys.executable


def _computes(spec: LabSpec, paths: LabPaths, scripts: Path, since: float, say: Say) -> None:
    conf = str(paths.etc / "nova" / "nova.conf")
    names = []
    for i in range(1, spec.computes + 1):
        name = f"nova-compute-fake-{i}"
        sv.start(sv.ProcSpec(name, [str(scripts / "nova-compute"), "--config-file", conf,
                                    "--config-file", str(paths.etc / "nova" / f"fake-{i}.conf")]),
                 paths.run)
        names.append(name)
    nova = Api(f"http://127.0.0.1:{spec.ports.nova_api}/v2.1")
    want = {f"fake-{i}" for i in range(1, spec.computes + 1)}

    def ready() -> bool:
        fresh = fresh_services(nova, since)
        return (want <= fresh.get("nova-compute", set())
                and CONTROLLER in fresh.get("nova-conductor", set())
                and CONTROLLER in fresh.get("nova-scheduler", set()))

    sv.wait_until(ready, f"{spec.computes} computes, conductor and scheduler to report",
                  run=paths.run, watch=[*names, "nova-conductor", "nova-scheduler"],
                  timeout_s=120 + 5 * spec.computes, interval_s=1.0)
    _run([str(scripts / "nova-manage"), "--config-file", conf, "--config-file",
          str(paths.etc / "nova" / "nova-db.conf"), "cell_v2", "discover_hosts"],
         paths, "nova-manage cell_v2 discover_hosts")


def up(spec: LabSpec, say: Say = lambda s: None) -> dict:
    """Bring the lab up; return the state written to ``lab.json``. LabError on any problem,
    after stopping whatever this call had started."""
    paths = LabPaths(spec.root)
    running = [s for s in status(spec.root)["processes"] if s["alive"]]
    if running:
        raise LabError(f"lab: already running in {spec.root} ({len(running)} processes); "
                       f"run `stacklens lab down --dir {spec.root}` first")
    t_all, since = time.monotonic(), time.time()
    vers, bins = check(spec.python)
    busy = {n: port for n, port in spec.ports.all().items() if sv.port_open(port)}
    if busy:
        raise LabError("lab: ports already in use on 127.0.0.1: "
                       + ", ".join(f"{port} ({n})" for n, port in busy.items())
                       + "; stop what holds them or pass another --port-base")
    eph = spec.ports.in_ephemeral_range()
    if eph:
        say("lab: warning: ports " + ", ".join(f"{port} ({n})" for n, port in eph.items())
            + " are in the kernel's ephemeral range (net.ipv4.ip_local_port_range); an outgoing "
            "connection may take one first and a service then fails to bind. Pick a --port-base "
            "below the range (default 28700).")
    scripts = Path(vers.scripts)
    timings: dict[str, float] = {}
    # --neutron: probe the neutron python before anything starts
    npy = nt.probe(spec.neutron_python) if spec.neutron_python else None
    write_configs(spec, paths)
    if npy is not None:
        nt.write_configs(spec, paths, npy)
    try:
        with _step(timings, "mariadb", say):
            _mariadb(spec, paths, bins)
            if npy is not None:  # --neutron
                _sql(bins, paths, f"CREATE DATABASE IF NOT EXISTS {nt.NEUTRON_DB};")
        with _step(timings, "rabbitmq", say):
            _rabbitmq(spec, paths, bins)
        with _step(timings, "schema", say):
            _schema(spec, paths, scripts,
                    [nt.schema_job(paths, npy, _run)] if npy is not None else None)
        with _step(timings, "services", say):
            _services(spec, paths, scripts, say, npy)
        with _step(timings, "computes", say):
            _computes(spec, paths, scripts, since, say)
        if npy is not None:  # --neutron: every agent stand-in has reported state
            with _step(timings, "neutron_agents", say):
                nt.wait_agents(spec, paths, since)
        with _step(timings, "flavor_image", say):
            flavor = ensure_flavor(Api(f"http://127.0.0.1:{spec.ports.nova_api}/v2.1"))
            image = ensure_image(Api(f"http://127.0.0.1:{spec.ports.glance}", microversion=None))
    except BaseException:
        say("lab: up failed, stopping what it started")
        down(spec.root)
        raise
    timings["total"] = round(time.monotonic() - t_all, 2)
    state = {"spec": spec.to_json(), "versions": vers.versions, "python_version": vers.python,
             "timings_s": timings, "started_at": since, "flavor": flavor, "image": image,
             "clouds_yaml": str(paths.clouds), "logs": str(paths.logs)}
    if npy is not None:  # --neutron
        state["neutron"] = {"python": npy.python, "versions": npy.versions,
                            "agents": "stand-in"}
    write_state(paths, state)
    return state


def read_state(root: Path) -> dict | None:
    """``lab.json`` of the last successful ``up``, or None."""
    try:
        return json.loads(LabPaths(root).state.read_text())
    except (OSError, ValueError):
        return None


def run_facts(root: Path) -> dict | None:
    """What a load run against the lab at ``root`` records about it (``stacklens run``), or
    None when no ``up`` succeeded there: ``{"config_root": Path (etc/), "config_files": [Path]
    (every file under etc/, sorted), "service_versions": {distribution: version} (the lab
    python's, as ``up`` probed them, plus ``python``), "hosts": ["controller", "fake-1", ...],
    "lab": {"computes", "workers", "scheduler_spread", "max_concurrent_builds"}}``. Reads files
    only; secrets in the files are the reader's to redact."""
    state = read_state(root)
    if state is None:
        return None
    paths = LabPaths(root)
    spec = state.get("spec") or {}
    files = sorted(p for p in paths.etc.rglob("*") if p.is_file()) if paths.etc.is_dir() else []
    versions = {str(k): str(v) for k, v in (state.get("versions") or {}).items()}
    if state.get("python_version"):
        versions["python"] = str(state["python_version"])
    computes = int(spec.get("computes") or 0)
    return {"config_root": paths.etc, "config_files": files, "service_versions": versions,
            "hosts": [CONTROLLER] + [f"fake-{i}" for i in range(1, computes + 1)],
            "lab": {k: spec.get(k) for k in ("computes", "workers", "scheduler_spread",
                                              "max_concurrent_builds")}}


def capture_targets(root: Path) -> dict | None:
    """Where the lab at ``root`` can be observed during a run (``stacklens run`` recorders), or
    None when no ``up`` succeeded there: ``{"rabbit_mgmt_url": str, "amqp_port": int,
    "db": {"host", "port", "user", "password"}, "pids": {pid: (service, host)}}`` (live
    processes only, :func:`stacklens_lab.services.service_pids`)."""
    state = read_state(root)
    if state is None:
        return None
    ports = Ports(**((state.get("spec") or {}).get("ports") or {}))
    return {"rabbit_mgmt_url": f"http://127.0.0.1:{ports.rabbit_mgmt}", "amqp_port": ports.amqp,
            "db": {"host": "127.0.0.1", "port": ports.mariadb, "user": DB_USER,
                   "password": DB_PASSWORD},
            "pids": sv.service_pids(LabPaths(root).run)}


def status(root: Path) -> dict:
    """``{"root", "state", "processes": [ProcStatus as dict, ...]}``."""
    run = LabPaths(root).run
    procs = [sv.process_status(run, n).__dict__ for n in sv.names(run)]
    return {"root": str(root), "state": read_state(root), "processes": procs}


def down(root: Path, purge: bool = False, timeout_s: float = 30.0) -> list[str]:
    """Stop every process this lab started (PID files only), clients first; with ``purge``
    also remove data, logs and configs. Returns the names that were running."""
    paths = LabPaths(root)
    stopped: list[str] = []
    left = sv.names(paths.run)
    for tier in _TIERS:
        now = [n for n in left if tier(n)]
        left = [n for n in left if n not in now]
        with ThreadPoolExecutor(max(1, min(16, len(now)))) as ex:
            for n, was in zip(now, ex.map(lambda n: sv.stop(paths.run, n, timeout_s), now),
                              strict=True):
                if was:
                    stopped.append(n)
    if purge:
        for d in (paths.data, paths.logs, paths.etc, paths.py, paths.run):
            shutil.rmtree(d, ignore_errors=True)
        for f in (paths.state, paths.clouds):
            f.unlink(missing_ok=True)
    return stopped
