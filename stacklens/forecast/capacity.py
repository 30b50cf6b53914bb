"""Capacity search: step the load until the SLA breaks, keep every step's run, find the
boundary and the component that saturated first.

The search is a pure loop over a *step function* (``value -> run folder``) supplied by the
caller: the forecast model (``stacklens capacity --target forecast``) or a real cloud / the lab
(``--target cloud``: ``stacklens run`` per step). It doubles the varied quantity (concurrency
or computes) from ``start`` until the SLA breaks or ``max_value`` is reached, then bisects
between the last passing and the first failing value down to ``resolution`` (a fraction of the
passing value, at least 1). Every step is recorded in ``<dir>/capacity.json`` as soon as it is
measured, so an interrupted search resumes where it stopped (steps already measured are read
back, not run again). Bounded: at most ``max_steps`` steps.

Evidence of the boundary ("which component saturated first"): for each component of
``server.create``'s breakdown, the ratio of its p50 at the first failing step to its p50 at the
first step; the component whose time grew the most (in seconds) is named, with those numbers.
For forecast steps, also the model's utilisation and, per component, the share of its times
drawn beyond the calibrated load at the first failing step (``beyond_calibration_at_break``):
a boundary found where the model extrapolates is the model's estimate, not a measurement's.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from stacklens.errors import UserError
from stacklens.forecast.validate import COMPONENTS, measured_metrics
from stacklens.store import RunStore

__all__ = ["STATE_FILE", "Sla", "parse_sla", "run_metrics", "search"]

STATE_FILE = "capacity.json"
_KEYS = {"p50_s": "create_p50_s", "p95_s": "create_p95_s", "success_rate": "success_rate",
         "throughput_per_min": "throughput_per_min"}
_AT_LEAST = {"success_rate", "throughput_per_min"}


@dataclass(frozen=True)
class Sla:
    """Limits: ``p50_s``/``p95_s`` at most (s, server-side create), ``success_rate`` /
    ``throughput_per_min`` at least. None: not checked."""

    limits: tuple[tuple[str, float], ...]

    def breaches(self, m: dict[str, Any]) -> list[str]:
        """The limits ``m`` (see :func:`run_metrics`) breaks, in words; [] when it passes."""
        out = []
        for key, lim in self.limits:
            v = m.get(_KEYS[key])
            if v is None:
                out.append(f"{key} not measured")
            elif key in _AT_LEAST and v < lim:
                out.append(f"{key} {v:.3g} < {lim:g}")
            elif key not in _AT_LEAST and v > lim:
                out.append(f"{key} {v:.3g} > {lim:g}")
        return out


def parse_sla(items: list[str]) -> Sla:
    """``key=value`` items (keys ``p50_s``, ``p95_s``, ``success_rate``,
    ``throughput_per_min``) -> :class:`Sla`. Raises :class:`~stacklens.errors.UserError`."""
    lim = []
    for it in items:
        k, _, v = it.partition("=")
        k = k.strip().rstrip("<>")
        if k not in _KEYS or not v:
            raise UserError(f"--sla {it}: expected one of {', '.join(_KEYS)} = number")
        try:
            lim.append((k, float(v.strip().lstrip("<>="))))
        except ValueError:
            raise UserError(f"--sla {it}: {v!r} is not a number") from None
    if not lim:
        raise UserError("capacity needs at least one --sla, e.g. --sla p95_s=60")
    return Sla(tuple(lim))


def run_metrics(run: str | Path) -> dict[str, Any]:
    """What a step measured: :func:`~stacklens.forecast.validate.measured_metrics` plus
    ``success_rate`` over decided creates and ``creates``."""
    m: dict[str, Any] = dict(measured_metrics(run))
    tr = RunStore(run).read("traces").filter(pl.col("operation") == "server.create")
    ok = tr.filter(pl.col("outcome").is_in(["success", "retried"])).height
    decided = tr.filter(pl.col("outcome").is_in(["success", "retried", "failed"])).height
    m["success_rate"] = ok / decided if decided else None
    m["creates"] = tr.height
    return m


def _evidence(first: dict[str, Any], broke: dict[str, Any]) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    for c in COMPONENTS:
        a, b = first.get(f"{c} p50_s") or 0.0, broke.get(f"{c} p50_s") or 0.0
        rows.append({"component": c, "p50_first_s": a, "p50_at_break_s": b,
                     "growth_s": b - a, "ratio": (b / a) if a > 0 else None})
    rows.sort(key=lambda r: -float(r["growth_s"]))
    return {"saturated_first": rows[0]["component"] if rows else None, "components": rows}


def _simulated(run: Path, key: str) -> dict[str, float] | None:
    """``key`` of a forecast step's summary (:func:`stacklens.forecast.records.summary`:
    ``utilisation``, the model's resources; ``beyond_calibration``, per component the share of
    times drawn beyond the calibrated load); None for a measured run."""
    fc = RunStore(run).manifest().get("forecast") or {}
    u = (fc.get("summary") or {}).get(key)
    return dict(u) if isinstance(u, dict) else None


def _load(d: Path) -> dict[str, Any]:
    p = d / STATE_FILE
    if not p.exists():
        return {}
    try:
        return dict(json.loads(p.read_text()))
    except ValueError as e:
        raise UserError(f"{p} is not JSON ({e}): remove it to start the search again") from None


def _save(d: Path, state: dict[str, Any]) -> None:
    tmp = d / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2, default=str))
    tmp.replace(d / STATE_FILE)


def search(out: Path, vary: str, sla: Sla, step: Callable[[int, Path], None], start: int,
           max_value: int, resolution: float = 0.1, max_steps: int = 20,
           settings: dict[str, Any] | None = None,
           on_step: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Run the search (module docstring) in folder ``out``. ``step(value, run_dir)`` must
    leave a traced run folder at ``run_dir``. Returns the state: ``steps`` (value, run, metrics,
    breaches), ``boundary`` {last_ok, first_fail}, ``evidence``. Raises
    :class:`~stacklens.errors.UserError` when ``out`` holds a search with other settings."""
    out.mkdir(parents=True, exist_ok=True)
    key = {"vary": vary, "sla": [list(x) for x in sla.limits], "start": start,
           "max_value": max_value, **(settings or {})}
    state = _load(out)
    if state and state.get("settings") != key:
        raise UserError(f"{out} holds a search with other settings ({state.get('settings')}); "
                        "choose another folder")
    state.setdefault("settings", key)
    state.setdefault("steps", [])
    done = {s["value"]: s for s in state["steps"]}

    def measure(v: int) -> dict[str, Any]:
        if v in done:
            return done[v]
        run = out / f"step-{vary}-{v:05d}"
        step(v, run)
        m = run_metrics(run)
        rec = {"value": v, "run": run.name, "metrics": m, "breaches": sla.breaches(m)}
        state["steps"].append(rec)
        done[v] = rec
        _save(out, state)
        if on_step is not None:
            on_step(rec)
        return rec

    lo, hi = None, None
    v = max(1, start)
    n = 0
    while n < max_steps:  # doubling
        n += 1
        r = measure(v)
        if r["breaches"]:
            hi = v
            break
        lo = v
        if v >= max_value:
            break
        v = min(max_value, v * 2)
    while lo is not None and hi is not None and n < max_steps:  # bisection
        if hi - lo <= max(1, math.floor(lo * resolution)):
            break
        n += 1
        mid = (lo + hi) // 2
        if measure(mid)["breaches"]:
            hi = mid
        else:
            lo = mid
    state["boundary"] = {"last_ok": lo, "first_fail": hi}
    steps = sorted(state["steps"], key=lambda s: s["value"])
    if hi is not None:
        state["evidence"] = _evidence(steps[0]["metrics"], done[hi]["metrics"])
        if state["evidence"]["saturated_first"] is not None:
            state["evidence"]["utilisation_at_break"] = _simulated(out / done[hi]["run"],
                                                                   "utilisation")
        # a boundary found where the model extrapolates is the model's, not a measurement's
        state["evidence"]["beyond_calibration_at_break"] = _simulated(
            out / done[hi]["run"], "beyond_calibration")
    else:
        state["evidence"] = None
    _save(out, state)
    return state
