"""Statistics of a before/after comparison: percentiles, a bootstrap interval, Mann-Whitney U.

Pure functions over plain sequences of floats (seconds); nothing here reads a run.

* :func:`percentile` is SQL's ``percentile_cont`` (linear interpolation between the two closest
  ranks, the definition DuckDB and Spark use in :mod:`stacklens.analyze.queries`), so a p95 here
  equals the report's p95 of the same rows.
* :func:`bootstrap_ratio_ci`: percentile bootstrap interval of the ratio of medians
  ``median(b) / median(a)`` (Efron & Tibshirani, *An Introduction to the Bootstrap*, 1993,
  ch. 13), resampling each run independently with a fixed seed, so the same runs always give
  the same interval.
* :func:`mann_whitney`: two-sided Mann-Whitney U test (Mann & Whitney, *Ann. Math. Statist.*
  18(1), 1947) with the normal approximation, the tie correction of the variance and a
  continuity correction (as ``scipy.stats.mannwhitneyu(method="asymptotic")`` computes it);
  with fewer than 3 samples on a side it returns p = 1.0 (nothing can be concluded).
* :func:`two_proportions`: two-sided z-test of two rates with the pooled variance (Agresti,
  *Categorical Data Analysis*, 3rd ed., 2013, sec. 3.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["bootstrap_ratio_ci", "mann_whitney", "percentile", "two_proportions"]

#: Resamples of the bootstrap (bounded: the cost is n_boot x (len(a) + len(b)) floats).
N_BOOT = 2000
#: Largest sample resampled as is; bigger samples are thinned evenly first (bounded memory).
MAX_BOOT_N = 5000


def percentile(xs: Sequence[float | None], q: float) -> float | None:
    """``percentile_cont(q)`` of ``xs`` (q in [0, 1]); None for an empty sample.

    Linear interpolation at rank ``q * (n - 1)`` of the sorted values; NaN values are dropped.
    """
    v = np.sort(np.asarray([x for x in xs if x is not None], dtype=np.float64))
    v = v[~np.isnan(v)]
    if v.size == 0:
        return None
    pos = q * (v.size - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, v.size - 1)
    return float(v[lo] + (v[hi] - v[lo]) * (pos - lo))


def _thin(v: np.ndarray) -> np.ndarray:
    if v.size <= MAX_BOOT_N:
        return v
    return np.sort(v)[np.linspace(0, v.size - 1, MAX_BOOT_N).astype(int)]


def bootstrap_ratio_ci(a: Sequence[float], b: Sequence[float], level: float = 0.95,
                       n_boot: int = N_BOOT, seed: int = 0) -> tuple[float, float] | None:
    """Percentile-bootstrap interval ``(lo, hi)`` of ``median(b) / median(a)``.

    Returns None when a side is empty or a resampled median of ``a`` is 0 (ratio undefined).
    Deterministic: numpy's PCG64 generator seeded with ``seed``.
    """
    va = _thin(np.asarray(a, dtype=float))
    vb = _thin(np.asarray(b, dtype=float))
    if va.size == 0 or vb.size == 0:
        return None
    rng = np.random.default_rng(seed)
    ma = np.median(va[rng.integers(0, va.size, size=(n_boot, va.size))], axis=1)
    mb = np.median(vb[rng.integers(0, vb.size, size=(n_boot, vb.size))], axis=1)
    if np.any(ma <= 0):
        return None
    r = mb / ma
    alpha = (1.0 - level) / 2.0
    return float(np.quantile(r, alpha)), float(np.quantile(r, 1.0 - alpha))


def _ranks(v: np.ndarray) -> np.ndarray:
    """Average ranks (1-based), ties sharing the mean of their positions."""
    order = np.argsort(v, kind="mergesort")
    sv = v[order]
    ranks = np.empty(v.size, dtype=float)
    i = 0
    while i < v.size:  # bounded: i grows by at least 1 per pass
        j = i
        while j + 1 < v.size and sv[j + 1] == sv[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Two-sided Mann-Whitney U test of ``a`` versus ``b``: ``(U of a, p-value)``.

    U counts the pairs where the ``a`` value is larger (ties count one half). Normal
    approximation with tie and continuity corrections; p = 1.0 when a side has fewer than 3
    values or every value is tied.
    """
    va = np.asarray(a, dtype=float)
    vb = np.asarray(b, dtype=float)
    n1, n2 = va.size, vb.size
    if n1 < 3 or n2 < 3:
        return float("nan"), 1.0
    allv = np.concatenate([va, vb])
    r = _ranks(allv)
    u1 = float(r[:n1].sum() - n1 * (n1 + 1) / 2.0)
    n = n1 + n2
    _, counts = np.unique(allv, return_counts=True)
    tie = float((counts ** 3 - counts).sum())
    var = n1 * n2 / 12.0 * ((n + 1) - tie / (n * (n - 1)))
    if var <= 0:
        return u1, 1.0
    mu = n1 * n2 / 2.0
    z = (abs(u1 - mu) - 0.5) / math.sqrt(var)
    p = math.erfc(max(z, 0.0) / math.sqrt(2.0))
    return u1, min(1.0, p)


def two_proportions(k1: int, n1: int, k2: int, n2: int) -> float:
    """Two-sided p-value that rates ``k1/n1`` and ``k2/n2`` are equal (pooled z-test);
    1.0 when a side is empty or both rates are 0 or 1."""
    if n1 <= 0 or n2 <= 0:
        return 1.0
    p = (k1 + k2) / (n1 + n2)
    se = math.sqrt(p * (1 - p) * (1 / n1 + 1 / n2))
    if se == 0:
        return 1.0
    z = abs(k1 / n1 - k2 / n2) / se
    return math.erfc(z / math.sqrt(2.0))
