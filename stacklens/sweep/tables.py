"""From raw tool output to the sweep tables (``sweep_points``, ``sweep_repeats``,
``sweep_summary``; columns in :mod:`stacklens.schema`).

The raw JSON files are the truth: the runner (or ``sweep analyze``) hands over
:class:`PointRun` records naming each target's raw file, and every number is read from those
files here, so the tables can be rebuilt from a sweep folder at any time. Failed targets and
failed or partial repeats keep a row with their reason; the summary's medians use the repeats
whose every target succeeded and count the others.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl

from stacklens.sweep.fio import FioResult, consistency_flags, merge_fio, parse_fio
from stacklens.sweep.iperf import IperfResult, merge_iperf, parse_iperf
from stacklens.sweep.plan import parse_bs

__all__ = ["Limits", "PointRun", "TargetRun", "build_tables", "summarize"]


@dataclass(frozen=True)
class TargetRun:
    """One target's part of one point repeat. ``raw`` is the tool's JSON file (None when the
    tool produced nothing); ``status`` ``ok`` or ``failed`` as the runner saw it (an ok
    target whose file turns out unreadable becomes failed here). Times: ``start_ns`` is when
    the target says it started (controller clock), ``start_lag_ms`` its lag behind the
    barrier, ``clock_offset_ms`` target clock minus controller clock."""

    target: str
    status: str
    reason: str | None = None
    raw: str | None = None
    start_ns: int | None = None
    start_lag_ms: float | None = None
    clock_offset_ms: float | None = None


@dataclass(frozen=True)
class PointRun:
    """One repeat of one point with the run of each of its targets. ``params`` holds the
    matrix values (rw, bs, iodepth, numjobs / protocol, parallel, reverse); ``sweep`` names
    the series the point belongs to (the plan, or a folder for ``sweep analyze``)."""

    sweep: str
    tool: str
    point: str
    repeat: int
    n_targets: int
    params: dict[str, Any]
    targets: tuple[TargetRun, ...]
    reason: str | None = None


@dataclass(frozen=True)
class Limits:
    """Sanity bounds on a repeat's sums (None: unchecked)."""

    bw_mib_s: float | None = None
    iops: float | None = None
    pair_mbit_s: float | None = None
    total_mbit_s: float | None = None


_PARAMS = ("rw", "bs", "iodepth", "numjobs", "protocol", "parallel", "reverse")


def _read(path: str, base: Path | None) -> Any:
    p = Path(path)
    if base is not None and not p.is_absolute():
        p = base / p
    return json.loads(p.read_text(encoding="utf-8", errors="replace"))


def _fio_cols(r: FioResult) -> dict[str, Any]:
    us = {f"lat_p{str(p).replace('.0', '').replace('.', '')}_us": r.pct_ns[p] / 1000.0
          for p in r.pct_ns}
    return {"bw_mib_s": r.bw_mib_s, "iops": r.iops, "io_bytes": r.io_bytes,
            "runtime_s": r.runtime_ms / 1000.0,
            "lat_mean_us": r.clat_mean_ns / 1000.0 if r.clat_mean_ns is not None else None,
            **us}


def _iperf_cols(r: IperfResult) -> dict[str, Any]:
    return {"bw_mbit_s": r.mbit_s, "runtime_s": r.seconds, "retransmits": r.retransmits,
            "lost_percent": r.lost_percent, "jitter_ms": r.jitter_ms}


def _parse(tool: str, doc: Any, params: dict[str, Any]) -> FioResult | IperfResult:
    if tool == "fio":
        return parse_fio(doc, params.get("rw"))
    return parse_iperf(doc)


def build_tables(runs: Iterable[PointRun], limits: Limits = Limits(),
                 base: Path | None = None) -> dict[str, pl.DataFrame]:
    """``sweep_points`` (point x repeat x target), ``sweep_repeats`` (point x repeat, summed
    over targets) and ``sweep_summary`` (point, over repeats) from ``runs``; raw paths are
    relative to ``base``. Never raises for bad raw files: the target is failed with the
    reason."""
    prow: list[dict[str, Any]] = []
    rrow: list[dict[str, Any]] = []
    for run in runs:
        common = {"sweep": run.sweep, "tool": run.tool, "point": run.point,
                  "repeat": run.repeat, "n_targets": run.n_targets,
                  **{k: run.params.get(k) for k in _PARAMS},
                  "bs_bytes": parse_bs(run.params["bs"]) if run.params.get("bs") else None}
        ok: list[Any] = []
        for t in run.targets:
            row = {**common, "target": t.target, "status": t.status, "reason": t.reason,
                   "raw": t.raw, "start_ns": t.start_ns, "start_lag_ms": t.start_lag_ms,
                   "clock_offset_ms": t.clock_offset_ms}
            if t.raw is not None:
                try:
                    res = _parse(run.tool, _read(t.raw, base), run.params)
                except (OSError, ValueError, KeyError, TypeError) as e:
                    row.update(status="failed", reason=row["reason"] or
                               f"unreadable {run.tool} output: {e}")
                else:
                    row.update(_fio_cols(res) if isinstance(res, FioResult)
                               else _iperf_cols(res))
                    if res.error:
                        row.update(status="failed", reason=row["reason"] or res.error)
                    if row["status"] == "ok":
                        ok.append(res)
            elif row["status"] == "ok":
                row.update(status="failed", reason="no output")
            prow.append(row)
        rrow.append(_repeat_row(run, common, ok, limits))
    points = pl.DataFrame(prow, infer_schema_length=None) if prow else pl.DataFrame()
    repeats = pl.DataFrame(rrow, infer_schema_length=None) if rrow else pl.DataFrame()
    return {"sweep_points": points, "sweep_repeats": repeats,
            "sweep_summary": summarize(rrow)}


def _repeat_row(run: PointRun, common: dict[str, Any], ok: list[Any],
                limits: Limits) -> dict[str, Any]:
    n = len(run.targets)
    status = "ok" if ok and len(ok) == n else "partial" if ok else "failed"
    reasons = [t.reason for t in run.targets if t.reason]
    lags = [t.start_lag_ms for t in run.targets if t.start_lag_ms is not None]
    row: dict[str, Any] = {**common, "status": status, "n_ok": len(ok),
                           "reason": run.reason or ("; ".join(dict.fromkeys(reasons)) or None),
                           "start_spread_ms": (max(lags) - min(lags)) if len(lags) > 1 else
                           (0.0 if lags else None)}
    if status == "failed" and not row["reason"]:
        row["reason"] = "no target produced a result"
    flags: list[str] = []
    if ok and run.tool == "fio":
        m = merge_fio(ok)
        row.update(_fio_cols(m))
        row["lat_source"] = ("merged_bins" if m.bins else "fio_reported" if m.pct_ns
                             else "none")
        flags += consistency_flags(m, run.params.get("bs"))
        if limits.bw_mib_s and m.bw_mib_s > limits.bw_mib_s:
            flags.append("above_limit_bw")
        if limits.iops and m.iops > limits.iops:
            flags.append("above_limit_iops")
    elif ok:
        m2 = merge_iperf(ok)
        row.update(_iperf_cols(m2))
        if limits.total_mbit_s and m2.mbit_s > limits.total_mbit_s:
            flags.append("above_limit_total")
        if limits.pair_mbit_s and any(r.mbit_s > limits.pair_mbit_s for r in ok):
            flags.append("above_limit_pair")
        if m2.received_bps <= 0:
            flags.append("no_traffic")
        if m2.seconds < 1.0:
            flags.append("short_test")  # iperf3 rates of a sub-second transfer mean little
    if status == "partial":
        flags.append("partial")
    row["flags"] = ",".join(flags) or None
    return row


def _metric(tool: str) -> str:
    return "bw_mib_s" if tool == "fio" else "bw_mbit_s"


def summarize(rrows: list[dict[str, Any]]) -> pl.DataFrame:
    """``sweep_summary``: one row per (sweep, point) with the median, min and max over its
    ``ok`` repeats of the summed bandwidth / IOPS and the median of the merged percentiles;
    ``spread_pct`` = (max - min) / median of the main metric in percent; failed and partial
    repeats are counted in ``n_failed``. Flags of any repeat are carried."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rrows:
        groups.setdefault((r["sweep"], r["point"]), []).append(r)
    out = []
    for (_sweep, _point), rows in groups.items():
        first = rows[0]
        good = [r for r in rows if r["status"] == "ok"]
        row: dict[str, Any] = {k: first.get(k) for k in
                               ("sweep", "tool", "point", "n_targets", *_PARAMS, "bs_bytes")}
        row.update(n_repeats=len(rows), n_ok=len(good), n_failed=len(rows) - len(good))
        for col in ("bw_mib_s", "iops", "bw_mbit_s", "lat_mean_us", "lat_p50_us", "lat_p95_us",
                    "lat_p99_us", "lat_p999_us", "lost_percent", "jitter_ms"):
            vals = [r[col] for r in good if r.get(col) is not None]
            row[col] = statistics.median(vals) if vals else None
            if col in ("bw_mib_s", "iops", "bw_mbit_s"):
                row[f"{col}_min"] = min(vals) if vals else None
                row[f"{col}_max"] = max(vals) if vals else None
        main = _metric(first["tool"])
        med = row.get(main)
        row["spread_pct"] = (100.0 * (row[f"{main}_max"] - row[f"{main}_min"]) / med
                             if med else None)
        flags = sorted({f for r in rows for f in (r.get("flags") or "").split(",") if f})
        if row["spread_pct"] is not None and row["spread_pct"] > 20 and len(good) > 1:
            flags.append("high_spread")
        row["flags"] = ",".join(flags) or None
        row["reasons"] = "; ".join(dict.fromkeys(
            r["reason"] for r in rows if r["status"] != "ok" and r.get("reason"))) or None
        out.append(row)
    return pl.DataFrame(out, infer_schema_length=None) if out else pl.DataFrame()


def with_reason(run: PointRun, reason: str) -> PointRun:
    """``run`` with every target failed for ``reason`` (a point that could not start)."""
    return replace(run, reason=reason, targets=tuple(
        replace(t, status="failed", reason=t.reason or reason, raw=None) for t in run.targets))

