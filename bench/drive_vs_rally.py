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

Layout: this file is the run (``main``); ``_rally_proc.py`` runs children with deadlines,
``_rally_numbers.py`` computes the numbers from records and nova-api's log, ``_rally_tools.py``
drives the two tools (stacklens's scenario, the Rally install) and reads their records.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _rally_numbers import _offset, _ratio, nova_api_calls
from _rally_proc import _say, _tail, run_child, wait_for_load
from _rally_tools import (
    ACTIVE_TIMEOUT_S,
    DELETE_TIMEOUT_S,
    FLAVOR,
    IMAGE,
    Rally,
    leftover_servers,
    rally_numbers,
    stacklens_numbers,
    stacklens_run,
)

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
            def g(d: Any, *ks: str) -> Any:
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
