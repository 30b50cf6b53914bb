#!/usr/bin/env python3
"""stacklens's load driver versus Rally, same boot workload, same lab, same run (a benchmark,
not a test: it asserts nothing).

What it does
------------
1. Waits (bounded) until the 1-minute load average is below ``--max-load``; brings up its own
   ``stacklens lab`` (``--computes`` fake computes, own ``--dir`` and ``--port-base``).
2. Makes Rally talk to the lab. The lab has no keystone (nova ``noauth2``), and rally-openstack
   authenticates only through keystone (``keystoneauth1`` password plugin, then the service
   catalog: no token or endpoint override exists in its ``existing`` platform; its spec's
   ``endpoint`` key is "deprecated and not used"). So this script starts a **keystone
   stand-in** (not keystone: ``bench/keystone_standin.py``, loopback
   only): it answers version discovery and ``POST /v3/auth/tokens`` with the noauth2 token
   ``admin:admin`` as ``X-Subject-Token``, user and project ``admin`` with role ``admin``, and a
   catalog pointing at the lab's nova, glance, placement and neutron stand-in. Rally's env is an
   ``existing@openstack`` spec with that stand-in as ``auth_url``, one existing user
   (``admin``/``admin``, so Rally creates no users) and ``api_info.nova.version = 2.37``.
3. Boots the same workload with each tool, one after the other (``--order``): ``--servers``
   servers (default 50), ``--concurrency`` at once (default 50), each deleted as soon as it is
   ACTIVE; microversion 2.37, ``networks: none``, flavor ``lab.tiny``, image
   ``stacklens-lab-image``; ACTIVE within 900 s, gone within 600 s. stacklens:
   ``stacklens run SCENARIO --endpoint ... --token admin:admin`` (burst ramp, one list call
   per 2 s for all servers). Rally: ``rally task start`` with ``NovaServers.boot_and_delete_server``
   (runner ``constant``, ``times`` = servers, ``concurrency``), Rally's default polling (each
   server polled with its own GET every 2 s after a 1 s / 2 s pre-poll sleep). Before the
   measured runs each tool runs the same workload with ``--baseline-servers`` (default 1)
   servers: it warms the lab and gives each tool's fixed cost (start-up, plugin loading,
   validation, look-ups, writing results).
4. Reads each tool's own records: stacklens ``tables/requests.parquet`` and ``manifest.json``;
   Rally ``task report --json`` read with :func:`stacklens.drive.rally.read_rally` (and its
   iteration timestamps for concurrency). Counts the calls nova-api logged during each run
   (its request log, by byte offsets of ``nova-api.log``: the lab serves nobody else).
5. Always brings the lab down (``lab down --purge``; ``--keep`` keeps the work folder and the
   lab's logs) and stops the stand-in, then prints one JSON object.

The one change to stock Rally
-----------------------------
``NovaServers.boot_and_delete_server`` cannot send ``"networks": "none"``: its
``_boot_server`` iterates ``nics`` as a list of dicts (``for nic in kwargs.get("nics", [])``
-> ``'str' object has no attribute 'get'`` for the string ``"none"``), and without ``nics``
novaclient refuses microversion >= 2.37 ("nics are required after microversion 2.36") while
older microversions make nova check neutron's port quota (``GET /v2.0/quotas/<project>``),
which the lab's neutron stand-in does not serve (HTTP 500 from nova-api). The script therefore
loads a 10-line Rally plugin (``--plugin-paths``) that passes a string ``nics`` through as a
``str`` subclass whose iteration is empty; novaclient then sends ``"networks": "none"``. The
scenario, runner, contexts, polling and results are Rally's own.

The numbers (all in the JSON, per tool under ``stacklens`` / ``rally``, ratios rally/stacklens
under ``ratios``)
-------------------------------------------------------------------------------------------
* ``cpu_s``: user + sys CPU seconds of the tool's process, from ``os.wait4`` (its rusage
  includes the children it reaped: Rally's runner worker processes), start-up included;
  ``cpu_ms_per_request``: that over the servers.
* ``client_overhead``: what one more request costs the client. ``marginal_cpu_ms_per_request``
  = (cpu of the measured run - cpu of the baseline run) / (servers - baseline servers), the
  fixed cost taken out; ``nova_api_calls_per_request``: calls nova-api logged during the run
  per server (create, polls, delete, look-ups), with the breakdown by method and path.
* ``concurrency``: ``peak_in_flight`` as the tool says it (stacklens: the manifest's
  ``stats.peak_in_flight``; Rally: the largest number of iterations overlapping in time, from
  each iteration's ``timestamp`` to ``timestamp + duration + idle_duration``), the same sweep
  over both tools' records (submit to gone), and ``submit_spread_s`` (first to last create sent).
* ``e2e``: p50 / p95 / max of boot-to-ACTIVE (``create_s``: create sent to ACTIVE seen, polling
  delay included) and delete (``delete_s``: delete sent to gone seen), successful servers only;
  from each tool's own records.
* ``wall_s``, ``peak_rss_mb`` (``ru_maxrss`` of the process tree), exit code, outcomes.
* ``machine``: cores, load average before each run; a load above the cores means the numbers
  shared the machine with something else.

Bounded everywhere: every child has a deadline (killed with its process group after it), the
load wait has a limit, the stand-in stops itself after ``--max-s``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

NOAUTH_TOKEN = "admin:admin"
FLAVOR, IMAGE = "lab.tiny", "stacklens-lab-image"
MICROVERSION = "2.37"
ACTIVE_TIMEOUT_S, DELETE_TIMEOUT_S = 900, 600


def _say(msg: str) -> None:
    print(f"[drive_vs_rally {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# children with deadlines, CPU from wait4
# ---------------------------------------------------------------------------------------------

def run_child(argv: list[str], log_prefix: Path, timeout_s: float,
              env: dict[str, str] | None = None, cwd: str | None = None) -> dict[str, Any]:
    """Run ``argv`` to completion (or its deadline); rusage from ``os.wait4`` of this child."""
    t0 = time.perf_counter()
    with open(f"{log_prefix}.out", "wb") as out, open(f"{log_prefix}.err", "wb") as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err, env=env, cwd=cwd,
                             start_new_session=True, stdin=subprocess.DEVNULL)
    deadline, timed_out = time.monotonic() + timeout_s, False
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            timed_out = True
            for sig, grace in ((signal.SIGTERM, 20.0), (signal.SIGKILL, 10.0)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    pass
                end = time.monotonic() + grace
                while time.monotonic() < end:
                    pid, status, ru = os.wait4(p.pid, os.WNOHANG)
                    if pid:
                        break
                    time.sleep(0.2)
                if pid:
                    break
            if not pid:
                pid, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.2)
    p.returncode = os.waitstatus_to_exitcode(status)  # reaped here; keep Popen from waiting
    return {"argv": argv, "rc": p.returncode, "timed_out": timed_out,
            "wall_s": round(time.perf_counter() - t0, 3),
            "cpu_user_s": round(ru.ru_utime, 3), "cpu_sys_s": round(ru.ru_stime, 3),
            "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
            "peak_rss_mb": round(ru.ru_maxrss / 1024, 1),
            "stdout": f"{log_prefix}.out", "stderr": f"{log_prefix}.err"}


def _tail(path: str | Path, n: int = 15) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def wait_for_load(max_load: float, max_wait_s: float) -> dict[str, Any]:
    t0 = time.monotonic()
    load = os.getloadavg()[0]
    announced = False
    while load >= max_load and time.monotonic() - t0 < max_wait_s:
        if not announced:
            _say(f"load average {load:.2f} >= {max_load}; waiting (at most {max_wait_s:.0f} s)")
            announced = True
        time.sleep(10)
        load = os.getloadavg()[0]
    return {"loadavg_1m": round(load, 2), "below_max": load < max_load,
            "waited_s": round(time.monotonic() - t0, 1)}


# ---------------------------------------------------------------------------------------------
# numbers from records
# ---------------------------------------------------------------------------------------------

def _pcts(vals: list[float]) -> dict[str, float | None]:
    from stacklens.drive.sla import percentile

    return {k: (round(v, 3) if (v := percentile(vals, q)) is not None else None)
            for k, q in (("p50", 0.5), ("p95", 0.95), ("max", 1.0))} | {"n": len(vals)}


def _peak_overlap(intervals: list[tuple[float, float]]) -> int:
    ev = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals],
                key=lambda e: (e[0], e[1]))  # an end before a start at the same instant
    cur = peak = 0
    for _, d in ev:
        cur += d
        peak = max(peak, cur)
    return peak


def records_numbers(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """e2e percentiles, outcomes, peak in flight and submit spread from record dicts
    (the fields of RequestRecord: outcome, submit_ns, active_ns, delete_ns, gone_ns)."""
    ok = [r for r in rows if r.get("outcome") == "ok"]

    def dur(r: dict, a: str, b: str) -> float | None:
        return (r[b] - r[a]) / 1e9 if r.get(a) is not None and r.get(b) is not None else None

    intervals = []
    for r in rows:
        ends = [r.get(k) for k in ("gone_ns", "delete_ns", "active_ns") if r.get(k) is not None]
        if r.get("submit_ns") is not None and ends:
            intervals.append((r["submit_ns"] / 1e9, max(ends) / 1e9))
    submits = sorted(r["submit_ns"] for r in rows if r.get("submit_ns") is not None)
    return {
        "records": len(rows),
        "outcomes": dict(Counter(r.get("outcome") or "pending" for r in rows)),
        "create_s": _pcts([d for r in ok if (d := dur(r, "submit_ns", "active_ns")) is not None]),
        "delete_s": _pcts([d for r in ok if (d := dur(r, "delete_ns", "gone_ns")) is not None]),
        "peak_in_flight_from_records": _peak_overlap(intervals),
        "submit_spread_s": round((submits[-1] - submits[0]) / 1e9, 3) if submits else None,
    }


_REQLOG = re.compile(r'nova\.api\.openstack\.requestlog .*?"(\w+) (\S+)" status: (\d+)'
                     r'.*? time: ([\d.]+)')
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def nova_api_calls(log: Path, start: int, end: int) -> dict[str, Any]:
    """Calls nova-api logged between two byte offsets of its log, by method and path template."""
    try:
        with open(log, "rb") as f:
            f.seek(start)
            text = f.read(max(0, end - start)).decode("utf-8", "replace")
    except OSError as e:
        return {"error": str(e)}
    by: Counter[str] = Counter()
    status: Counter[str] = Counter()
    server_s = 0.0
    for m in _REQLOG.finditer(text):
        path = _UUID.sub("{id}", m.group(2).split("?")[0])
        path = re.sub(r"/flavors/[^/]+", "/flavors/{id}", path)
        by[f"{m.group(1)} {path}"] += 1
        status[m.group(3)] += 1
        server_s += float(m.group(4))
    return {"total": sum(by.values()), "by_call": dict(by.most_common()),
            "by_status": dict(status), "nova_api_time_s": round(server_s, 3)}


def _offset(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


# ---------------------------------------------------------------------------------------------
# the two tools
# ---------------------------------------------------------------------------------------------

SCENARIO = """\
# written by bench/drive_vs_rally.py: Rally's boot_and_delete_server, stacklens's way
name: drive-vs-rally
workload:
  boot_servers:
    count: {servers}
    flavor: {flavor}
    image: {image}
    network: none
    mode: parallel
    concurrency: {concurrency}
    ramp: {{shape: burst}}
    repetitions: 1
    phases:
      active: {{timeout_s: {active_timeout}}}
      ping: {{enabled: false}}
      ssh: {{enabled: false}}
      delete: {{enabled: true, when: each, timeout_s: {delete_timeout}}}
client: {{poll_interval_s: 2, request_timeout_s: 300, max_connections: 100, microversion: "{mv}"}}
cleanup: delete
logs: []
"""

RALLY_NICS_PLUGIN = '''\
"""Written by stacklens bench/drive_vs_rally.py. Lets NovaServers.boot_and_delete_server pass
nics="none" (microversion >= 2.37): Rally's _boot_server iterates nics as a list of dicts,
so the string is handed on as a str whose iteration is empty; novaclient sends it as is."""
from rally_openstack.task.scenarios.nova import utils as _nova_utils


class _NetworksEnum(str):
    def __iter__(self):
        return iter(())


_orig_boot_server = _nova_utils.NovaScenario._boot_server


def _boot_server(self, image, flavor, auto_assign_nic=False, **kwargs):
    if isinstance(kwargs.get("nics"), str):
        kwargs["nics"] = _NetworksEnum(kwargs["nics"])
    return _orig_boot_server(self, image, flavor, auto_assign_nic=auto_assign_nic, **kwargs)


_nova_utils.NovaScenario._boot_server = _boot_server
'''


class Rally:
    """A Rally install (own venv), its DB, env and plugin dir under ``work``."""

    def __init__(self, venv: Path, work: Path, keystone_url: str, timeout_s: float):
        self.bin = venv / "bin" / "rally"
        self.work = work
        self.timeout_s = timeout_s
        self.home = work / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        (work / "plugins").mkdir(exist_ok=True)
        (work / "plugins" / "stacklens_bench_nics_none.py").write_text(RALLY_NICS_PLUGIN)
        (work / "rally.conf").write_text(
            f"[database]\nconnection = sqlite:///{work / 'rally.sqlite'}\n"
            f"[openstack]\nnova_server_boot_timeout = {ACTIVE_TIMEOUT_S}\n"
            f"nova_server_delete_timeout = {DELETE_TIMEOUT_S}\n")
        (work / "spec.json").write_text(json.dumps({"existing@openstack": {
            "auth_url": f"{keystone_url}/v3", "region_name": "RegionOne",
            "users": [{"username": "admin", "password": "admin", "project_name": "admin",
                       "user_domain_name": "Default", "project_domain_name": "Default"}],
            "api_info": {"keystone": {"version": 3}, "nova": {"version": MICROVERSION}},
        }}, indent=2))
        self.env = {**os.environ, "HOME": str(self.home)}
        self.env.pop("OS_CLOUD", None)

    def argv(self, *args: str) -> list[str]:
        return [str(self.bin), "--config-file", str(self.work / "rally.conf"),
                "--plugin-paths", str(self.work / "plugins"), *args]

    def call(self, name: str, *args: str, timeout_s: float = 180) -> dict[str, Any]:
        r = run_child(self.argv(*args), self.work / name, timeout_s, env=self.env)
        if r["rc"] != 0:
            raise RuntimeError(f"rally {' '.join(args)}: exit {r['rc']}"
                               f"{' (timed out)' if r['timed_out'] else ''}:\n"
                               f"{_tail(r['stdout'])}\n{_tail(r['stderr'])}")
        return r

    def setup(self) -> dict[str, Any]:
        self.call("db-create", "db", "create")
        self.call("env-create", "env", "create", "--name", "stacklens-lab", "--spec",
                  str(self.work / "spec.json"), "--no-use")
        check = self.call("env-check", "env", "check", "stacklens-lab", "--detailed")
        return {"env_check": _tail(check["stdout"], 6)}

    def task(self, name: str, servers: int, concurrency: int) -> dict[str, Any]:
        task = {"version": 2, "title": name, "subtasks": [{"title": "boot_and_delete",
                "workloads": [{
                    "scenario": {"NovaServers.boot_and_delete_server": {
                        "flavor": {"name": FLAVOR}, "image": {"name": IMAGE}, "nics": "none"}},
                    "runner": {"constant": {"times": servers, "concurrency": concurrency,
                                            "timeout": ACTIVE_TIMEOUT_S + DELETE_TIMEOUT_S}},
                    "contexts": {}, "sla": {"failure_rate": {"max": 100}}}]}]}
        path = self.work / f"{name}.task.json"
        path.write_text(json.dumps(task, indent=2))
        r = run_child(self.argv("task", "start", str(path), "--env", "stacklens-lab"),
                      self.work / name, self.timeout_s, env=self.env)
        m = re.search(r"Task ([0-9a-f-]{36})", Path(r["stdout"]).read_text(errors="replace"))
        r["task_uuid"] = m.group(1) if m else None
        if m:
            report = self.work / f"{name}.report.json"
            rep = run_child(self.argv("task", "report", m.group(1), "--json", "--out",
                                      str(report)), self.work / f"{name}-report", 180,
                            env=self.env)
            r["report"] = str(report) if rep["rc"] == 0 and report.exists() else None
        return r


def rally_numbers(run: dict[str, Any]) -> dict[str, Any]:
    from stacklens.drive.rally import read_rally

    if not run.get("report"):
        return {"error": "no Rally report: " + _tail(run["stdout"], 20)}
    recs = read_rally(run["report"])
    doc = json.loads(Path(run["report"]).read_text())
    intervals, loads = [], {}
    for t in doc.get("tasks", []):
        for st in t.get("subtasks", []):
            for w in st.get("workloads", []):
                loads = {"load_duration_s": round(w.get("load_duration") or 0, 3),
                         "full_duration_s": round(w.get("full_duration") or 0, 3),
                         "failed_iterations": w.get("failed_iteration_count"),
                         "total_iterations": w.get("total_iteration_count")}
                for itr in w.get("data", []):
                    ts = float(itr["timestamp"])
                    intervals.append((ts, ts + float(itr.get("duration") or 0)
                                      + float(itr.get("idle_duration") or 0)))
    errors = Counter((r.error or "")[:160] for r in recs if r.outcome != "ok")
    return {**records_numbers([_rec_dict(r) for r in recs]),
            "peak_in_flight": _peak_overlap(intervals),
            "peak_in_flight_source": "Rally iteration timestamps (timestamp .. timestamp + "
                                     "duration + idle_duration)",
            "rally_report": loads, "errors": dict(errors.most_common(5))}


def _rec_dict(r: Any) -> dict[str, Any]:
    return {k: getattr(r, k) for k in ("outcome", "submit_ns", "active_ns", "delete_ns",
                                        "gone_ns", "error")}


def stacklens_run(stacklens: Path, work: Path, name: str, endpoint: str, servers: int,
                  concurrency: int, timeout_s: float) -> dict[str, Any]:
    scn = work / f"{name}.yaml"
    scn.write_text(SCENARIO.format(servers=servers, concurrency=concurrency, flavor=FLAVOR,
                                   image=IMAGE, active_timeout=ACTIVE_TIMEOUT_S,
                                   delete_timeout=DELETE_TIMEOUT_S, mv=MICROVERSION))
    out = work / name
    env = {k: v for k, v in os.environ.items()
           if k not in ("OS_CLOUD", "OS_CLIENT_CONFIG_FILE", "STACKLENS_OUT")}
    r = run_child([str(stacklens), "run", str(scn), "--out", str(out), "--endpoint", endpoint,
                   "--token", NOAUTH_TOKEN, "--json"], work / f"{name}-cli", timeout_s, env=env)
    r["out"] = str(out)
    return r


def stacklens_numbers(run: dict[str, Any]) -> dict[str, Any]:
    import polars as pl

    out = Path(run["out"])
    try:
        rows = pl.read_parquet(out / "tables" / "requests.parquet").to_dicts()
        man = json.loads((out / "manifest.json").read_text())["run"]
    except (OSError, ValueError, KeyError) as e:
        return {"error": f"no stacklens records ({e}): " + _tail(run["stderr"], 20)}
    errors = Counter((r.get("error") or "")[:160] for r in rows if r.get("outcome") != "ok")
    return {**records_numbers(rows),
            "peak_in_flight": (man.get("stats") or {}).get("peak_in_flight"),
            "peak_in_flight_source": "manifest.json run.stats.peak_in_flight",
            "http_calls": man.get("calls"), "leftovers": len(man.get("leftovers") or []),
            "errors": dict(errors.most_common(5))}


def leftover_servers(endpoint: str) -> int | str:
    req = urllib.request.Request(f"{endpoint}/servers?all_tenants=1&limit=1000",
                                 headers={"X-Auth-Token": NOAUTH_TOKEN})
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return len(json.loads(resp.read())["servers"])
    except Exception as e:  # noqa: BLE001 (a number or why not)
        return f"unknown: {e}"


def _ratio(a: Any, b: Any) -> float | None:
    return round(a / b, 3) if isinstance(a, int | float) and isinstance(b, int | float) and b \
        else None


# ---------------------------------------------------------------------------------------------

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--servers", type=int, default=50)
    ap.add_argument("--concurrency", type=int, default=50)
    ap.add_argument("--baseline-servers", type=int, default=1,
                    help="servers of the warm-up run per tool that gives its fixed cost")
    ap.add_argument("--computes", type=int, default=4)
    ap.add_argument("--port-base", type=int, default=31700)
    ap.add_argument("--rally-venv", type=Path, default=Path("/work/rallyvenv"))
    ap.add_argument("--order", default="stacklens,rally")
    ap.add_argument("--max-load", type=float, default=2.0,
                    help="wait until the 1-minute load average is below this")
    ap.add_argument("--load-wait-s", type=float, default=600.0, help="bound on each wait")
    ap.add_argument("--run-timeout-s", type=float, default=1800.0, help="bound on each run")
    ap.add_argument("--lab-python", default=None,
                    help="interpreter with OpenStack 2025.1 (default: $STACKLENS_LAB_PYTHON)")
    ap.add_argument("--keep", action="store_true", help="keep the work folder and lab logs")
    args = ap.parse_args()

    def on_term(*_: Any) -> None:  # SIGTERM: run the finally (lab down) like Ctrl-C does
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    order = [t.strip() for t in args.order.split(",") if t.strip()]
    if sorted(order) != ["rally", "stacklens"]:
        ap.error("--order: stacklens,rally or rally,stacklens")

    venv_bin = Path(sys.executable).parent
    stacklens = venv_bin / "stacklens"
    work = Path(tempfile.mkdtemp(prefix="drive-vs-rally-", dir="/tmp"))
    lab_dir = work / "lab"
    endpoint = f"http://127.0.0.1:{args.port_base + 74}/v2.1"
    nova_log = lab_dir / "logs" / "controller" / "var" / "log" / "nova" / "nova-api.log"
    result: dict[str, Any] = {
        "workload": {
            "servers": args.servers, "concurrency": args.concurrency,
            "baseline_servers": args.baseline_servers, "computes": args.computes,
            "what": "boot, wait ACTIVE, delete, wait gone; microversion 2.37, networks none, "
                    f"flavor {FLAVOR}, image {IMAGE}",
            "timeouts_s": {"active": ACTIVE_TIMEOUT_S, "delete": DELETE_TIMEOUT_S},
            "polling": {"stacklens": "one GET /servers/detail for all servers every 2 s",
                        "rally": "GET /servers/{id} per server every 2 s, after 1 s (boot) / "
                                 "2 s (delete) pre-poll sleep (rally-openstack defaults)"},
            "order": order,
        },
        "machine": {"cpus": os.cpu_count()},
    }
    lab_env = {**os.environ}
    standin = None
    try:
        result["machine"]["before_lab"] = wait_for_load(args.max_load, args.load_wait_s)
        _say(f"lab up: {args.computes} computes in {lab_dir}, port base {args.port_base}")
        up = run_child([str(stacklens), "lab", "up", "--computes", str(args.computes), "--dir",
                        str(lab_dir), "--port-base", str(args.port_base),
                        *(["--python", args.lab_python] if args.lab_python else [])],
                       work / "lab-up",
                       900, env=lab_env)
        if up["rc"] != 0:
            raise RuntimeError(f"lab up failed (exit {up['rc']}):\n{_tail(up['stderr'])}")
        state = json.loads((lab_dir / "lab.json").read_text())
        result["lab"] = {"dir": str(lab_dir), "port_base": args.port_base,
                         "up_s": state.get("timings_s", {}).get("total"),
                         "nova": state.get("versions", {}).get("nova")}

        # Rally: keystone stand-in, DB, env (failures are reported, stacklens still runs)
        rally: Rally | None = None
        rally_info: dict[str, Any] = {}
        if not (args.rally_venv / "bin" / "rally").exists():
            rally_info["error"] = (f"no Rally in {args.rally_venv} (python3.11 -m venv "
                                   f"{args.rally_venv} && {args.rally_venv}/bin/pip install "
                                   "rally-openstack)")
        else:
            (work / "rally").mkdir()
            standin = subprocess.Popen(
                [sys.executable, str(Path(__file__).with_name("keystone_standin.py")), "--port-base",
                 str(args.port_base), "--log", str(work / "keystone-standin.log"),
                 "--max-s", str(args.run_timeout_s * 4 + 1200)],
                stdout=subprocess.PIPE, text=True, start_new_session=True)
            line = standin.stdout.readline() if standin.stdout else ""
            if not line.startswith("port "):
                rally_info["error"] = f"keystone stand-in did not start: {line!r}"
            else:
                ks_url = f"http://127.0.0.1:{int(line.split()[1])}"
                rally_info["keystone_standin"] = ks_url
                try:
                    rally = Rally(args.rally_venv, work / "rally", ks_url, args.run_timeout_s)
                    rally_info |= rally.setup()
                    rally_info["version"] = _tail(rally.call(
                        "version", "--version")["stdout"], 4).replace("\n", " ").strip()
                except (RuntimeError, OSError) as e:
                    rally_info["error"] = f"Rally setup failed: {e}"
                    rally = None
        result["rally_setup"] = rally_info

        runs: dict[str, dict[str, Any]] = {}
        for phase, n, conc in (("baseline", args.baseline_servers, args.baseline_servers),
                               ("measured", args.servers, args.concurrency)):
            if n <= 0:
                continue
            for tool in order:
                if tool == "rally" and rally is None:
                    continue
                name = f"{tool}-{phase}"
                load = wait_for_load(args.max_load, args.load_wait_s)
                _say(f"{name}: {n} servers, concurrency {conc} (load {load['loadavg_1m']})")
                off0 = _offset(nova_log)
                if tool == "stacklens":
                    r = stacklens_run(stacklens, work, name, endpoint, n, conc,
                                      args.run_timeout_s)
                else:
                    assert rally is not None
                    r = rally.task(name, n, conc)
                time.sleep(1.0)  # let nova-api's workers flush their last lines
                r["nova_api"] = nova_api_calls(nova_log, off0, _offset(nova_log))
                r["load_before"] = load
                r["loadavg_1m_after"] = round(os.getloadavg()[0], 2)
                r["servers"] = n
                runs[name] = r
                _say(f"{name}: exit {r['rc']} in {r['wall_s']:.1f} s, cpu {r['cpu_s']:.2f} s")

        result["leftover_servers"] = leftover_servers(endpoint)
        for tool in order:
            m = runs.get(f"{tool}-measured")
            if m is None:
                result[tool] = {"error": rally_info.get("error", "not run")}
                continue
            nums = stacklens_numbers(m) if tool == "stacklens" else rally_numbers(m)
            b = runs.get(f"{tool}-baseline")
            n, nb = args.servers, args.baseline_servers
            marginal = ((m["cpu_s"] - b["cpu_s"]) / (n - nb) * 1000
                        if b is not None and n > nb else None)
            calls = m["nova_api"].get("total")
            result[tool] = {
                "exit_code": m["rc"], "timed_out": m["timed_out"], "wall_s": m["wall_s"],
                "cpu_s": m["cpu_s"], "cpu_user_s": m["cpu_user_s"], "cpu_sys_s": m["cpu_sys_s"],
                "cpu_ms_per_request": round(1000 * m["cpu_s"] / n, 2),
                "peak_rss_mb": m["peak_rss_mb"],
                "client_overhead": {
                    "baseline_cpu_s": b["cpu_s"] if b else None,
                    "baseline_wall_s": b["wall_s"] if b else None,
                    "marginal_cpu_ms_per_request": round(marginal, 2)
                    if marginal is not None else None,
                    "nova_api_calls": calls,
                    "nova_api_calls_per_request": round(calls / n, 2) if calls else None,
                    "nova_api_time_s_per_request": round(m["nova_api"]["nova_api_time_s"] / n, 3)
                    if "nova_api_time_s" in m["nova_api"] else None,
                    "nova_api_by_call": m["nova_api"].get("by_call"),
                    "nova_api_by_status": m["nova_api"].get("by_status"),
                },
                **nums,
                "load_before": m["load_before"], "loadavg_1m_after": m["loadavg_1m_after"],
            }
            if tool == "rally":
                result[tool]["task_uuid"] = m.get("task_uuid")
        s, r = result.get("stacklens", {}), result.get("rally", {})
        if "cpu_s" in s and "cpu_s" in r:
            def g(d: dict, *ks: str) -> Any:
                for k in ks:
                    d = d.get(k) if isinstance(d, dict) else None
                return d
            result["ratios"] = {"rally_over_stacklens": {
                "cpu_ms_per_request": _ratio(r["cpu_ms_per_request"], s["cpu_ms_per_request"]),
                "marginal_cpu_ms_per_request": _ratio(
                    g(r, "client_overhead", "marginal_cpu_ms_per_request"),
                    g(s, "client_overhead", "marginal_cpu_ms_per_request")),
                "nova_api_calls_per_request": _ratio(
                    g(r, "client_overhead", "nova_api_calls_per_request"),
                    g(s, "client_overhead", "nova_api_calls_per_request")),
                "peak_in_flight": _ratio(r.get("peak_in_flight"), s.get("peak_in_flight")),
                "create_p50_s": _ratio(g(r, "create_s", "p50"), g(s, "create_s", "p50")),
                "create_p95_s": _ratio(g(r, "create_s", "p95"), g(s, "create_s", "p95")),
                "delete_p50_s": _ratio(g(r, "delete_s", "p50"), g(s, "delete_s", "p50")),
                "delete_p95_s": _ratio(g(r, "delete_s", "p95"), g(s, "delete_s", "p95")),
                "wall_s": _ratio(r["wall_s"], s["wall_s"]),
                "peak_rss_mb": _ratio(r["peak_rss_mb"], s["peak_rss_mb"]),
            }}
        if rally is not None:
            try:
                result["rally_setup"]["keystone_standin_requests"] = dict(Counter(
                    " ".join(ln.split()[1:3]).split("?")[0] for ln in
                    (work / "keystone-standin.log").read_text().splitlines()))
            except OSError:
                pass
    except Exception as e:  # noqa: BLE001 (the JSON says what failed)
        result["error"] = f"{type(e).__name__}: {e}"
    finally:
        if standin is not None and standin.poll() is None:
            standin.terminate()
            try:
                standin.wait(10)
            except subprocess.TimeoutExpired:
                standin.kill()
                standin.wait(10)
        if lab_dir.exists():
            _say("lab down")
            down = run_child([str(stacklens), "lab", "down", "--dir", str(lab_dir),
                              *([] if args.keep else ["--purge"])], work / "lab-down", 300,
                             env=lab_env)
            result["lab_down"] = {"rc": down["rc"], "wall_s": down["wall_s"]}
        result["machine"]["loadavg_1m_end"] = round(os.getloadavg()[0], 2)
        if args.keep:
            result["work_dir"] = str(work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
