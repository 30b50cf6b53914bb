"""The inflection point of a sweep: the concurrency (VMs, pairs, iodepth, numjobs) beyond
which the summed throughput stops growing, with a range from the repeats.

Method: Kneedle (Satopää, Albrecht, Irwin, Raghavan, "Finding a 'Kneedle' in a Haystack",
ICDCS workshops 2011) as implemented by the ``kneed`` package (``KneeLocator``, curve
``concave``, direction ``increasing``, sensitivity ``S = 1``), on the median over repeats of
each x. The range is a bootstrap over repeats: :data:`BOOTSTRAP` times, every x draws its
repeats with replacement and takes their median; the knee of each resample is collected and
the range is their 5th..95th percentile (nearest rank). When Kneedle finds no knee on the
medians the answer is "no knee in range" (throughput still grows, or is flat), with the share
of resamples that did find one. After the knee, throughput ``holds`` (within 10 % of its value
at the knee), ``falls`` or ``rises``, judged at the last x of the range. When the x values
grow geometrically (every step a ratio of at least 1.5, like 1, 2, 4, 8 VMs or queue
depths), Kneedle runs on log2(x), as the sweep was designed on that scale; the knee is
reported as an x value either way. A knee whose normalised difference y_n - x_n (Kneedle's
difference curve) is not above :data:`MIN_DIFFERENCE` is dropped: on a straight or convex
curve (throughput still scaling with x) Kneedle may otherwise name the first point.
"""

from __future__ import annotations

import math
import random
import statistics
import warnings
from dataclasses import dataclass
from typing import Any

import polars as pl

__all__ = ["AXES", "BOOTSTRAP", "Knee", "MIN_DIFFERENCE", "find_knees", "knee_of"]

BOOTSTRAP = 200
#: Kneedle's normalised difference (y_n - x_n) a knee must exceed to be reported.
MIN_DIFFERENCE = 0.05
AXES = ("n_targets", "iodepth", "numjobs", "parallel")
_KEYS = ("sweep", "tool", "rw", "bs", "iodepth", "numjobs", "n_targets", "protocol",
         "parallel", "reverse")


@dataclass(frozen=True)
class Knee:
    """The knee of one series along ``axis``: ``knee`` None means no knee in range.
    ``low``/``high`` the bootstrap range, ``share`` of resamples with a knee; ``after``
    holds / falls / rises; throughput in the metric's unit; latencies in us."""

    series: dict[str, Any]
    axis: str
    metric: str
    xs: list[float]
    ys: list[float]
    knee: float | None
    low: float | None
    high: float | None
    share: float
    after: str | None
    y_at_knee: float | None
    y_max: float
    lat_p99_at_knee_us: float | None
    lat_p99_at_max_x_us: float | None

    @property
    def text(self) -> str:
        """One line: ``knee at 4 (range 2..4, 93 % of resamples), then holds``."""
        if self.knee is None:
            return f"no knee in range {self.xs[0]:g}..{self.xs[-1]:g} ({self.share:.0%} of " \
                   "resamples found one)"
        rng = f"{self.low:g}..{self.high:g}" if self.low is not None else "?"
        return f"knee at {self.knee:g} (range {rng}, {self.share:.0%} of resamples), " \
               f"then {self.after}"


def knee_of(xs: list[float], ys: list[float]) -> float | None:
    """Kneedle's knee of a concave increasing curve (None: none found or fewer than 3
    points)."""
    if len(xs) < 3 or len(set(ys)) < 2:
        return None
    from kneed import KneeLocator

    geometric = xs[0] > 0 and all(b / a >= 1.5 for a, b in zip(xs, xs[1:], strict=False))
    u = [math.log2(x) for x in xs] if geometric else list(xs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        k = KneeLocator(u, ys, S=1.0, curve="concave", direction="increasing")
    if k.knee is None:
        return None
    i = u.index(min(u, key=lambda v: abs(v - float(k.knee))))
    # Kneedle's difference curve at the knee (normalised y - normalised x) must be positive:
    # on a convex or straight curve (throughput still scaling) there is no knee to report
    y_lo, y_hi = min(ys), max(ys)
    diff = (ys[i] - y_lo) / (y_hi - y_lo) - (u[i] - u[0]) / (u[-1] - u[0])
    return float(xs[i]) if diff > MIN_DIFFERENCE else None


def _pct(vals: list[float], p: float) -> float:
    s = sorted(vals)
    return s[max(0, min(len(s) - 1, round(p / 100 * len(s) + 0.5) - 1))]


def _series(rows: list[dict[str, Any]], axis: str, metric: str, seed: int,
            series: dict[str, Any]) -> Knee | None:
    by_x: dict[float, list[dict[str, Any]]] = {}
    for r in rows:
        if r.get(metric) is not None and r.get(axis) is not None:
            by_x.setdefault(float(r[axis]), []).append(r)
    xs = sorted(by_x)
    if len(xs) < 3:
        return None
    reps = [[float(r[metric]) for r in by_x[x]] for x in xs]
    ys = [statistics.median(v) for v in reps]
    knee = knee_of(xs, ys)
    rnd = random.Random(seed)
    found = []
    for _ in range(BOOTSTRAP):
        y = [statistics.median(rnd.choices(v, k=len(v))) for v in reps]
        k = knee_of(xs, y)
        if k is not None:
            found.append(k)
    share = len(found) / BOOTSTRAP
    low = high = after = y_k = None
    if knee is not None:
        low, high = (_pct(found, 5), _pct(found, 95)) if found else (knee, knee)
        y_k = ys[xs.index(knee)]
        tail = ys[xs.index(knee) + 1:]
        last = tail[-1] if tail else y_k
        after = ("falls" if last < 0.9 * y_k else "rises" if last > 1.1 * y_k else "holds")

    def lat(x: float | None) -> float | None:
        if x is None:
            return None
        v = [float(r["lat_p99_us"]) for r in by_x[x] if r.get("lat_p99_us") is not None]
        return statistics.median(v) if v else None

    return Knee(series, axis, metric, xs, ys, knee, low, high, share, after, y_k, max(ys),
                lat(knee), lat(xs[-1]))


def find_knees(repeats: pl.DataFrame, axes: tuple[str, ...] = AXES,
               seed: int = 0) -> list[Knee]:
    """Knees of every series in ``sweep_repeats`` (ok repeats only) along each axis of
    ``axes`` that takes at least 3 values in a series; a series is every other key column
    held fixed. Metric: ``bw_mib_s`` for fio, ``bw_mbit_s`` for iperf3."""
    if repeats.is_empty():
        return []
    ok = repeats.filter(pl.col("status") == "ok") if "status" in repeats.columns else repeats
    rows = ok.to_dicts()
    out: list[Knee] = []
    for axis in axes:
        if axis not in repeats.columns:
            continue
        keys = [k for k in _KEYS if k != axis and k in repeats.columns]
        groups: dict[tuple, list[dict[str, Any]]] = {}
        for r in rows:
            groups.setdefault(tuple(r.get(k) for k in keys), []).append(r)
        for gk, grows in sorted(groups.items(), key=lambda kv: str(kv[0])):
            metric = "bw_mib_s" if grows[0]["tool"] == "fio" else "bw_mbit_s"
            series = {k: v for k, v in zip(keys, gk, strict=True) if v is not None}
            k = _series(grows, axis, metric, seed, series)
            if k is not None:
                out.append(k)
    return out
