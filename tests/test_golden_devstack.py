"""Golden tests on the devstack-gate CI job (Newton, one host, DEBUG, nova-network).

The expected output lives in ``tests/golden/*.json`` beside this file; regenerate with
``STACKLENS_UPDATE_GOLDEN=1 python -m pytest tests/test_golden_devstack.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest

GOLDEN = Path(__file__).parent / "golden"
RID = "req-c354514b-0c97-415e-ba7f-18750569f103"
NOVA_BOOT = {"nova-api", "nova-conductor", "nova-scheduler", "nova-compute"}


def _check(name: str, got: object) -> None:
    path = GOLDEN / f"{name}.json"
    text = json.dumps(got, indent=2, sort_keys=True, default=str) + "\n"
    if os.environ.get("STACKLENS_UPDATE_GOLDEN") or not path.exists():
        path.write_text(text)
        if not os.environ.get("STACKLENS_UPDATE_GOLDEN"):
            pytest.fail(f"golden file {path.name} was missing and has been written; review it")
    assert json.loads(text) == json.loads(path.read_text()), f"differs from {path}"


def _round(d: dict) -> dict:
    return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in d.items()}


def test_golden_trace_of_server_create(devstack_run):
    store, _ = devstack_run
    spans = store.read("spans").filter(pl.col("trace_id") == RID).sort("start_ns", "service")
    t0 = spans["start_ns"].min()
    got = {
        "trace": _round(
            store.read("traces").filter(pl.col("trace_id") == RID)
            .drop("error_file").to_dicts()[0]
        ),
        "spans": [
            _round({"service": r["service"], "parent": (r["parent_span_id"] or "").split(":")[-1].split("@")[0],
                    "operation": r["operation"], "start_s": (r["start_ns"] - t0) / 1e9,
                    "dur_s": (r["end_ns"] - r["start_ns"]) / 1e9, "end_exact": r["end_exact"],
                    "status": r["status"], "n_events": r["n_events"]})
            for r in spans.iter_rows(named=True)
        ],
        "breakdown": {
            r["component"]: round(r["dur_s"], 3)
            for r in store.read("breakdown").filter(pl.col("trace_id") == RID).iter_rows(named=True)
        },
        "phases": {
            r["phase"]: round(r["dur_s"], 3)
            for r in store.read("phases").filter(pl.col("trace_id") == RID).iter_rows(named=True)
        },
    }
    _check("devstack_trace_req-c354514b", got)


def test_golden_summary(devstack_run):
    _, report = devstack_run
    got = {
        "summary": _round({k: v for k, v in report["summary"].items() if k != "by_outcome"}),
        "by_outcome": report["summary"]["by_outcome"],
        "operations": [_round(o) for o in report["operations"][:15]],
        "errors": report["errors"],
        "phases": [_round(p) for p in report["phases"]],
        "ingest": {k: report["ingest"][k] for k in ("files", "files_skipped", "lines", "records", "quarantined")},
    }
    _check("devstack_summary", got)


def test_every_tempest_server_create_has_the_boot_spans(devstack_run):
    store, _ = devstack_run
    ev = store.read("events")
    creates = ev.filter(
        (pl.col("service") == "tempest") & (pl.col("http_method") == "POST")
        & pl.col("http_path").str.contains(r"/servers$")
    )["request_id"].unique().to_list()
    assert len(creates) == 12
    spans = store.read("spans")
    for rid in creates:
        services = set(spans.filter(pl.col("trace_id") == rid)["service"].to_list())
        assert NOVA_BOOT <= services, (rid, services)
    traces = store.read("traces").filter(pl.col("trace_id").is_in(creates))
    assert set(traces["operation"]) == {"server.create"}
    assert set(traces["outcome"]) == {"success"}


def test_breakdown_sums_to_end_to_end(devstack_run):
    store, _ = devstack_run
    b = store.read("breakdown").group_by("trace_id").agg(pl.col("dur_s").sum().alias("sum_s"))
    t = store.read("traces").join(b, on="trace_id")
    assert t.height > 1000
    assert (t["sum_s"] - t["dur_s"]).abs().max() < 1e-6


def test_failed_requests_counted_once_under_first_error(devstack_run):
    store, report = devstack_run
    failed = report["summary"]["by_outcome"]["failed"]
    assert sum(e["failed_requests"] for e in report["errors"]) == failed
    assert failed == store.read("traces").filter(
        (pl.col("outcome") == "failed") & pl.col("http_status").is_not_null()).height
