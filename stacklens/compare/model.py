"""Compare runs: the same statistics side by side, the change and whether it is significant.

:func:`compare_runs` takes two or more :class:`~stacklens.compare.load.RunData` (the first is the
baseline) and returns one plain, JSON-ready dict (format :data:`COMPARE_FORMAT_VERSION`)::

    {"compare_format_version": 1, "baseline": name, "threshold": 0.1, "alpha": 0.05,
     "runs":       [{"name", "path", "meta", "notes", "summary": {...}}],
     "summary":    [{"metric", "values": [per run], "changes": [per other run]}],
     "operations": [{"operation", "stats": [per run], "changes": [per other run]}],
     "components": [{"operation", "component", "stats": [...], "changes": [...]}],
     "client":     [{"scenario", "stats": [...], "changes": [...]}],
     "metadata":   [{"key", "values": [per run], "differs": bool}],
     "regressions": [str], "warnings": [str]}

``stats`` per run: ``n``, ``p50_s``, ``p95_s``, ``p99_s`` (``percentile_cont``), and for
operations ``success_rate``, ``failure_rate``, ``retry_rate`` (the definitions of
:mod:`stacklens.analyze.queries`: decided = requests - rejected - unknown, success =
(success + retried) / decided) and ``throughput_rps`` (requests / (last end - first start)).

A ``change`` of durations: ``ratio`` = median(run) / median(baseline), its bootstrap interval
``ci`` (95 %, fixed seed), the Mann-Whitney ``p_value``, ``significant`` (p < alpha and the
interval excludes 1), the ``verdict`` in words as pyperf's ``compare_to`` gives it
("2.30x slower, significant", "1.52x faster, significant", "no significant change"),
``warnings`` (few samples, high spread) and ``regression``: significant and slower by more
than ``threshold`` (0.1 = 10 %). Success-rate changes use a two-proportion z-test; a
significant fall by more than ``threshold`` of the baseline rate is a regression too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from stacklens.compare.load import RunData
from stacklens.compare.stats import bootstrap_ratio_ci, mann_whitney, percentile, two_proportions

__all__ = ["COMPARE_FORMAT_VERSION", "compare_runs", "duration_change"]


#: Format history: 1 = first format (issue 11).
COMPARE_FORMAT_VERSION = 1

#: Fewer samples than this on a side: a warning (pyperf warns under a few runs too).
FEW_SAMPLES = 10
#: Relative spread (interquartile range / median) above which a warning says so.
HIGH_SPREAD = 0.5


def _num(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(float(x), nd)


def _dur_stats(xs: Sequence[float]) -> dict[str, Any]:
    return {"n": len(xs), "p50_s": _num(percentile(xs, 0.50)),
            "p95_s": _num(percentile(xs, 0.95)), "p99_s": _num(percentile(xs, 0.99))}


def _spread(xs: Sequence[float]) -> float | None:
    med = percentile(xs, 0.5)
    q1, q3 = percentile(xs, 0.25), percentile(xs, 0.75)
    if not med or q1 is None or q3 is None:
        return None
    return (q3 - q1) / med


def duration_change(base: Sequence[float], other: Sequence[float], threshold: float,
                    alpha: float = 0.05) -> dict[str, Any]:
    """The change from ``base`` to ``other`` (durations in seconds) with its significance.

    Returns ``{"ratio", "ci": [lo, hi] | None, "p_value", "significant", "verdict",
    "warnings": [str], "regression"}`` (shapes in the module docstring).
    """
    warnings: list[str] = []
    if not base or not other:
        which = "baseline" if not base else "this run"
        return {"ratio": None, "ci": None, "p_value": None, "significant": False,
                "verdict": f"not in {which}", "warnings": [], "regression": False}
    for label, xs in (("baseline", base), ("this run", other)):
        if len(xs) < FEW_SAMPLES:
            warnings.append(f"only {len(xs)} samples in {label}: the result is fragile")
        sp = _spread(xs)
        if sp is not None and sp > HIGH_SPREAD:
            warnings.append(f"spread is high in {label}: interquartile range is "
                            f"{sp:.0%} of the median")
    mb, mo = percentile(base, 0.5), percentile(other, 0.5)
    ratio = (mo / mb) if mb and mo is not None else None
    ci = bootstrap_ratio_ci(base, other)
    _, p = mann_whitney(base, other)
    significant = bool(p < alpha and ci is not None and not (ci[0] <= 1.0 <= ci[1]))
    if ratio is None:
        verdict = "no change (both medians 0 s)" if not mo else "baseline median is 0: no ratio"
    elif not significant:
        verdict = "no significant change"
    elif ratio >= 1.0:
        verdict = f"{ratio:.2f}x slower, significant"
    else:
        verdict = f"{1 / ratio:.2f}x faster, significant" if ratio > 0 else "faster, significant"
    return {"ratio": _num(ratio), "ci": [_num(ci[0]), _num(ci[1])] if ci else None,
            "p_value": _num(p, 6), "significant": significant, "verdict": verdict,
            "warnings": warnings,
            "regression": bool(significant and ratio is not None and ratio > 1.0 + threshold)}


def _counts(t: pl.DataFrame) -> dict[str, Any]:
    """Outcome counts and rates of request rows ``t`` (queries.py's ``summary`` definitions)."""
    vc = dict(t.group_by("outcome").len().iter_rows()) if t.height else {}
    c = {o: int(vc.get(o, 0)) for o in ("success", "retried", "failed", "rejected", "unknown")}
    decided = c["success"] + c["retried"] + c["failed"]
    window_s = None
    if t.height:
        lo, hi = t["start_ns"].min(), t["end_ns"].max()
        if isinstance(lo, int) and isinstance(hi, int) and hi > lo:
            window_s = (hi - lo) / 1e9
    return {"requests": t.height, **c, "decided": decided,
            "success_rate": _num((c["success"] + c["retried"]) / decided if decided else None),
            "failure_rate": _num(c["failed"] / decided if decided else None),
            "retry_rate": _num(c["retried"] / decided if decided else None),
            "rejected_rate": _num(c["rejected"] / t.height if t.height else None),
            "window_s": _num(window_s, 3),
            "throughput_rps": _num(t.height / window_s if window_s else None)}


def _rate_change(base: dict[str, Any], other: dict[str, Any], threshold: float,
                 alpha: float) -> dict[str, Any]:
    """Change of the success rate between two :func:`_counts` results."""
    b, o = base.get("success_rate"), other.get("success_rate")
    if b is None or o is None:
        return {"delta": None, "p_value": None, "significant": False,
                "verdict": "no decided requests", "regression": False}
    kb = base["success"] + base["retried"]
    ko = other["success"] + other["retried"]
    p = two_proportions(kb, base["decided"], ko, other["decided"])
    sig = p < alpha
    delta = o - b
    verdict = ("no significant change" if not sig else
               f"success rate {'up' if delta > 0 else 'down'} {abs(delta) * 100:.1f} points, "
               "significant")
    return {"delta": _num(delta), "p_value": _num(p, 6), "significant": sig, "verdict": verdict,
            "regression": bool(sig and o < b * (1.0 - threshold))}


def _series(df: pl.DataFrame, keys: list[str], value: str) -> dict[tuple[str, ...], list[float]]:
    out: dict[tuple[str, ...], list[float]] = {}
    if df.height == 0:
        return out
    for row in df.filter(pl.col(value).is_not_null()).group_by(keys).agg(
            pl.col(value)).iter_rows():
        out[tuple(str(k) for k in row[:-1])] = list(row[-1])
    return out


def _grouped(runs: Sequence[RunData], frames: list[pl.DataFrame], keys: list[str], value: str,
             threshold: float, alpha: float) -> list[dict[str, Any]]:
    series = [_series(f, keys, value) for f in frames]
    all_keys = sorted(set().union(*[set(s) for s in series]),
                      key=lambda k: (-sum(len(s.get(k, [])) for s in series), k))
    rows = []
    for k in all_keys:
        samples = [s.get(k, []) for s in series]
        rows.append({**dict(zip(keys, k, strict=True)),
                     "stats": [_dur_stats(x) for x in samples],
                     "changes": [{"run": runs[i].name, **duration_change(
                         samples[0], samples[i], threshold, alpha)}
                                 for i in range(1, len(runs))]})
    return rows


def _operations(runs: Sequence[RunData], threshold: float, alpha: float) -> list[dict[str, Any]]:
    rows = _grouped(runs, [r.traces for r in runs], ["operation"], "dur_s", threshold, alpha)
    for row in rows:
        for i, r in enumerate(runs):
            c = _counts(r.traces.filter(pl.col("operation") == row["operation"]))
            row["stats"][i].update({k: c[k] for k in (
                "success_rate", "failure_rate", "retry_rate", "throughput_rps")})
    return rows


def _client(runs: Sequence[RunData], threshold: float, alpha: float) -> list[dict[str, Any]]:
    frames = [r.client if r.client is not None else pl.DataFrame(
        schema={"scenario": pl.String, "create_s": pl.Float64}) for r in runs]
    rows = _grouped(runs, frames, ["scenario"], "create_s", threshold, alpha)
    for row in rows:
        for i, f in enumerate(frames):
            if "outcome" not in f.columns:
                continue
            g = f.filter(pl.col("scenario") == row["scenario"])
            done = g.filter(pl.col("outcome").is_not_null())
            ok = done.filter(pl.col("outcome") == "ok").height
            lo, hi = g["submit_ns"].min(), g["end_ns"].max()
            win = (hi - lo) / 1e9 if isinstance(lo, int) and isinstance(hi, int) and hi > lo \
                else None
            row["stats"][i].update({
                "success_rate": _num(ok / done.height if done.height else None),
                "failures": done.height - ok,
                "throughput_rps": _num(g.height / win if win else None)})
    return rows


def _metadata(runs: Sequence[RunData]) -> list[dict[str, Any]]:
    keys: list[str] = []
    for r in runs:
        keys += [k for k in r.meta if k not in keys]
    out = []
    for k in keys:
        vals = [r.meta.get(k) for r in runs]
        shown = [", ".join(v) if isinstance(v, list) else v for v in vals]
        out.append({"key": k, "values": shown,
                    "differs": len({repr(v) for v in shown}) > 1})
    return out


def compare_runs(runs: Sequence[RunData], threshold: float = 0.10,
                 alpha: float = 0.05) -> dict[str, Any]:
    """Compare ``runs`` (first = baseline); the result's shape is in the module docstring.

    Raises ``ValueError`` with fewer than two runs or a negative threshold.
    """
    if len(runs) < 2:
        raise ValueError("compare needs at least two runs")
    if threshold < 0:
        raise ValueError("--threshold must be >= 0")
    summaries = [_counts(r.traces) for r in runs]
    summary_rows: list[dict[str, Any]] = []
    for metric in ("requests", "success_rate", "failure_rate", "retry_rate", "rejected_rate",
                   "throughput_rps"):
        row: dict[str, Any] = {"metric": metric, "values": [s[metric] for s in summaries],
                               "changes": []}
        for i in range(1, len(runs)):
            b, o = summaries[0][metric], summaries[i][metric]
            ch: dict[str, Any] = {"run": runs[i].name, "delta": _num(o - b) if
                                  b is not None and o is not None else None}
            if metric == "success_rate":
                ch.update(_rate_change(summaries[0], summaries[i], threshold, alpha))
            elif metric == "throughput_rps" and b and o:
                ch["ratio"] = _num(o / b)
                ch["verdict"] = f"{o / b:.2f}x the baseline's (one value per run: no test)"
            row["changes"].append(ch)
        summary_rows.append(row)
    ops = _operations(runs, threshold, alpha)
    comps = _grouped(runs, [r.breakdown for r in runs], ["operation", "component"], "dur_s",
                     threshold, alpha)
    client = _client(runs, threshold, alpha) if any(r.client is not None for r in runs) else []
    regressions = []
    for row in summary_rows:
        for ch in row["changes"]:
            if ch.get("regression"):
                regressions.append(f"{ch['run']}: {ch['verdict']}")
    for kind, rows, label in (("operation", ops, "operation"), ("client", client, "scenario")):
        for row in rows:
            for ch in row["changes"]:
                if ch["regression"]:
                    regressions.append(f"{ch['run']}: {kind} {row[label]}: {ch['verdict']} "
                                       f"(median x{ch['ratio']}, 95% CI {ch['ci']})")
    warnings = [f"{r.name}: {n}" for r in runs for n in r.notes]
    meta = _metadata(runs)
    if any(m["differs"] and m["key"] == "stacklens_version" for m in meta):
        warnings.append("the runs were analysed by different stacklens versions")
    if any(m["differs"] and m["key"] == "source" for m in meta):
        warnings.append("the runs come from different sources (logs, OSProfiler, Rally): "
                        "their durations do not measure the same span of work")
    return {
        "compare_format_version": COMPARE_FORMAT_VERSION,
        "baseline": runs[0].name, "threshold": threshold, "alpha": alpha,
        "runs": [{"name": r.name, "path": str(r.path), "meta": r.meta, "notes": r.notes,
                  "summary": s} for r, s in zip(runs, summaries, strict=True)],
        "summary": summary_rows, "operations": ops, "components": comps, "client": client,
        "metadata": meta, "regressions": regressions, "warnings": warnings,
    }
