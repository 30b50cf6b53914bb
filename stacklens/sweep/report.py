"""The sweep report: plain data first (:func:`build_report`, what ``--json`` prints), then
terminal tables from that data (:func:`render`). Both are pure: the CLI writes.

Sections: ``overview`` (counts, failed and partial repeats, skipped files by kind), ``max``
(the best point of each workload: rw and bs for fio, protocol and streams for iperf3, per
series), ``knees`` (every series along every axis with >= 3 values: the knee, its bootstrap
range, what follows), ``trends`` (the medians along each axis, the seeds' "by VMs" tables),
``by_bs`` (fio bandwidth by block size, the rest held fixed), ``failed`` (every repeat that
was not ok, with its reason), ``flags`` (sanity flags by count), ``skipped`` (files),
``probes`` (latency, jitter and fail-over probes, rows of ``sweep_probes``), ``placement``
(their medians by placement class); :func:`stacklens.sweep.output.finish` adds ``app``
(pgbench per point) and ``app_failed``.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

import polars as pl
from rich.console import Group
from rich.table import Table

from stacklens.sweep.knee import Knee

__all__ = ["REPORT_VERSION", "build_report", "render"]

#: History: 1 = first version (overview, max, knees, trends, by_bs, failed, flags, skipped);
#: 2 = adds ``app``, ``app_failed`` (pgbench TPS/TPM) and ``placement`` (jitter probes), and the
#: sanity ``limits`` used.
REPORT_VERSION = 2
MAX_ROWS = 200  # per section in the terminal; the JSON has everything


def _r(v: Any, nd: int = 1) -> Any:
    return round(v, nd) if isinstance(v, float) else v


def _workload(r: dict[str, Any]) -> str:
    if r["tool"] == "fio":
        return f"{r['rw']} bs={r['bs']}"
    return f"{r['protocol']} P{r['parallel']}{' reverse' if r['reverse'] else ''}"


def _knee_dict(k: Knee) -> dict[str, Any]:
    return {"series": k.series, "axis": k.axis, "metric": k.metric, "x": k.xs,
            "y_median": [_r(y, 3) for y in k.ys], "knee": k.knee, "range": [k.low, k.high]
            if k.knee is not None else None, "share_with_knee": k.share, "after": k.after,
            "y_at_knee": _r(k.y_at_knee, 3), "y_max": _r(k.y_max, 3),
            "lat_p99_at_knee_us": _r(k.lat_p99_at_knee_us, 1),
            "lat_p99_at_max_x_us": _r(k.lat_p99_at_max_x_us, 1), "text": k.text}


def build_report(tables: dict[str, pl.DataFrame], knees: list[Knee],
                 skipped: list[tuple[str, str, str]] | None = None,
                 meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report as JSON-ready data from the sweep tables, knees and skipped files."""
    summ = tables["sweep_summary"].to_dicts() if not tables["sweep_summary"].is_empty() else []
    reps = tables["sweep_repeats"].to_dicts() if not tables["sweep_repeats"].is_empty() else []
    status = Counter(r["status"] for r in reps)
    best: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in summ:
        metric = "bw_mib_s" if r["tool"] == "fio" else "bw_mbit_s"
        if r.get(metric) is None:
            continue
        key = (r["sweep"], r["tool"], _workload(r))
        if key not in best or r[metric] > best[key][metric]:
            best[key] = r
    max_rows = [{"sweep": s, "tool": t, "workload": w, "point": r["point"],
                 "n_targets": r["n_targets"], "iodepth": r.get("iodepth"),
                 "numjobs": r.get("numjobs"), "bw_mib_s": _r(r.get("bw_mib_s"), 3),
                 "iops": _r(r.get("iops"), 1), "lat_p99_us": _r(r.get("lat_p99_us"), 1),
                 "bw_mbit_s": _r(r.get("bw_mbit_s"), 3), "n_repeats": r["n_repeats"],
                 "spread_pct": _r(r.get("spread_pct"), 1)}
                for (s, t, w), r in sorted(best.items())]
    by_bs: dict[tuple, list[tuple[int, float]]] = {}
    for r in summ:
        if r["tool"] == "fio" and r.get("bs_bytes") and r.get("bw_mib_s") is not None:
            bkey = (r["sweep"], r["rw"], r["n_targets"], r["iodepth"], r["numjobs"])
            by_bs.setdefault(bkey, []).append((r["bs_bytes"], r["bw_mib_s"]))
    bs_rows = [{"sweep": k[0], "rw": k[1], "n_targets": k[2], "iodepth": k[3],
                "numjobs": k[4], "bs_bytes": [b for b, _ in sorted(v)],
                "bw_mib_s": [_r(y, 3) for _, y in sorted(v)]}
               for k, v in sorted(by_bs.items(), key=lambda kv: str(kv[0])) if len(v) > 1]
    failed = [{"sweep": r["sweep"], "point": r["point"], "repeat": r["repeat"],
               "status": r["status"], "reason": r.get("reason"), "n_ok": r["n_ok"],
               "n_targets": r["n_targets"]} for r in reps if r["status"] != "ok"]
    flags = Counter(f for r in reps for f in (r.get("flags") or "").split(",") if f)
    skipped = skipped or []
    probes = tables["sweep_probes"].to_dicts() if "sweep_probes" in tables else []
    return {
        "version": REPORT_VERSION,
        "meta": meta or {},
        "overview": {
            "points": len(summ), "repeats": len(reps), "ok": status.get("ok", 0),
            "partial": status.get("partial", 0), "failed": status.get("failed", 0),
            "skipped_files": len(skipped),
            "skipped_by_kind": dict(Counter(k for _, k, _ in skipped)),
        },
        "max": max_rows,
        "knees": [_knee_dict(k) for k in knees],
        "trends": [{"series": k.series, "axis": k.axis, "metric": k.metric, "x": k.xs,
                    "y_median": [_r(y, 3) for y in k.ys]} for k in knees],
        "by_bs": bs_rows,
        "failed": failed,
        "flags": dict(flags),
        "skipped": [{"file": f, "kind": k, "reason": why} for f, k, why in skipped],
        "probes": [{k: _r(v, 4) for k, v in r.items()} for r in probes],
        "placement": placement_classes(probes),
    }


def placement_classes(probes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (kind, placement) of the ok latency / jitter probes: how many, the median of
    ``jitter_ms``, ``loss_pct`` and ``rtt_p50_ms`` (None where the kind has none)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in probes:
        if r.get("kind") in ("latency", "jitter") and r.get("status") == "ok":
            groups.setdefault((r["kind"], r.get("placement") or ""), []).append(r)
    out = []
    for (kind, place), rows in sorted(groups.items()):
        row: dict[str, Any] = {"kind": kind, "placement": place, "n": len(rows)}
        for c in ("jitter_ms", "loss_pct", "rtt_p50_ms"):
            vals = [r[c] for r in rows if r.get(c) is not None]
            row[c] = _r(statistics.median(vals), 4) if vals else None
        out.append(row)
    return out


def _short(series: dict[str, Any]) -> str:
    s = str(series.get("sweep", ""))
    rest = " ".join(f"{k}={v}" for k, v in series.items() if k not in ("sweep", "tool"))
    return f"{s[-40:]} {rest}".strip()


def render(rep: dict[str, Any]) -> Group:
    """Terminal tables (rich) of a report from :func:`build_report`."""
    o = rep["overview"]
    parts: list[Any] = []
    head = Table(title="sweep", show_header=False)
    for k in ("points", "repeats", "ok", "partial", "failed", "skipped_files"):
        head.add_row(k, str(o[k]))
    for k, n in sorted(o["skipped_by_kind"].items()):
        head.add_row(f"  skipped {k}", str(n))
    parts.append(head)
    mx = Table(title="maximum per workload (median over repeats of the sum over targets)")
    for c in ("series", "workload", "at", "MiB/s", "IOPS", "p99 us", "Mbit/s", "repeats",
              "spread %"):
        mx.add_column(c, justify="left" if c in ("series", "workload", "at") else "right")
    for r in rep["max"][:MAX_ROWS]:
        at = f"n={r['n_targets']}" + (f" qd={r['iodepth']} nj={r['numjobs']}"
                                      if r["tool"] == "fio" else "")
        mx.add_row(str(r["sweep"])[-40:], r["workload"], at,
                   *("" if r[c] is None else f"{r[c]:,.1f}" for c in
                     ("bw_mib_s", "iops", "lat_p99_us", "bw_mbit_s")),
                   str(r["n_repeats"]), "" if r["spread_pct"] is None
                   else f"{r['spread_pct']:.0f}")
    parts.append(mx)
    if rep["knees"]:
        kt = Table(title="inflection points (Kneedle on the medians, bootstrap range)")
        for c in ("series", "axis", "x", "median throughput", "knee"):
            kt.add_column(c)
        for k in rep["knees"][:MAX_ROWS]:
            kt.add_row(_short(k["series"]), k["axis"], " ".join(f"{x:g}" for x in k["x"]),
                       " ".join(f"{y:,.0f}" for y in k["y_median"]), k["text"])
        parts.append(kt)
    if rep["by_bs"]:
        bt = Table(title="fio bandwidth by block size (median MiB/s)")
        for c in ("series", "rw", "n", "qd", "nj", "bs -> MiB/s"):
            bt.add_column(c)
        for r in rep["by_bs"][:MAX_ROWS]:
            bt.add_row(str(r["sweep"])[-30:], r["rw"], str(r["n_targets"]), str(r["iodepth"]),
                       str(r["numjobs"]), "  ".join(
                           f"{b // 1024}k: {y:,.0f}" for b, y in
                           zip(r["bs_bytes"], r["bw_mib_s"], strict=True)))
        parts.append(bt)
    if rep["failed"]:
        ft = Table(title="failed and partial repeats (kept, never dropped)")
        for c in ("series", "point", "repeat", "status", "ok/targets", "reason"):
            ft.add_column(c)
        for r in rep["failed"][:MAX_ROWS]:
            ft.add_row(str(r["sweep"])[-30:], r["point"], str(r["repeat"]), r["status"],
                       f"{r['n_ok']}/{r['n_targets']}", str(r["reason"])[:120])
        parts.append(ft)
    if rep["flags"]:
        fl = Table(title="sanity flags (repeats)")
        fl.add_column("flag")
        fl.add_column("repeats", justify="right")
        for f, n in sorted(rep["flags"].items()):
            fl.add_row(f, str(n))
        parts.append(fl)
    if rep.get("probes"):
        pt = Table(title="network probes (continuous ping)")
        for c in ("probe", "rep", "placement", "status", "loss %", "rtt p50 ms", "rtt p99 ms",
                  "outage s", "fault s", "reason"):
            pt.add_column(c)
        for r in rep["probes"][:MAX_ROWS]:
            pt.add_row(r["probe"], str(r["repeat"]), r.get("placement") or "", r["status"],
                       *("" if r.get(c) is None else f"{r[c]:g}" for c in
                         ("loss_pct", "rtt_p50_ms", "rtt_p99_ms", "outage_s", "fault_s")),
                       (r.get("reason") or "")[:80])
        parts.append(pt)
    if rep.get("placement"):
        lt = Table(title="latency by placement class (medians over ok probes)")
        for c in ("kind", "placement", "n", "jitter ms", "loss %", "rtt p50 ms"):
            lt.add_column(c)
        for r in rep["placement"]:
            lt.add_row(r["kind"], r["placement"], str(r["n"]), *(
                "" if r[c] is None else f"{r[c]:g}" for c in ("jitter_ms", "loss_pct",
                                                              "rtt_p50_ms")))
        parts.append(lt)
    parts += _app_parts(rep)
    if rep["skipped"]:
        st = Table(title=f"skipped files ({len(rep['skipped'])}; all of them in --json)")
        for c in ("kind", "file", "reason"):
            st.add_column(c)
        for r in rep["skipped"][:20]:
            st.add_row(r["kind"], r["file"][-70:], r["reason"][:60])
        parts.append(st)
    return Group(*parts)


def _app_parts(rep: dict[str, Any]) -> list[Any]:
    parts: list[Any] = []
    if rep.get("app"):
        at = Table(title="application workload: pgbench (median over ok repeats of the sum "
                         "over clients)")
        for c in ("point", "clients", "conns", "TPS", "TPS min-max", "TPM", "lat ms",
                  "cpu %", "ok/repeats"):
            at.add_column(c, justify="left" if c == "point" else "right")
        for r in rep["app"][:MAX_ROWS]:
            def f(v: Any, fmt: str = ",.1f") -> str:
                return "" if v is None else format(v, fmt)
            at.add_row(r["point"], str(r["n_targets"]), str(r["connections"]), f(r["tps"]),
                       f"{f(r['tps_min'])}-{f(r['tps_max'])}", f(r["tpm"], ",.0f"),
                       f(r["lat_mean_ms"], ".3f"), f(r["cpu_pct_mean"]),
                       f"{r['n_ok']}/{r['n_repeats']}")
        parts.append(at)
    if rep.get("app_failed"):
        ft = Table(title="pgbench repeats not ok (kept)")
        for c in ("point", "repeat", "status", "reason"):
            ft.add_column(c)
        for r in rep["app_failed"][:MAX_ROWS]:
            ft.add_row(r["point"], str(r["repeat"]), r["status"], str(r["reason"])[:120])
        parts.append(ft)
    return parts
