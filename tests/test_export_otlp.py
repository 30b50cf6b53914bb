"""``stacklens export otlp``: the OTLP JSON a run becomes, and the spans read back from a REAL
Jaeger v2 on 127.0.0.1 (built by ``.ci/jaeger-setup.sh``; the receiver tests skip with the
reason when the binary is absent)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import polars as pl
import pytest
from conftest import DATA, DEVSTACK, need

from stacklens.export import otlp_span_id, otlp_trace_id
from stacklens.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
PERFDOCS = DATA / "osprofiler" / "perfdocs-keystone-osprofiler"
HEX32, HEX16 = set("0123456789abcdef"), set("0123456789abcdef")


def cli(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "stacklens", *map(str, args)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture(scope="module")
def osp_run(tmp_path_factory) -> Path:
    """The Fernet/cache-off OSProfiler traces imported (keystone, nova, glance, neutron; RPC)."""
    need(PERFDOCS)
    out = tmp_path_factory.mktemp("osp") / "run"
    p = cli("import", "osprofiler", PERFDOCS / "Liberty+Fernet+CacheOff", "--out", out)
    assert p.returncode == 0, p.stderr
    return out


def _requests(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _spans(reqs: list[dict]) -> list[dict]:
    return [s for r in reqs for rs in r["resourceSpans"] for ss in rs["scopeSpans"]
            for s in ss["spans"]]


def test_otlp_json_shape(osp_run, tmp_path):
    out = tmp_path / "otlp.jsonl"
    p = cli("export", "otlp", osp_run, "--out", out)
    assert p.returncode == 0, p.stderr
    store = RunStore(osp_run)
    table = store.read("spans")
    spans = _spans(_requests(out))
    assert len(spans) == table.height == 1075
    ids = {(s["traceId"], s["spanId"]) for s in spans}
    assert len(ids) == len(spans)
    for s in spans:
        assert len(s["traceId"]) == 32 and set(s["traceId"]) <= HEX32
        assert len(s["spanId"]) == 16 and set(s["spanId"]) <= HEX16
        assert int(s["endTimeUnixNano"]) >= int(s["startTimeUnixNano"])
        if "parentSpanId" in s:
            assert (s["traceId"], s["parentSpanId"]) in ids
        for link in s.get("links", []):
            assert (link["traceId"], link["spanId"]) in ids
    flows = store.read("flows").filter(pl.col("kind").is_in(["rpc_call", "rpc_cast"]))
    assert sum(len(s.get("links", [])) for s in spans) == flows.height > 0
    # the server create's root: OpenStack attributes and the instance uuid
    root = store.read("traces").filter(pl.col("operation") == "POST /v2.1/{id}/servers").row(
        0, named=True)
    got = next(s for s in spans if s["spanId"] == otlp_span_id(root["trace_id"], root["trace_id"]))
    attrs = {a["key"]: next(iter(a["value"].values())) for a in got["attributes"]}
    assert attrs["openstack.instance_uuid"] == root["instance_uuid"]
    assert attrs["openstack.request_id"] == root["request_id"]
    assert attrs["stacklens.outcome"] == "success" and attrs["openstack.service"] == "nova-api"
    assert otlp_trace_id("req-c354514b-0c97-415e-ba7f-18750569f103") == \
        "c354514b0c97415eba7f18750569f103"


def test_export_needs_an_endpoint_and_a_reachable_receiver(osp_run):
    p = cli("export", "otlp", osp_run)
    assert p.returncode == 1 and "--endpoint" in p.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    p = cli("export", "otlp", osp_run, "--endpoint", f"http://127.0.0.1:{port}", "--timeout", "5")
    assert p.returncode == 1 and "cannot be reached" in p.stderr


# --- a real Jaeger v2 ----------------------------------------------------------------------

def _jaeger_bin() -> str | None:
    cand = os.environ.get("STACKLENS_JAEGER") or shutil.which("jaeger") or \
        str(Path.home() / "go" / "bin" / "jaeger")
    return cand if cand and Path(cand).is_file() and os.access(cand, os.X_OK) else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


CONFIG = """
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: []
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:{query}
    grpc:
      endpoint: 127.0.0.1:{query_grpc}
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:{otlp}
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
"""


@pytest.fixture(scope="module")
def jaeger(tmp_path_factory) -> Iterator[tuple[str, str]]:
    """A Jaeger v2 all-in-one (memory storage) on 127.0.0.1: yields (OTLP endpoint, query URL);
    stopped after the module."""
    binary = _jaeger_bin()
    if binary is None:
        pytest.skip("no jaeger binary: run `bash .ci/jaeger-setup.sh` (builds Jaeger v2 from "
                    "its Go module into ~/go/bin) or set STACKLENS_JAEGER")
    ports = {"query": _free_port(), "query_grpc": _free_port(), "otlp": _free_port()}
    cfg = tmp_path_factory.mktemp("jaeger") / "config.yaml"
    cfg.write_text(CONFIG.format(**ports))
    log = cfg.with_suffix(".log").open("w")
    proc = subprocess.Popen([binary, "--config", str(cfg)], stdout=log, stderr=log)
    query = f"http://127.0.0.1:{ports['query']}"
    try:
        deadline = time.monotonic() + 60
        while True:  # bounded: 60 s
            if proc.poll() is not None:
                pytest.fail(f"jaeger exited: {cfg.with_suffix('.log').read_text()[-2000:]}")
            try:
                if httpx.get(f"{query}/api/services", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("jaeger did not answer within 60 s")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{ports['otlp']}", query
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _read_all(query: str, services: list[str], start_ns: int, end_ns: int,
              want_spans: int) -> dict[str, dict[str, dict]]:
    """Every stored trace that has a span of one of ``services`` in the window, through
    Jaeger's search API (one request per service), as ``{traceID: {spanID: span}}``; polls
    (at most 30 s) until ``want_spans`` spans are there (ingestion is asynchronous)."""
    deadline = time.monotonic() + 30
    while True:  # bounded: 30 s
        got: dict[str, dict[str, dict]] = {}
        for svc in services:
            r = httpx.get(f"{query}/api/traces", timeout=60, params={
                "service": svc, "start": start_ns // 1000 - 1, "end": end_ns // 1000 + 1,
                "limit": 100000})
            assert r.status_code == 200, r.text[:300]
            for t in r.json().get("data") or []:
                got.setdefault(t["traceID"], {}).update({s["spanID"]: s for s in t["spans"]})
        if sum(map(len, got.values())) >= want_spans or time.monotonic() > deadline:
            return got
        time.sleep(0.5)


def _check_run_in_jaeger(run: Path, endpoint: str, query: str,
                         limit: int | None = None) -> tuple[int, int]:
    """Export ``run`` (its first ``limit`` traces) and read every trace back: same span count,
    same start (us) and duration (us), parents and RPC links as references."""
    args = ["--limit", limit] if limit else []
    p = cli("export", "otlp", run, "--endpoint", endpoint, *args)
    assert p.returncode == 0, p.stderr
    store = RunStore(run)
    spans = store.read("spans")
    links: dict[str, list[str]] = {}
    for f in store.read("flows").filter(pl.col("kind").is_in(["rpc_call", "rpc_cast"])
                                       ).iter_rows(named=True):
        links.setdefault(f["dst_span_id"], []).append(f["src_span_id"])
    first = (spans.group_by("trace_id").agg(pl.col("start_ns").min())
             .sort("start_ns", "trace_id")["trace_id"].to_list()[:limit])
    n_spans = 0
    by_trace = spans.partition_by("trace_id", as_dict=True)
    sent = pl.concat([by_trace[(t,)] for t in first])
    stored = _read_all(query, sorted(sent["service"].fill_null("unknown").unique().to_list()),
                       int(sent["start_ns"].min()), int(sent["end_ns"].max()), sent.height)
    for tid in first:
        want = by_trace[(tid,)]
        got = stored.get(otlp_trace_id(tid), {})
        assert len(got) == want.height, (tid, len(got), want.height)
        for s in want.iter_rows(named=True):
            j = got[otlp_span_id(tid, s["span_id"])]
            assert abs(j["startTime"] - s["start_ns"] // 1000) <= 1
            assert abs(j["duration"] - (s["end_ns"] - s["start_ns"]) // 1000) <= 1
            # the parent comes back as CHILD_OF, or as FOLLOWS_FROM where the span also links
            # to it (an RPC whose sender is the parent: Jaeger merges link and parent)
            refs = {r["spanID"] for r in j.get("references", [])}
            if s["parent_span_id"] is not None:
                assert otlp_span_id(tid, s["parent_span_id"]) in refs, (s, j["references"])
            for src in links.get(s["span_id"], []):
                assert otlp_span_id(tid, src) in refs
        n_spans += want.height
    return len(first), n_spans


def test_osprofiler_traces_read_back_from_jaeger(osp_run, jaeger):
    endpoint, query = jaeger
    n_traces, n_spans = _check_run_in_jaeger(osp_run, endpoint, query)
    assert n_traces == 35 and n_spans == 1075
    services = httpx.get(f"{query}/api/services", timeout=5).json()["data"]
    assert {"nova-api", "nova-compute", "keystone", "neutron-server"} <= set(services)


def test_devstack_traces_read_back_from_jaeger(devstack_run, jaeger):
    """Every reconstructed trace of the devstack-gate job, every span back from Jaeger."""
    need(DEVSTACK)
    endpoint, query = jaeger
    store, _ = devstack_run
    n_traces, n_spans = _check_run_in_jaeger(store.path, endpoint, query)
    assert n_traces == store.read("traces").height
    assert n_spans == store.read("spans").height


OSP7 = DATA / "oslo-logs" / "oslogmerger-osp7-router"


@pytest.fixture(scope="module")
def osp7_run(tmp_path_factory) -> Path:
    """The three-host OSP7 window (the files that are not rotated history), analyzed."""
    need(OSP7)
    files = sorted(p for p in OSP7.rglob("*") if p.is_file() and p.suffix != ".gz"
                   and p.name != "mergedlogs.log")
    out = tmp_path_factory.mktemp("osp7") / "run"
    p = cli("analyze", *files, "--out", out)
    assert p.returncode == 0, p.stderr
    return out


def test_clock_corrected_times_and_offsets(osp7_run, tmp_path):
    out = tmp_path / "otlp.jsonl"
    assert cli("export", "otlp", osp7_run, "--out", out).returncode == 0
    store = RunStore(osp7_run)
    applied = {(r["host"], r["day"]): r["offset_s"] for r in store.read(
        "clock_offsets").filter(pl.col("applied")).iter_rows(named=True)}
    assert len(applied) == 3 and applied[("networker2", "2016-01-29")] != 0.0
    spans = store.read("spans")
    by_id = {(otlp_trace_id(r["trace_id"]), otlp_span_id(r["trace_id"], r["span_id"])): r
             for r in spans.iter_rows(named=True)}
    seen_hosts = set()
    for s in _spans(_requests(out)):
        row = by_id[(s["traceId"], s["spanId"])]
        attrs = {a["key"]: next(iter(a["value"].values())) for a in s["attributes"]}
        assert int(s["startTimeUnixNano"]) == row["start_ns"]  # the corrected time
        day = time.strftime("%Y-%m-%d", time.gmtime(row["start_ns"] // 10**9))
        # the offset applied to the span's host that day; none where no offset was applied
        assert attrs.get("stacklens.clock_offset_s") == applied.get((row["host"], day))
        if (row["host"], day) in applied:
            seen_hosts.add(row["host"])
    assert seen_hosts == {"controller1", "networker2", "networker3"}


def test_multi_host_traces_read_back_from_jaeger(osp7_run, jaeger):
    endpoint, query = jaeger
    n_traces, n_spans = _check_run_in_jaeger(osp7_run, endpoint, query)
    store = RunStore(osp7_run)
    assert n_spans == store.read("spans").height and n_traces == store.read("traces").height
