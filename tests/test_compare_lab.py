"""Issue 11 on the real lab: two ``stacklens run`` boot storms that differ in one scheduler
setting (nova's default vs ``lab up --scheduler-spread``: ``[filter_scheduler]
host_subset_size`` and ``shuffle_best_same_weighed_hosts``), a third run identical to the second,
``stacklens compare`` on them, and the first run's reconstructed traces exported to a real
Jaeger v2 and read back span by span.

The repeat is of the *spread* run: under a burst nova's default packs the servers onto hosts
by chance (measured: 40 of 40 on one host in one run, 30 + 10 in the next), so two default runs
really differ, significantly (2.5x). Each run gets a freshly started lab: a second run on a warm
lab was measured 1.4x to 2.3x faster in conductor, scheduler and placement.

Needs the lab (see tests/test_lab.py: skips with the reason without it) and the Jaeger binary
(tests/test_export_otlp.py: skips without it). Takes about nine minutes on 2 cores (measured 543 s): three
``lab up``, three storms of :data:`SERVERS` servers. Every loop is bounded; the lab is always
brought down.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_export_otlp import _check_run_in_jaeger, jaeger  # noqa: F401  (fixture)
from test_lab import _cli, _free_port_base, _lab_python

from stacklens.store import RunStore

pytestmark = pytest.mark.lab

ROOT = Path(__file__).resolve().parents[1]
K_COMPUTES, PER_COMPUTE = 4, 10
SERVERS = K_COMPUTES * PER_COMPUTE

SCENARIO = f"""\
name: compare-storm
cloud: stacklens-lab
workload:
  boot_servers:
    per_compute: {PER_COMPUTE}
    computes: {K_COMPUTES}
    flavor: lab.tiny
    image: stacklens-lab-image
    network: none
    concurrency: {SERVERS}
    ramp: {{shape: burst}}
    phases:
      active: {{timeout_s: 300}}
      delete: {{when: each, timeout_s: 300}}
client: {{poll_interval_s: 2, microversion: "2.37"}}
cleanup: delete
sla: {{success_rate: 0.5}}
"""


def _stacklens(*args: object, env: dict[str, str], timeout_s: float = 420
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stacklens", *map(str, args)],
                          capture_output=True, text=True, timeout=timeout_s, env=env)


@pytest.fixture(scope="module")
def lab_runs(tmp_path_factory) -> Iterator[dict[str, Path]]:
    """Runs ``default``, ``spread`` and ``spread_again``, each on a lab freshly started in the
    same folder (so that only the scheduler setting differs in the captured config)."""
    py = _lab_python()
    base = _free_port_base()
    tmp = tmp_path_factory.mktemp("compare-lab")
    root = tmp / "lab"
    scenario = tmp / "storm.yaml"
    scenario.write_text(SCENARIO)
    env = {k: v for k, v in os.environ.items() if k != "OS_CLIENT_CONFIG_FILE"}
    env.update(PYTHONPATH=str(ROOT), STACKLENS_LAB_DIR=str(root))
    runs: dict[str, Path] = {}
    for spread, name in ((False, "default"), (True, "spread"), (True, "spread_again")):
        flag = ["--scheduler-spread"] if spread else []
        r = _cli("up", "--computes", str(K_COMPUTES), "--dir", str(root), "--python", py,
                 "--port-base", str(base), *flag)
        try:
            assert r.returncode == 0, f"lab up failed:\n{r.stderr[-4000:]}"
            p = _stacklens("run", scenario, "--out", tmp / name, "--json", env=env)
            assert p.returncode == 0, p.stderr[-4000:]
            runs[name] = tmp / name
        finally:
            _cli("down", "--dir", str(root), timeout_s=300)
    yield runs


def test_run_keeps_the_labs_config_versions_and_hosts(lab_runs):
    run = RunStore(lab_runs["spread"]).read_manifest().run or {}
    assert "nova/nova.conf" in run["config_files"]
    assert run["hosts"] == ["controller"] + [f"fake-{i}" for i in range(1, K_COMPUTES + 1)]
    assert run["service_versions"]["nova"] and run["service_versions"]["compute_api"]
    conf = (lab_runs["spread"] / "config" / "nova" / "nova.conf").read_text()
    assert f"host_subset_size = {K_COMPUTES}" in conf and "guest:***@" in conf


def test_compare_reports_the_scheduler_change_and_its_config(lab_runs, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = _stacklens("compare", lab_runs["default"], lab_runs["spread"], "--json", env=env)
    assert p.returncode in (0, 3), p.stderr
    r = json.loads(p.stdout)
    meta = {m["key"]: m for m in r["metadata"]}
    key = "config:nova/nova.conf [filter_scheduler] host_subset_size"
    assert meta[key]["values"] == [None, str(K_COMPUTES)]
    assert meta["config:nova/nova.conf [filter_scheduler] shuffle_best_same_weighed_hosts"][
        "values"] == [None, "true"]
    changed = sorted(k for k, m in meta.items() if m["differs"] and k.startswith("config:"))
    assert changed == [key, "config:nova/nova.conf [filter_scheduler] "
                       "shuffle_best_same_weighed_hosts"], changed
    ops = {o["operation"]: o for o in r["operations"]}
    create = ops["server.create"]
    assert [s["n"] for s in create["stats"]] == [SERVERS] * 2
    (spread,) = create["changes"]
    print("spread vs default:", spread["verdict"], spread["ratio"], spread["ci"],
          spread["p_value"])
    # the spread lab places the burst on every host: nova 31's scheduler draws each host with
    # random.choice from the host_subset_size best, here all of them, so the split is random too
    # (11/10/10/9 measured, but also 21/7/6/6 in the scheduler's own "Selected host" lines);
    # nova's default piles the burst onto one host by chance (40 of 40 measured, but also
    # 30 + 10 and 28 + 12): only a pile of the whole burst against an even split makes the
    # change certain (2.5x measured); a split default run may not differ significantly (ratio
    # 0.81, p 0.056 measured with 28 + 12)
    hosts = {r: RunStore(lab_runs[r]).read("requests")["host"].value_counts()["count"]
             for r in ("default", "spread")}
    print("hosts:", {r: sorted(c.to_list(), reverse=True) for r, c in hosts.items()})
    assert hosts["spread"].len() == K_COMPUTES
    assert spread["ratio"] is not None
    if hosts["default"].max() >= 0.9 * SERVERS and hosts["spread"].max() < SERVERS // 2:
        assert spread["significant"] and spread["ratio"] < 1, spread
    html = _stacklens("compare", lab_runs["default"], lab_runs["spread"], "--html",
                      tmp_path / "c.html", env=env)
    assert html.returncode in (0, 3) and "host_subset_size" in (tmp_path / "c.html").read_text()


def test_identical_spread_runs(lab_runs):
    """The repeat: no config difference; its verdict is printed (the lab is noisy: asserted is
    only that a change, if any, is not the spread-vs-default factor)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = _stacklens("compare", lab_runs["spread"], lab_runs["spread_again"], "--json", env=env)
    assert p.returncode in (0, 3), p.stderr
    r = json.loads(p.stdout)
    assert not [m["key"] for m in r["metadata"] if m["differs"] and m["key"].startswith(
        "config:")]
    (again,) = {o["operation"]: o for o in r["operations"]}["server.create"]["changes"]
    print("spread again vs spread:", again["verdict"], again["ratio"], again["ci"],
          again["p_value"])
    assert again["ratio"] is not None and 0.5 < again["ratio"] < 2.0, again


def test_lab_trace_read_back_from_jaeger(lab_runs, jaeger):  # noqa: F811
    endpoint, query = jaeger
    store = RunStore(lab_runs["default"])
    n_traces, n_spans = _check_run_in_jaeger(store.path, endpoint, query)
    assert n_traces == store.read("traces").height >= SERVERS
    assert n_spans == store.read("spans").height
    print(f"jaeger: {n_traces} traces, {n_spans} spans read back")
