"""The message model: how many messages the broker carries per boot and per node, as the node
count grows, fitted per RPC method from measured runs (``stacklens model messages``).

Input: run folders that hold the broker capture (table ``messages``, one row per firehose
event, see :mod:`stacklens.schema`) beside their traces. Each message is either

- **per request**: its context's ``request_id`` or ``global_request_id`` is one of the request
  ids of a ``server.create`` / ``server.delete`` trace of the run (the spans' request ids), or
  it is the reply (``kind = 'reply'``, matched by ``msg_id``) to such a call; or
- **periodic**: everything else (service heartbeats, ``update_available_resource``, the
  scheduler's instance-info sync, ...).

Per method key (``"<direction> <kind> <method>"``, e.g. ``publish call select_destinations``,
``deliver fanout update_instance_info``; replies have no method and are keyed ``reply``), two
quantities per run at node count ``N``:

- ``per_boot`` = per-request messages / boots (boots: the run's ``server.create`` traces);
- ``periodic_per_min`` = periodic messages / the capture window in minutes.

Each is fitted as ``y = a + b * N`` by least squares with ``a, b >= 0`` (a fan-out grows
linearly with the receivers; a point-to-point call does not grow), the two terms printed with
the residuals. A prediction at ``N`` carries a 95 % prediction interval from the residual
standard error (Student's t with ``n - 2`` degrees of freedom; ordinary least squares, e.g.
Montgomery & Runger, *Applied Statistics*, section 11-7); with two runs no interval is given.

What the runs cannot show is named, not invented: without neutron messages in the runs (the
lab answers nova's neutron calls with a stand-in) the neutron fan-out terms (security-group
member updates, L2 population fdb entries, which the field notes put at over 90 % of the
messages at 600 nodes) are listed in :attr:`MessageModel.missing`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from stacklens.errors import UserError
from stacklens.forecast.calibrate import run_settings
from stacklens.store import RunStore

__all__ = [
    "MessageModel",
    "MethodFit",
    "RunCounts",
    "fit_line",
    "fit_messages",
    "holdout",
    "run_counts",
]

#: Two-sided 95 % quantiles of Student's t by degrees of freedom (1..10; beyond: 2.0).
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)

def _t95(dof: int) -> float:
    """Two-sided 95 % quantile of Student's t with ``dof`` >= 1 degrees of freedom."""
    return _T95[dof - 1] if dof <= len(_T95) else 2.0


#: Operations whose messages are per-request traffic.
BOOT_OPERATIONS = ("server.create", "server.delete")

#: Neutron's fan-out terms the model needs from runs with a real neutron-server.
NEUTRON_TERMS = ("security-group member updates (securitygroup_rpc, fanout to every L2 agent)",
                 "L2 population fdb entries (l2population, fanout to every L2 agent)")


@dataclass(frozen=True)
class RunCounts:
    """One run's message counts: ``nodes`` (compute nodes), ``boots`` (``server.create``
    traces), ``window_min`` (capture window, minutes), and per method key the per-request and
    periodic counts (messages)."""

    run: str
    nodes: int
    boots: int
    window_min: float
    per_request: dict[str, int]
    periodic: dict[str, int]
    neutron_messages: int


def _nodes(store: RunStore) -> int:
    run = store.manifest().get("run") or {}
    lab = run.get("lab") or {}
    if lab.get("computes"):
        return int(lab["computes"])
    return int(run_settings(store)["computes"])


def run_counts(path: str | Path) -> RunCounts:
    """Count a run folder's messages (see the module docstring). Raises
    :class:`~stacklens.errors.UserError` when the folder has no ``messages`` table, no traces
    or no boots."""
    store = RunStore(path)
    if not store.has("messages"):
        raise UserError(f"{path}: no broker capture (table 'messages'); record one with "
                        "`stacklens run` on the lab or `stacklens broker capture`")
    msgs = store.read("messages")
    traces = store.read("traces")
    boots = int((traces["operation"] == "server.create").sum())
    if boots == 0:
        raise UserError(f"{path}: no server.create traces: nothing to count per boot")
    req_traces = traces.filter(pl.col("operation").is_in(BOOT_OPERATIONS)).select("trace_id")
    ids = (store.read("spans").join(req_traces, on="trace_id")
           .select(pl.col("request_id").drop_nulls().unique())["request_id"])
    idset = pl.Series(ids).implode()
    own = (pl.col("request_id").is_in(idset) | pl.col("global_request_id").is_in(idset))
    # replies carry no context: they belong to the call with the same msg_id
    call_ids = msgs.filter(own & (pl.col("kind") == "call"))["msg_id"].drop_nulls().unique()
    is_req = own | ((pl.col("kind") == "reply") & pl.col("msg_id").is_in(call_ids.implode()))
    key = pl.concat_str([pl.col("direction"), pl.col("kind"),
                         pl.col("method").fill_null("-")], separator=" ")
    m = msgs.with_columns(key.alias("key"), is_req.fill_null(False).alias("per_req"))
    m = m.with_columns(pl.when(pl.col("kind") == "reply").then(
        pl.concat_str([pl.col("direction"), pl.lit("reply")], separator=" "))
        .otherwise(pl.col("key")).alias("key"))
    def counts(df: pl.DataFrame) -> dict[str, int]:
        return {str(k): int(n) for k, n in df.group_by("key").len().rows()}
    t0, t1 = msgs["ts_ns"].min(), msgs["ts_ns"].max()
    window_min = ((int(t1) - int(t0)) / 60e9  # type: ignore[arg-type]
                  if msgs.height > 1 else 0.0)
    neutron = int(msgs.filter(pl.col("exchange").fill_null("").str.contains("neutron")
                              | pl.col("topic").fill_null("").str.starts_with("q-")).height)
    return RunCounts(run=str(path), nodes=_nodes(store), boots=boots,
                     window_min=max(window_min, 1e-9),
                     per_request=counts(m.filter(pl.col("per_req"))),
                     periodic=counts(m.filter(~pl.col("per_req"))), neutron_messages=neutron)


@dataclass(frozen=True)
class MethodFit:
    """``y = a + b * N`` for one method key and quantity; ``points`` the measured ``(N, y)``,
    ``residuals`` ``y - fit`` in the same order, ``s`` the residual standard error (None with
    fewer than 3 points)."""

    key: str
    a: float
    b: float
    points: tuple[tuple[int, float], ...]
    residuals: tuple[float, ...]
    s: float | None
    linear: bool = True  # False: the slope failed its t test, the fit is the constant mean

    def predict(self, n: float) -> tuple[float, float | None, float | None]:
        """``(value, low, high)`` at ``n`` nodes; the interval is None without a residual
        error (two runs or fewer); low is clipped at 0. A constant fit (``linear`` false) has
        the prediction interval of a mean (Student's t with ``k - 1`` degrees of freedom)."""
        y = self.a + self.b * n
        if self.s is None:
            return y, None, None
        xs = [p[0] for p in self.points]
        k = len(xs)
        if not self.linear:
            half = _t95(k - 1) * self.s * math.sqrt(1 + 1 / k)
            return y, max(0.0, y - half), y + half
        mx = sum(xs) / k
        sxx = sum((x - mx) ** 2 for x in xs)
        half = _t95(k - 2) * self.s * math.sqrt(1 + 1 / k + ((n - mx) ** 2 / sxx if sxx else 0.0))
        return y, max(0.0, y - half), y + half

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "a": self.a, "b": self.b,
                "points": [list(p) for p in self.points],
                "residuals": list(self.residuals), "s": self.s, "linear": self.linear}


def fit_line(key: str, points: list[tuple[int, float]]) -> MethodFit:
    """Least squares ``y = a + b x`` with ``a, b >= 0`` (the constrained optimum: the OLS line
    when both are non-negative, else the better of the two one-term fits). With three points
    or more, a slope whose t statistic ``b / se(b)`` is below the 95 % quantile of Student's t
    (``n - 2`` dof) is not kept: the fit is then the constant mean (``linear`` false), the
    nested model an F / t test prefers (Montgomery & Runger, section 11-4). Raises
    ``ValueError`` without points."""
    if not points:
        raise ValueError("no points")
    xs = [float(p[0]) for p in points]
    ys = [float(p[1]) for p in points]
    k = len(xs)
    mx, my = sum(xs) / k, sum(ys) / k
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx if sxx else 0.0
    a = my - b * mx
    ols = a >= 0 and b >= 0
    if not ols:
        sse = lambda a_, b_: sum((y - a_ - b_ * x) ** 2 for x, y in zip(xs, ys, strict=True))  # noqa: E731
        b0 = sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs) \
            if any(xs) else 0.0
        cands = [(max(my, 0.0), 0.0), (0.0, max(b0, 0.0))]
        a, b = min(cands, key=lambda c: sse(*c))
    res = tuple(y - a - b * x for x, y in zip(xs, ys, strict=True))
    s = math.sqrt(sum(r * r for r in res) / (k - 2)) if k > 2 else None
    pts = tuple((int(x), y) for x, y in zip(xs, ys, strict=True))
    if ols and s is not None and b > 0 and sxx and b < _t95(k - 2) * s / math.sqrt(sxx):
        # the slope is not distinguishable from 0 at 95 % (t test on b): a per-boot count that
        # only wobbles with the node count must not be extrapolated to 600 nodes as a trend.
        # The nested constant model y = mean(y) stands, with its own residual error (k-1 dof).
        res = tuple(y - my for y in ys)
        s1 = math.sqrt(sum(r * r for r in res) / (k - 1))
        return MethodFit(key=key, a=my, b=0.0, points=pts, residuals=res, s=s1, linear=False)
    return MethodFit(key=key, a=a, b=b, points=pts, residuals=res, s=s)


@dataclass
class MessageModel:
    """Fits per method key: ``per_boot`` (messages per boot) and ``periodic`` (messages per
    minute for the whole cloud; per node = value / N); ``totals`` the same two summed over
    methods (keys ``per_boot``, ``periodic``); ``runs`` the counts used; ``missing`` what the
    runs cannot show (plain words)."""

    runs: list[RunCounts]
    per_boot: dict[str, MethodFit] = field(default_factory=dict)
    periodic: dict[str, MethodFit] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    totals: dict[str, MethodFit] = field(default_factory=dict)

    def predict(self, n: int) -> dict[str, Any]:
        """Totals and per-method predictions at ``n`` nodes: ``{"nodes", "per_boot":
        {key: (v, lo, hi)}, "periodic_per_min": {...}, "per_boot_total": (v, lo, hi),
        "periodic_total_per_min": (v, lo, hi)}``. Totals are their own fits (the sum over
        methods per run), so their interval is the totals' own residual error."""
        return {"nodes": n,
                "per_boot": {k: f.predict(n) for k, f in sorted(self.per_boot.items())},
                "periodic_per_min": {k: f.predict(n) for k, f in sorted(self.periodic.items())},
                "per_boot_total": self.totals["per_boot"].predict(n),
                "periodic_total_per_min": self.totals["periodic"].predict(n)}

    def to_json(self) -> dict[str, Any]:
        return {"runs": [{"run": r.run, "nodes": r.nodes, "boots": r.boots,
                          "window_min": round(r.window_min, 3)} for r in self.runs],
                "per_boot": [f.to_json() for f in self.per_boot.values()],
                "periodic_per_min": [f.to_json() for f in self.periodic.values()],
                "totals": {k: f.to_json() for k, f in self.totals.items()},
                "missing": self.missing}


def fit_messages(counts: list[RunCounts]) -> MessageModel:
    """Fit every method key seen in any run (absent from a run = 0 there). Raises
    :class:`~stacklens.errors.UserError` with fewer than two runs or fewer than two distinct
    node counts."""
    if len(counts) < 2 or len({c.nodes for c in counts}) < 2:
        raise UserError("the message model needs runs at two node counts or more")
    counts = sorted(counts, key=lambda c: c.nodes)
    model = MessageModel(runs=counts)
    for attr, target, scale in (("per_request", model.per_boot, "boots"),
                                ("periodic", model.periodic, "window_min")):
        keys = sorted({k for c in counts for k in getattr(c, attr)})
        for k in keys:
            pts = [(c.nodes, getattr(c, attr).get(k, 0) / getattr(c, scale)) for c in counts]
            target[k] = fit_line(k, pts)
        model.totals["per_boot" if attr == "per_request" else "periodic"] = fit_line(
            "total", [(c.nodes, sum(getattr(c, attr).values()) / getattr(c, scale))
                      for c in counts])
    if not any(c.neutron_messages for c in counts):
        model.missing = [f"{t}: no neutron messages in these runs (no real neutron-server)"
                         for t in NEUTRON_TERMS]
    return model


def holdout(counts: list[RunCounts]) -> list[dict[str, Any]]:
    """Fit on every run but the largest node count and predict the largest: rows ``{metric,
    predicted, low, high, measured, error_pct}`` for the two totals (messages per boot,
    periodic messages per minute) and each per-boot method key. Raises
    :class:`~stacklens.errors.UserError` with fewer than three node counts."""
    counts = sorted(counts, key=lambda c: c.nodes)
    if len({c.nodes for c in counts}) < 3:
        raise UserError("holding out the largest run needs runs at three node counts or more")
    top = counts[-1].nodes
    train = [c for c in counts if c.nodes != top]
    test = [c for c in counts if c.nodes == top]
    pred = fit_messages(train).predict(top)
    boots = sum(c.boots for c in test)
    minutes = sum(c.window_min for c in test)
    def meas(attr: str, key: str | None, scale: float) -> float:
        return sum(sum(getattr(c, attr).values()) if key is None else getattr(c, attr).get(key, 0)
                   for c in test) / scale
    rows: list[dict[str, Any]] = []
    def row(metric: str, p: tuple[float, Any, Any], m: float) -> None:
        rows.append({"metric": metric, "predicted": p[0], "low": p[1], "high": p[2],
                     "measured": m, "error_pct": (p[0] - m) / m * 100.0 if m else None})
    row("messages per boot", pred["per_boot_total"], meas("per_request", None, boots))
    row("periodic messages per minute", pred["periodic_total_per_min"],
        meas("periodic", None, minutes))
    keys = sorted(set(pred["per_boot"]) | {k for c in test for k in c.per_request})
    for k in keys:
        p = pred["per_boot"].get(k, (0.0, None, None))
        row(f"per boot: {k}", p, meas("per_request", k, boots))
    return rows
