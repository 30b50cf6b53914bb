"""Where a sweep's results land: the tables through :class:`~stacklens.store.RunStore`
(Parquet + DuckDB views, ``stacklens sql`` works on them), the knees and ``report.json``.

One function, :func:`finish`, used by both ``sweep run`` (after the runner) and
``sweep analyze`` (after :func:`~stacklens.sweep.foreign.scan`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from stacklens.schema import conform, empty
from stacklens.store import RunStore
from stacklens.sweep.app_run import app_summary, app_tables
from stacklens.sweep.knee import find_knees
from stacklens.sweep.plan import Plan
from stacklens.sweep.report import build_report
from stacklens.sweep.tables import Limits, PointRun, build_tables

__all__ = ["REPORT_NAME", "finish", "plan_limits"]

REPORT_NAME = "report.json"


def plan_limits(plan: Plan) -> Limits:
    """The sanity bounds a plan declares (fio ``limits``, iperf3 ``limits``)."""
    return Limits(
        bw_mib_s=plan.fio.limits.bw_mib_s if plan.fio else None,
        iops=plan.fio.limits.iops if plan.fio else None,
        pair_mbit_s=plan.iperf3.limits.pair_mbit_s if plan.iperf3 else None,
        total_mbit_s=plan.iperf3.limits.total_mbit_s if plan.iperf3 else None)


def finish(out: Path, runs: list[PointRun], limits: Limits | None = None,
           skipped: list[tuple[str, str, str]] | None = None,
           meta: dict[str, Any] | None = None, base: Path | None = None,
           probes: list[dict[str, Any]] | None = None,
           app: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Build the sweep tables from ``runs`` (raw paths relative to ``base``), write them,
    ``sweep_skipped`` and ``sweep_probes`` (rows from the plan's probes) to ``out`` with the
    report (``report.json``); with ``app`` (pgbench journal rows) the ``sweep_app*`` and
    ``sweep_resources`` tables too. Return the report. Raises OSError when ``out`` cannot be
    written."""
    tables = build_tables(runs, limits or Limits(), base=base)
    tables = {name: conform(df, name) if not df.is_empty() else empty(name)
              for name, df in tables.items()}
    rows = [{"file": f, "kind": k, "reason": r} for f, k, r in skipped or []]
    tables["sweep_skipped"] = (conform(pl.DataFrame(rows), "sweep_skipped") if rows
                               else empty("sweep_skipped"))
    tables["sweep_probes"] = (conform(pl.DataFrame(probes, infer_schema_length=None),
                                      "sweep_probes") if probes else empty("sweep_probes"))
    app_rows = app_tables(app or [], base or out)
    for name, rows in app_rows.items():
        tables[name] = (conform(pl.DataFrame(rows, infer_schema_length=None), name) if rows
                        else empty(name))
    RunStore(out).write(tables)
    knees = find_knees(tables["sweep_repeats"])
    rep = build_report(tables, knees, skipped, meta)
    rep["app"] = app_summary(app_rows["sweep_app_repeats"])
    rep["app_failed"] = [r for r in app_rows["sweep_app_repeats"] if r["status"] != "ok"]
    (out / REPORT_NAME).write_text(json.dumps(rep, indent=2, default=str))
    return rep
