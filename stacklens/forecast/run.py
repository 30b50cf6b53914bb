"""One forecast as a library call: model + knobs -> a run folder of canonical tables.

:func:`forecast_run` is what ``stacklens forecast`` and ``stacklens capacity`` call; it prints
nothing (and imports simpy only when it simulates, so the rest of the CLI runs without it).
:func:`shipped_model` is the calibration model that ships with stacklens (measured on
the lab, committed as data with its provenance).
"""

from __future__ import annotations

import time
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stacklens.forecast.calibrate import Calibration, load_model
from stacklens.forecast.knobs import Knobs, check
from stacklens.forecast.tables import write_run
from stacklens.store import RunStore

if TYPE_CHECKING:
    from stacklens.forecast.model import SimResult

__all__ = ["SHIPPED_MODEL", "forecast_run", "knobs_for", "resolve_model", "shipped_model"]

#: File name of the shipped calibration model (``stacklens/forecast/data/``).
SHIPPED_MODEL = "lab-2025.1.json"


def shipped_model() -> Path:
    """Path of the calibration model shipped with stacklens."""
    return Path(str(resources.files("stacklens.forecast") / "data" / SHIPPED_MODEL))


def resolve_model(name: str | None) -> tuple[Calibration, str]:
    """The calibration named ``name``: a file path, or None / ``lab-2025.1`` for the shipped
    model. Returns the model and its display name. Raises
    :class:`~stacklens.errors.UserError` when the file cannot be read."""
    if name is None or name in (SHIPPED_MODEL, SHIPPED_MODEL.removesuffix(".json")):
        p = shipped_model()
        return load_model(p), f"shipped:{SHIPPED_MODEL}"
    return load_model(name), str(name)


def knobs_for(cal: Calibration, **overrides: Any) -> Knobs:
    """Knobs for a forecast: :class:`Knobs` defaults, then the calibration runs' settings that
    are knobs (e.g. workers), then ``overrides`` whose value is not None."""
    base = Knobs()
    known = set(base.as_dict())
    fromcal = {k: v for k, v in cal.knobs.items()
               if k in known and k not in ("computes", "servers", "concurrency")}
    k = base.replace(**{**fromcal, **{k: v for k, v in overrides.items() if v is not None}})
    check(k)
    return k


def forecast_run(cal: Calibration, knobs: Knobs, out: str | Path | None, model_name: str,
                 force: bool = False) -> tuple[SimResult, dict[str, Any]]:
    """Simulate the storm and, when ``out`` is given, write it as a run folder (tables and the
    manifest's ``forecast`` section). Returns the result and its summary (see
    :func:`stacklens.forecast.model.summary`, plus ``wall_s``: seconds the simulation took).
    Raises :class:`~stacklens.errors.UserError` when ``out`` is not empty and not ``force``."""
    from stacklens.forecast.model import simulate, summary  # simpy: only when simulating
    from stacklens.forecast.records import extrapolation

    store = RunStore(out) if out is not None else None
    if store is not None:
        store.prepare(force)
    t0 = time.perf_counter()
    res = simulate(cal, knobs)
    wall = time.perf_counter() - t0
    s = {**summary(res), "wall_s": round(wall, 3)}
    if store is not None:
        write_run(store, res, time.time_ns(), {
            "model": model_name, "knobs": knobs.as_dict(), "summary": s,
            "calibration": {"provenance": cal.provenance, "knobs": cal.knobs, "load": cal.load,
                            "stage_load": dict(cal.stage_load),
                            "validations": list(cal.validations)},
            "extrapolation": extrapolation(res)},
            cal.attribution)
    return res, s
