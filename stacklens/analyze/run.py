"""Analyze: run the analyses over a run folder and assemble ``report.json``.

The report dict (format version 1) has the keys ``format_version``, ``stacklens_version``,
``inputs``, ``timezone_assumption``, ``findings`` (list of {rule, severity, text, evidence}:
:mod:`stacklens.analyze.findings`), ``window`` {start, end (ISO 8601 UTC), dur_s},
``summary`` {traces, background_traces, by_outcome, decided, success_rate, failure_rate,
retry_rate, rejected_rate, unknown_rate, throughput_rps}, ``operations``, ``components``, ``timeline``, ``hosts``, ``errors``, ``phases``,
``locks``, ``rpc``, ``client_server`` (runs of ``stacklens run``: client records joined
to traces, else null), ``clocks`` (per host and day: offset_s, uncertainty_s, status, violations
before/after correction), ``slowest``, ``failed``, ``waterfalls`` {trace_id: [span rows with start_s
and dur_s relative to the trace start]}, ``ingest`` {files, files_skipped, lines, records,
quarantined, stats, quarantine_sample}. Rates are defined once, in
:mod:`stacklens.analyze.queries` (success rate over decided requests: requests minus rejected
minus unknown); throughput is completed requests (success + retried) per second of the window.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

import duckdb
import polars as pl

from stacklens import __version__
from stacklens.analyze.findings import findings
from stacklens.analyze.local_time import local_time_findings
from stacklens.analyze.queries import CLIENT_QUERIES, QUERIES
from stacklens.analyze.templates import TemplateMiner, error_text
from stacklens.store import RunStore

__all__ = ["REPORT_FORMAT_VERSION", "analyze", "mine_error_templates"]

REPORT_FORMAT_VERSION = 1
_BREAKDOWN_OPS = 15
_OUTCOMES = ("success", "retried", "failed", "rejected", "unknown")


def _iso(ns: int | None) -> str | None:
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )


def _clean(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def _rows(con: duckdb.DuckDBPyConnection, name: str) -> list[dict[str, Any]]:
    cur = con.execute({**QUERIES, **CLIENT_QUERIES}[name])
    cols = [d[0] for d in cur.description]
    return [{c: _clean(v) for c, v in zip(cols, r, strict=True)} for r in cur.fetchall()]


def mine_error_templates(events: pl.DataFrame, traces: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Mine Drain3 templates over ERROR/CRITICAL records.

    Returns ``templates`` (:data:`stacklens.schema.TEMPLATES`) and ``error_templates``
    (``trace_id``, ``template_id``, ``template``: the template of each failed trace's first
    error)."""
    miner = TemplateMiner()
    errs = events.filter(pl.col("level").is_in(["ERROR", "CRITICAL"])).select("message", "continuation")
    for m, c in errs.iter_rows():
        if m is not None:
            miner.add(error_text(m, c))
    tpl = pl.DataFrame(
        miner.templates(), schema=["template_id", "template", "n_events"], orient="row"
    )
    failed = traces.filter(pl.col("error").is_not_null()).select(
        "trace_id", "error", "error_file", "error_line_no"
    ).join(  # the first error's traceback, for messages that are only on the following lines
        events.select(pl.col("file").alias("error_file"), pl.col("line_no").alias("error_line_no"),
                      "continuation"),
        on=["error_file", "error_line_no"], how="left", maintain_order="left",
    )
    ids = [miner.add(error_text(e, c)) for e, c in failed.select("error", "continuation").iter_rows()]
    et = failed.with_columns(template_id=pl.Series(ids, dtype=pl.Int64)).with_columns(
        template=pl.Series([miner.template_of(i) for i in ids], dtype=pl.String)
    )
    return {"templates": tpl, "error_templates": et.select("trace_id", "template_id", "template")}


def _waterfalls(spans: pl.DataFrame, trace_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    sel = spans.filter(  # spans of untimed logs (null times) have no place in a waterfall
        pl.col("trace_id").is_in(trace_ids) & pl.col("start_ns").is_not_null()
        & pl.col("end_ns").is_not_null()
    ).with_columns(
        t0=pl.col("start_ns").min().over("trace_id")
    )
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in trace_ids}
    for r in sel.sort("trace_id", "start_ns").iter_rows(named=True):
        out[r["trace_id"]].append(
            {
                "span_id": r["span_id"],
                "parent_span_id": r["parent_span_id"],
                "service": r["service"],
                "host": r["host"],
                "operation": r["operation"],
                "start_s": (r["start_ns"] - r["t0"]) / 1e9,
                "dur_s": (r["end_ns"] - r["start_ns"]) / 1e9,
                "status": r["status"],
                "end_exact": bool(r["end_exact"]),
            }
        )
    return out


def analyze(store: RunStore, *, quarantine_sample: int = 200) -> dict[str, Any]:
    """Run every analysis on ``store`` (which must hold the ingest and trace tables) and return
    the report dict described in the module docstring. Writes the ``templates`` table.

    Raises :class:`~stacklens.errors.StoreError` when a stage's tables are missing.
    """
    events = store.read("events")
    traces = store.read("traces")
    mined = mine_error_templates(events, traces)
    store.write(mined)
    manifest = store.manifest()
    with store.connect(read_only=True) as con:
        s = _rows(con, "summary")[0]
        background = _rows(con, "background")[0]["n"]
        res = {n: _rows(con, n) for n in (
            "operations", "components", "timeline", "hosts", "errors", "slowest", "failed",
            "phases", "locks", "rpc", "ingest_totals", "clocks",
        )}
        stats = con.sql(
            'SELECT file, kind, severity, "count", detail FROM ingest_stats '
            "WHERE kind NOT IN ('format') ORDER BY severity DESC, \"count\" DESC LIMIT 500"
        ).pl()
        client = None
        if store.has("requests"):
            client = {
                "summary": _rows(con, "client_server_summary")[0],
                "rows": _rows(con, "client_server"),
            }
        found = findings(con, {t for t in ("events", "traces", "spans", "breakdown", "requests",
                                           "error_templates", "clock_offsets", "ingest_stats",
                                           "phases")
                               if store.has(t)})
        if all(store.has(t) for t in ("requests", "traces", "spans")):
            found += local_time_findings(con)
        qn = con.execute("SELECT count(*) FROM quarantine").fetchall()[0][0]
        qs = con.sql(
            f"SELECT file, line_no, reason, raw FROM quarantine ORDER BY file, line_no "
            f"LIMIT {int(quarantine_sample)}"
        ).pl()
    # the breakdown chart shows the operations that take the most time in all
    heavy = sorted(res["operations"], key=lambda o: -(o["total_s"] or 0))[:_BREAKDOWN_OPS]
    rank = {o["operation"]: i for i, o in enumerate(heavy)}
    res["components"] = sorted(
        (c for c in res["components"] if c["operation"] in rank),
        key=lambda c: rank[c["operation"]],
    )
    n = s["traces"] or 0
    start, end = s["start_ns"], s["end_ns"]
    window_s = (end - start) / 1e9 if n and end > start else 0.0
    by = {k: int(s[k] or 0) for k in _OUTCOMES}
    done = by["success"] + by["retried"]
    for r in res["timeline"]:
        m = r.pop("minute_s")  # null for traces without times (untimed logs)
        r["minute"] = _iso(None if m is None else int(m) * 1_000_000_000)
    for key in ("slowest", "failed"):
        for r in res[key]:
            r["start"] = _iso(r.pop("start_ns"))
    wf_ids = list(dict.fromkeys([r["trace_id"] for r in res["failed"][:100] + res["slowest"]]))
    lines = int(events.height and manifest.get("ingest", {}).get("lines", 0))
    return {
        "format_version": REPORT_FORMAT_VERSION,
        "stacklens_version": __version__,
        "inputs": manifest.get("inputs", []),
        "timezone_assumption": manifest.get("ingest", {}).get("timezone_assumption", "UTC"),
        "findings": found,
        "window": {"start": _iso(start), "end": _iso(end), "dur_s": window_s},
        "summary": {
            "traces": n,
            "background_traces": background,
            "by_outcome": by,
            # rates over decided requests (requests - rejected - unknown): analyze/queries.py
            "decided": int(s["decided"] or 0),
            **{k: s[k] for k in ("success_rate", "failure_rate", "retry_rate", "rejected_rate",
                                 "unknown_rate")},
            "throughput_rps": done / window_s if window_s else None,
        },
        **{k: res[k] for k in ("operations", "components", "timeline", "hosts", "errors",
                               "phases", "locks", "rpc", "slowest", "failed", "clocks")},
        "client_server": client,
        "waterfalls": _waterfalls(store.read("spans"), wf_ids),
        "ingest": {
            "files": manifest.get("ingest", {}).get("files_read", 0),
            "files_skipped": manifest.get("ingest", {}).get("files_skipped", 0),
            "lines": lines,
            "records": events.height,
            "quarantined": int(qn),
            "totals": res["ingest_totals"],
            "stats": stats.to_dicts(),
            "quarantine_sample": qs.to_dicts(),
        },
    }
