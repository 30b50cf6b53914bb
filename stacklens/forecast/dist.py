"""Empirical service-time distributions with their dependence on load.

A :class:`LoadDist` holds, for one model stage (e.g. the nova-scheduler's part of one boot),
the quantiles of the measured times in a few bins of *load* (boots in flight on the server side
when the stage started), and a straight line ``t = a + b * load`` fitted over every sample, used
only beyond the highest calibrated load (capped by the knob ``max_slowdown``). Sampling is
inverse-transform: a uniform ``u`` in [0, 1) is read off the bin's quantile curve, linearly
interpolated, so the model reproduces the measured spread, not only the median.

Why bins and a line: on the lab (2 cores for every service) a stage's time grows with the work
in flight because the processes share the CPU; on a real cloud the same shape comes from shared
databases and brokers. The bins keep the measured shape where it was measured; the line is the
simplest extrapolation that keeps its direction.

Why at least in proportion beyond the bins (``saturating``): the line is fitted over loads the
calibration saw, where the controller was not yet saturated, and its slope is that regime's.
Beyond them a saturated server's response time grows at least linearly with the jobs in it
(operational analysis's asymptotic bound, ``R(N) >= N * D_max - Z``: Lazowska et al., 1984,
*Quantitative System Performance*, ch. 5; processor sharing: each of ``n`` jobs progresses at
``cores / n``). So for the controller's stages that no simulated server serves (the model
passes ``saturating``: :data:`~stacklens.forecast.cloud.UNSERVED_STAGES`) the multiplier
beyond the highest bin is the larger of the line's and ``load / top``, ``top`` the highest
bin's mean load. On the lab runs of 2026-11-28 (session 25's) the K=4 calibration read the
allocations only at ``pipeline`` 0-1.8 (bins' means), where the K=8 storm's first claim read
them in the burst: 65-143 ms per request in the five runs' first holds. The shipped model
draws 52-84 ms there (six seeds), and 25-33 ms along the line (three seeds). Stages served on the model's API,
conductor and scheduler workers grow through those workers' queues, and a compute's own
stages run on its host, which a bigger storm does not share more: they keep the line.

Why the builds per bin (``building``, calibration format 7): a bigger cloud runs more builds at
the same ``pipeline`` load (more hosts, each with its build slots), and their conductor calls
and placement reads share the controller with the stages of the boots still in the control
plane. Bins by ``pipeline`` alone held the lab's controller stages at their K-compute times
at 2K (create p50 -21 %, nova-conductor -29 %, nova-scheduler -34 % on the runs of
2026-11-27). :meth:`LoadDist.contention` scales a controller stage's drawn time by the work in
flight (``pipeline`` + builds) against what its bin saw, as processor sharing would; the bins
keep the burst's shape, which every single index that counted the builds lost.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["LoadDist", "N_QUANTILES", "fit"]

#: Quantile points kept per bin: 0, 5, ..., 100 %.
N_QUANTILES = 21


def _quantiles(xs: list[float]) -> list[float]:
    s = sorted(xs)
    n = len(s)
    out = []
    for i in range(N_QUANTILES):
        pos = (n - 1) * i / (N_QUANTILES - 1)
        lo = int(math.floor(pos))
        hi = min(lo + 1, n - 1)
        out.append(s[lo] + (s[hi] - s[lo]) * (pos - lo))
    return out


@dataclass(frozen=True)
class LoadDist:
    """Quantiles of one stage's time (seconds) per load bin.

    ``edges`` are the upper load bounds of all bins but the last (ascending); ``qs[i]`` the
    :data:`N_QUANTILES` quantiles of bin ``i``; ``loads[i]`` the bin's mean load; ``n[i]`` its
    sample count; ``a``, ``b`` the fitted line (seconds, seconds per boot in flight);
    ``building[i]`` (optional, empty when not measured) the bin's mean *other* work in flight
    at its samples' starts: builds in their build phase (the ``work`` load index less
    ``pipeline``), what :meth:`contention` compares a simulated moment with; ``max_load``
    (optional, None in models calibrated before format 9) the highest load of any sample: a
    time drawn above it is an extrapolation (:meth:`beyond`)."""

    edges: tuple[float, ...]
    qs: tuple[tuple[float, ...], ...]
    loads: tuple[float, ...]
    n: tuple[int, ...]
    a: float
    b: float
    building: tuple[float, ...] = ()
    max_load: float | None = None

    def calibrated_max(self) -> float:
        """The highest load the calibration measured this stage at: :attr:`max_load`, or in
        models calibrated before format 9 the highest bin's mean load (an underestimate)."""
        return self.loads[-1] if self.max_load is None else self.max_load

    def beyond(self, load: float) -> bool:
        """Whether a time drawn at ``load`` lies beyond the loads the calibration measured
        (extrapolated by the line or the asymptote, or the top bin's times held)."""
        return load > self.calibrated_max() and any(self.n)

    def bin_of(self, load: float) -> int:
        """Index of the bin that holds ``load``."""
        for i, e in enumerate(self.edges):
            if load <= e:
                return i
        return len(self.edges)

    def sample(self, u: float, load: float, max_slowdown: float = 8.0,
               saturating: bool = False) -> float:
        """The time (s) at quantile ``u`` in [0, 1) for ``load`` boots in flight. Beyond the
        highest bin's mean load ``top`` the highest bin's time is scaled by the fitted line's
        ratio ``(a + b * load) / (a + b * top)``, with ``saturating`` by at least
        ``load / top`` (module docstring), at most by ``max_slowdown``."""
        q = self.qs[self.bin_of(load)]
        x = u * (N_QUANTILES - 1)
        i = int(x)
        if i >= N_QUANTILES - 1:
            v = q[-1]
        else:
            v = q[i] + (q[i + 1] - q[i]) * (x - i)
        top = self.loads[-1]
        if load > top and self.b > 0:
            ref = self.a + self.b * top
            if ref > 0:
                f = (self.a + self.b * load) / ref
                if saturating and top > 0:
                    f = max(f, load / top)
                v *= min(max_slowdown, f)
        return v

    def contention(self, load: float, building: float, cap: float = 8.0) -> float:
        """The multiplier of a time drawn at ``load`` when ``building`` builds are in their
        build phase: ``(load + building) / (load + b)``, ``b`` the builds the calibration
        saw in ``load``'s bin (:attr:`building`), bounded by ``[1 / cap, cap]``; 1.0 when
        the bin's builds were not measured. Why: on a controller whose processes share
        CPUs, a request slows with *all* the work in flight (processor sharing, Kleinrock
        1967: each of ``n`` jobs progresses at ``cores / n``), and a bigger cloud runs more
        builds at the same ``pipeline`` (more hosts, more build slots); the bins hold the
        slowdown by ``pipeline`` as measured, this scales it for the builds' share."""
        if not self.building:
            return 1.0
        ref = max(0.0, load) + self.building[self.bin_of(load)]
        if ref <= 0:
            return 1.0
        return min(cap, max(1.0 / cap, (max(0.0, load) + max(0.0, building)) / ref))

    def median(self, load: float) -> float:
        """The median time (s) at ``load``."""
        return self.sample(0.5, load)

    def low_median(self) -> float:
        """The median of the lowest-load bin: the stage's demand on an idle cloud (s)."""
        return self.qs[0][N_QUANTILES // 2]

    def to_json(self) -> dict[str, Any]:
        """JSON form (rounded to microseconds)."""
        out: dict[str, Any] = {
            "edges": list(self.edges), "loads": [round(x, 3) for x in self.loads],
            "n": list(self.n), "a": round(self.a, 6), "b": round(self.b, 6),
            "qs": [[round(v, 6) for v in q] for q in self.qs]}
        if self.building:
            out["building"] = [round(x, 3) for x in self.building]
        if self.max_load is not None:
            out["max_load"] = round(self.max_load, 3)
        return out

    @staticmethod
    def from_json(d: dict[str, Any]) -> LoadDist:
        """Read :meth:`to_json`'s form. Raises ``KeyError``/``ValueError`` on a bad document."""
        qs = tuple(tuple(float(v) for v in q) for q in d["qs"])
        if not qs or any(len(q) != N_QUANTILES for q in qs):
            raise ValueError(f"each bin needs {N_QUANTILES} quantiles")
        building = tuple(float(x) for x in d.get("building") or ())
        if building and len(building) != len(qs):
            raise ValueError("building needs one value per bin")
        return LoadDist(edges=tuple(float(e) for e in d["edges"]), qs=qs,
                        loads=tuple(float(x) for x in d["loads"]),
                        n=tuple(int(x) for x in d["n"]), a=float(d["a"]), b=float(d["b"]),
                        building=building,
                        max_load=float(d["max_load"]) if "max_load" in d else None)

    @staticmethod
    def constant(v: float) -> LoadDist:
        """A stage that always takes ``v`` seconds (for stages absent from the runs)."""
        return LoadDist(edges=(), qs=((v,) * N_QUANTILES,), loads=(0.0,), n=(0,), a=v, b=0.0)


def fit(loads: list[float | None], times: list[float | None], max_bins: int = 4,
        min_per_bin: int = 8, building: list[float] | None = None) -> LoadDist:
    """Fit a :class:`LoadDist` to paired samples (load, time in s). Bins are load quantiles
    with at least ``min_per_bin`` samples each (fewer bins when there are few samples).
    ``building`` (optional, one per sample): the builds in flight at each sample's start,
    averaged per bin into :attr:`LoadDist.building`; :attr:`LoadDist.max_load` is the highest
    sample load. Raises ``ValueError`` when there are no samples."""
    other = building if building is not None else [0.0] * len(loads)
    pairs = sorted((float(x), max(0.0, float(t)), float(w))
                   for x, t, w in zip(loads, times, other, strict=True)
                   if t is not None and x is not None and math.isfinite(t))
    if not pairs:
        raise ValueError("no samples")
    nb = max(1, min(max_bins, len(pairs) // min_per_bin))
    groups: list[list[tuple[float, float, float]]] = []
    per = len(pairs) / nb
    for i in range(nb):
        g = pairs[int(round(i * per)):int(round((i + 1) * per))]
        if groups and g and groups[-1][-1][0] == g[0][0]:  # a load value stays in one bin
            same = [p for p in g if p[0] == g[0][0]]
            groups[-1].extend(same)
            g = g[len(same):]
        if g:
            groups.append(g)
    edges = tuple(g[-1][0] for g in groups[:-1])
    xs = [p[0] for p in pairs]
    ys = [p[1] for p in pairs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    b = max(0.0, b)  # a stage never gets faster with load beyond what was measured
    a = my - b * mx
    return LoadDist(edges=edges, qs=tuple(tuple(_quantiles([p[1] for p in g])) for g in groups),
                    loads=tuple(sum(p[0] for p in g) / len(g) for g in groups),
                    n=tuple(len(g) for g in groups), a=a, b=b,
                    building=tuple(sum(p[2] for p in g) / len(g) for g in groups)
                    if building is not None else (), max_load=pairs[-1][0])
