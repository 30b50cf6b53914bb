"""``stacklens import osprofiler`` / ``import rally``: the shared real traces and Rally task,
OSProfiler's other shapes (raw point lists, newer reports with ``exception``), and compare on
the imported runs (real CLI in a subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from conftest import DATA, need

from stacklens.imports import import_osprofiler, parse_osprofiler
from stacklens.schema import BREAKDOWN, FLOWS, SPANS, TRACES
from stacklens.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
PERFDOCS = DATA / "osprofiler" / "perfdocs-keystone-osprofiler"
RALLY = DATA / "rally" / "msds-rally" / "j_boot_delete_output.json"


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stacklens", *map(str, args)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def _count_points(doc: dict) -> int:
    n, stack = 0, list(doc["children"])
    while stack:
        node = stack.pop()
        n += 1
        stack += node.get("children", [])
    return n


def test_shared_perfdocs_traces_import(tmp_path):
    need(PERFDOCS)
    files = sorted(PERFDOCS.rglob("*.txt"))
    docs = [json.loads(f.read_text()) for f in files]
    res = import_osprofiler([PERFDOCS])
    assert len(res.files) == len(files) == 18 and res.skipped == []
    assert res.points == sum(_count_points(d) for d in docs) == 2300
    t = res.tables
    assert t["spans"].schema == pl.Schema(SPANS) and t["traces"].schema == pl.Schema(TRACES)
    assert t["flows"].schema == pl.Schema(FLOWS) and t["breakdown"].schema == pl.Schema(BREAKDOWN)
    # one trace per top-level request of each OSProfiler trace
    assert t["traces"].height == sum(len(d["children"]) for d in docs) == 122
    assert t["spans"]["span_id"].n_unique() == 2300
    assert (t["spans"]["end_ns"] >= t["spans"]["start_ns"]).all()
    # breakdown rows of a trace sum to its duration
    b = t["breakdown"].group_by("trace_id").agg(pl.col("dur_s").sum().alias("sum_s"))
    j = b.join(t["traces"].select("trace_id", "dur_s"), on="trace_id")
    assert j.height == 122 and ((j["sum_s"] - j["dur_s"]).abs() < 1e-6).all()
    # the server create: nova-api calls glance and neutron; RPC to conductor, scheduler, compute
    create = t["traces"].filter(pl.col("operation") == "POST /v2.1/{id}/servers")
    assert create.height == 2 and create["instance_uuid"].null_count() == 0
    assert {"nova-api", "nova-conductor", "nova-scheduler", "nova-compute", "neutron-server",
            "glance-api"} <= set(create["services"][0].split(","))
    kinds = set(t["flows"]["kind"].to_list())
    assert {"http", "rpc_call"} <= kinds
    # the wsgi root keeps OSProfiler's own timestamps (UTC): the Fernet/cache-on create
    doc = json.loads((PERFDOCS / "Liberty+Fernet+CacheOn" / "server_create.txt").read_text())
    root = next(c for c in doc["children"]
                if c["info"]["meta.raw_payload.wsgi-start"]["info"]["request"]["method"] == "POST"
                and c["info"]["meta.raw_payload.wsgi-start"]["info"]["request"]["path"]
                .endswith("/servers"))
    span = t["spans"].filter(pl.col("span_id") == root["trace_id"]).row(0, named=True)
    assert span["service"] == "nova-api" and span["parent_span_id"] is None
    assert span["request_id"] == root["info"]["meta.raw_payload.wsgi-start"]["base_id"]
    ms = (span["end_ns"] - span["start_ns"]) / 1e6
    assert ms == pytest.approx(root["info"]["finished"] - root["info"]["started"], abs=1.0)


def test_cli_import_then_compare_cache_on_off(tmp_path):
    need(PERFDOCS)
    for c in ("Liberty+Fernet+CacheOff", "Liberty+Fernet+CacheOn"):
        p = cli("import", "osprofiler", PERFDOCS / c, "--out", tmp_path / c)
        assert p.returncode == 0, p.stderr
        assert "5 OSProfiler traces" in p.stderr
    m = RunStore(tmp_path / "Liberty+Fernet+CacheOn").read_manifest()
    assert m.run and m.run["source"] == "osprofiler" and m.stages == ["run"]
    p = cli("compare", tmp_path / "Liberty+Fernet+CacheOff", tmp_path / "Liberty+Fernet+CacheOn",
            "--json")
    r = json.loads(p.stdout)
    assert r["runs"][0]["summary"]["requests"] == 35
    assert any("no HTTP status" in w for w in r["warnings"])
    ops = {o["operation"]: o for o in r["operations"]}
    # keystone's service list: 9 requests a side, 3.7x faster with the cache on
    ch = ops["GET /v2.0/OS-KSADM/services/{id}"]["changes"][0]
    assert ch["verdict"].endswith("x faster, significant") and ch["ratio"] < 0.5
    assert p.returncode == 0  # faster is no regression
    p = cli("compare", tmp_path / "Liberty+Fernet+CacheOn", tmp_path / "Liberty+Fernet+CacheOff")
    assert p.returncode == 3 and "slower, significant" in p.stderr


def test_raw_point_list_with_an_exception():
    base, t0 = "b0000000-0000-4000-8000-000000000000", "2026-01-10T10:00:00.%06d"
    pts = []
    for i, (name, parent, a, z, svc) in enumerate([
            ("wsgi", base, 0, 500000, ("nova", "osapi_compute")),
            ("rpc", "s0", 100000, 400000, ("nova", "nova-conductor")),
            ("db", "s1", 150000, 200000, ("nova", "nova-conductor"))]):
        common = {"base_id": base, "trace_id": f"s{i}", "parent_id": parent,
                  "project": svc[0], "service": svc[1], "host": "ctl"}
        info = {"request": {"method": "POST", "path": "/v2.1/servers"}} if name == "wsgi" else {}
        pts.append({**common, "name": f"{name}-start", "timestamp": t0 % a, "info": info})
        stop_info = {"etype": "DBDeadlock", "message": "deadlock"} if name == "db" else {}
        pts.append({**common, "name": f"{name}-stop", "timestamp": t0 % z, "info": stop_info})
    points = parse_osprofiler(list(reversed(pts)))
    assert len(points) == 3
    from stacklens.imports.osprofiler import _tables

    t = _tables(points)
    tr = t["traces"].row(0, named=True)
    assert t["traces"].height == 1 and tr["trace_id"] == "s0" and tr["request_id"] == base
    assert tr["outcome"] == "failed" and tr["error"] == "DBDeadlock: deadlock"
    assert tr["error_service"] == "nova-conductor" and tr["dur_s"] == pytest.approx(0.5)
    assert tr["operation"] == "POST /v2.1/servers"
    f = t["flows"].row(0, named=True)
    assert (f["src_span_id"], f["dst_span_id"], f["kind"]) == ("s0", "s1", "rpc_call")
    b = dict(t["breakdown"].select("component", "dur_s").iter_rows())
    assert b == pytest.approx({"nova-api": 0.2, "nova-conductor": 0.3})


def test_not_osprofiler_is_skipped_or_refused(tmp_path):
    (tmp_path / "x.json").write_text('{"hello": 1}')
    p = cli("import", "osprofiler", tmp_path / "x.json", "--out", tmp_path / "run")
    assert p.returncode == 1 and "no OSProfiler trace points" in p.stderr
    with pytest.raises(ValueError):
        parse_osprofiler({"tasks": []})


def _slowed(doc: dict, factor: float) -> dict:
    """The same Rally report with every boot ``factor`` times longer."""
    for task in doc["tasks"]:
        for sub in task["subtasks"]:
            for w in sub["workloads"]:
                for itr in w["data"]:
                    for a in itr["atomic_actions"]:
                        if a["name"] == "nova.boot_server" and a.get("finished_at"):
                            a["finished_at"] = a["started_at"] + factor * (
                                a["finished_at"] - a["started_at"])
    return doc


def test_rally_task_as_a_run_and_compare(tmp_path):
    need(RALLY)
    p = cli("import", "rally", RALLY, "--out", tmp_path / "a")
    assert p.returncode == 0, p.stderr
    assert "750 iterations" in p.stderr
    store = RunStore(tmp_path / "a")
    run = store.read_manifest().run or {}
    assert run["source"] == "rally" and run["stats"] == {"ok": 745, "error": 3, "timeout": 2}
    assert run["rally"]["format_version"] == "1.2" and store.read("requests").height == 750
    assert cli("import", "rally", RALLY, "--out", tmp_path / "b").returncode == 0
    slow = tmp_path / "slow.json"
    slow.write_text(json.dumps(_slowed(json.loads(RALLY.read_text()), 1.3)))
    assert cli("import", "rally", slow, "--out", tmp_path / "slow").returncode == 0
    same = cli("compare", tmp_path / "a", tmp_path / "b", "--json")
    assert same.returncode == 0, same.stderr
    cl = json.loads(same.stdout)["client"][0]
    assert cl["scenario"] == "NovaServers.boot_and_delete_server"
    assert cl["stats"][0]["n"] == 745 and cl["stats"][0]["success_rate"] == pytest.approx(745 / 750, abs=1e-4)
    assert cl["changes"][0]["verdict"] == "no significant change"
    worse = cli("compare", tmp_path / "a", tmp_path / "slow", "--json")
    assert worse.returncode == 3
    ch = json.loads(worse.stdout)["client"][0]["changes"][0]
    assert ch["verdict"].endswith("x slower, significant") and 1.25 < ch["ratio"] < 1.35
    p = cli("import", "rally", DATA / "rally" / "msds-rally" / "j_image_output.json",
            "--out", tmp_path / "img")
    assert p.returncode == 1 and "no server-booting iteration" in p.stderr


def test_help_of_the_new_commands():
    for args in (("compare",), ("import", "osprofiler"), ("import", "rally"), ("export", "otlp")):
        p = cli(*args, "--help")
        assert p.returncode == 0 and "Usage" in p.stdout, (args, p.stderr)


def test_report_and_sql_read_an_imported_run(tmp_path):
    need(PERFDOCS)
    run = tmp_path / "run"
    assert cli("import", "osprofiler", PERFDOCS / "Liberty+UUID+CacheOn", "--out", run
               ).returncode == 0
    p = cli("sql", run, "SELECT count(*) AS n FROM spans", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)[0]["n"] == 239
    p = cli("report", run)
    # the report counts requests by HTTP status, which OSProfiler does not record
    assert p.returncode == 0, p.stderr
    assert "background traces 26" in p.stdout


# --- property: any OSProfiler tree imports, and each trace's breakdown sums to its duration ---

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _stamp(us: int) -> str:
    minute, second = us // 60_000_000 % 60, us // 1_000_000 % 60
    return f"2026-01-10T10:{minute:02d}:{second:02d}.{us % 1_000_000:06d}"


@st.composite
def _trees(draw) -> dict:
    """Random OSProfiler report trees: nested points whose children lie inside or run past
    their parent (casts), with or without stop points and exceptions."""
    n = draw(st.integers(1, 25))
    nodes: list[dict] = []
    for i in range(n):
        parent = draw(st.integers(-1, i - 1)) if i else -1
        a = draw(st.integers(0, 5_000_000))
        d = draw(st.integers(0, 3_000_000))
        name = draw(st.sampled_from(["wsgi", "db", "rpc", "cache"]))
        svc = draw(st.sampled_from([("nova", "osapi_compute"), ("nova", "nova-conductor"),
                                    ("keystone", "main"), ("neutron", "neutron-server")]))
        pid = f"p{parent}" if parent >= 0 else "base"
        info: dict = {"name": name, "project": svc[0], "service": svc[1], "host": "h",
                      "started": a // 1000, "finished": (a + d) // 1000,
                      f"meta.raw_payload.{name}-start": {
                          "name": f"{name}-start", "timestamp": _stamp(a), "base_id": "base",
                          "trace_id": f"p{i}", "parent_id": pid, "info": {"host": "h"}}}
        if draw(st.booleans()) or i == 0:
            stop_info = {"etype": "E", "message": "m"} if draw(st.booleans()) else {}
            info[f"meta.raw_payload.{name}-stop"] = {
                "name": f"{name}-stop", "timestamp": _stamp(a + d), "base_id": "base",
                "trace_id": f"p{i}", "parent_id": pid, "info": stop_info}
        node = {"info": info, "trace_id": f"p{i}", "parent_id": pid, "children": []}
        nodes.append(node)
        if parent >= 0:
            nodes[parent]["children"].append(node)
    return {"info": {"name": "total", "started": 0, "finished": 0},
            "children": [x for x in nodes if x["parent_id"] == "base"]}


@settings(max_examples=60, deadline=None)
@given(_trees())
def test_any_tree_imports_with_a_complete_breakdown(doc):
    from stacklens.imports.osprofiler import _tables

    t = _tables(parse_osprofiler(doc))
    n = _count_points(doc)
    assert t["spans"].height == n and t["spans"]["span_id"].n_unique() == n
    assert t["traces"].height == len(doc["children"])
    assert set(t["spans"]["trace_id"]) == set(t["traces"]["trace_id"])
    b = t["breakdown"].group_by("trace_id").agg(pl.col("dur_s").sum().alias("s"))
    j = t["traces"].select("trace_id", "dur_s").join(b, on="trace_id", how="left")
    assert ((j["s"].fill_null(0.0) - j["dur_s"]).abs() < 1e-6).all()
    assert (t["traces"]["outcome"] == "failed").sum() == sum(
        1 for r in t["traces"].iter_rows(named=True) if r["n_error_records"])


def test_same_trace_twice_is_read_once(tmp_path):
    need(PERFDOCS)
    src = PERFDOCS / "Liberty+UUID+CacheOn" / "token_issue.txt"
    (tmp_path / "a.json").write_text(src.read_text())
    (tmp_path / "b.txt").write_text(src.read_text())
    res = import_osprofiler([tmp_path])
    n = _count_points(json.loads(src.read_text()))
    assert res.points == n == res.tables["spans"].height
    assert res.skipped == [(str(tmp_path / "b.txt"), f"{n} points already read")]
