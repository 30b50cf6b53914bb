"""The two tools of ``drive_vs_rally.py``: the workload both boot (constants), stacklens's
scenario and run, a Rally install driven through its CLI (DB, ``existing@openstack`` env, the
one nics plugin, ``task start`` / ``task report --json``), and the numbers read from each
tool's own records. Split out of ``drive_vs_rally.py``."""

from __future__ import annotations

import json
import os
import re
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

from _rally_numbers import _peak_overlap, records_numbers
from _rally_proc import _tail, run_child

NOAUTH_TOKEN = "admin:admin"
FLAVOR, IMAGE = "lab.tiny", "stacklens-lab-image"
MICROVERSION = "2.37"
ACTIVE_TIMEOUT_S, DELETE_TIMEOUT_S = 900, 600


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
