"""What a simulated storm produces: one record per boot and per delete, the result of a run,
and its headline numbers (:func:`summary`). Written by :mod:`stacklens.forecast.model`, read by
:mod:`stacklens.forecast.tables` (the canonical tables) and the CLI; no simpy here."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from stacklens.forecast.knobs import Knobs

__all__ = ["BootRecord", "DeleteRecord", "STAGE_COMPONENT", "SimResult", "beyond_by_component",
           "extrapolation", "summary"]

#: The component whose time (in the breakdown) each model stage mostly is: the stages of
#: :data:`stacklens.forecast.calibrate.Calibration.stages` (the scheduler's also holds
#: placement's share; ``to_compute``'s idle-cloud part is RPC transit).
STAGE_COMPONENT: dict[str, str] = {
    "api": "nova-api", "delete_api": "nova-api",
    "conductor": "nova-conductor", "to_compute": "nova-conductor",
    "conductor_call": "nova-conductor",
    "scheduler": "nova-scheduler", "scheduler_host": "nova-scheduler",
    "alloc_read": "placement-api",
    "compute_pre": "nova-compute", "build": "nova-compute", "finish": "nova-compute",
    "teardown": "nova-compute", "cleanup": "nova-compute", "lock_held": "nova-compute",
    "claim_held": "nova-compute", "delete_held": "nova-compute",
    "periodic_held": "nova-compute",
    "to_conductor": "between components", "delete_to_compute": "between components",
    "delete_rest": "between components",
}


@dataclass
class BootRecord:
    """One simulated ``server.create``: times in seconds since the storm began.
    ``stages`` maps a component (nova-api, ...) to its seconds; ``spans`` holds
    (service, host, operation, start_s, end_s) of each span; ``phases`` (phase, start_s,
    end_s) of nova-compute."""

    i: int
    submit_s: float = 0.0  # slot acquired, POST sent
    start_s: float = 0.0  # nova-api starts the request (trace start)
    end_s: float | None = None  # ACTIVE (trace end) or failure
    accepted_s: float | None = None  # 202 (or 500) returned
    seen_active_s: float | None = None  # client saw ACTIVE
    outcome: str = "unknown"  # success, retried, failed
    error: str | None = None
    error_service: str | None = None
    http_status: int = 202
    retries: int = 0
    host: int | None = None
    stages: dict[str, float] = field(default_factory=dict)
    spans: list[tuple[str, str, str, float, float]] = field(default_factory=list)
    phases: list[tuple[str, float, float]] = field(default_factory=list)


@dataclass
class DeleteRecord:
    """One simulated ``server.delete`` (times in seconds since the storm began)."""

    i: int
    host: int
    start_s: float = 0.0
    end_s: float = 0.0
    gone_seen_s: float = 0.0
    stages: dict[str, float] = field(default_factory=dict)
    spans: list[tuple[str, str, str, float, float]] = field(default_factory=list)
    phases: list[tuple[str, float, float]] = field(default_factory=list)


@dataclass
class SimResult:
    """What one simulated storm produced: the records, the resources' utilisation (``busy``:
    fraction of the storm's duration, pooled over a resource's workers or hosts, plus
    ``compute_resources lock, busiest host``: the most held host's lock, which saturates
    first under a burst) and the hosts' final counts; with a shared CPU,
    ``stretch`` maps (stage, load bin) to (elapsed_s, demand_s) of its CPU parts summed;
    ``drawn`` maps each stage to (times drawn, of them at a load beyond the highest its
    calibration measured, the highest load drawn at, that calibrated highest load)."""

    knobs: Knobs
    boots: list[BootRecord]
    deletes: list[DeleteRecord]
    duration_s: float
    busy: dict[str, float]
    placed: list[int]
    events: int = 0
    stretch: dict[tuple[str, int], tuple[float, float]] = field(default_factory=dict)
    drawn: dict[str, tuple[int, int, float, float]] = field(default_factory=dict)


def beyond_by_component(*results: SimResult) -> dict[str, float]:
    """Per component (:data:`STAGE_COMPONENT`), the share (0..1) of its stages' draws in
    ``results`` (pooled: one storm, or the seeds of a validation) at a load beyond the highest
    its calibration measured."""
    n: dict[str, list[int]] = {}
    for stage, (draws, beyond, _, _) in ((s, d) for r in results for s, d in r.drawn.items()):
        c = n.setdefault(STAGE_COMPONENT.get(stage, "unknown"), [0, 0])
        c[0] += draws
        c[1] += beyond
    return {c: round(b / d, 4) for c, (d, b) in sorted(n.items()) if d}


def extrapolation(res: SimResult) -> dict[str, dict[str, Any]]:
    """Per stage of ``res`` that drew a time, how far the storm went beyond the model's
    calibration: ``component`` (:data:`STAGE_COMPONENT`), ``draws``, ``beyond`` (draws at a
    load above the highest of the stage's calibration samples: their times are the fitted
    line's or the asymptote's extrapolation, or the top bin's times held, not measured),
    ``beyond_share`` (0..1), ``load_max`` (the highest load drawn at) and
    ``calibrated_load_max`` (loads in the model's load index: boots in flight)."""
    return {stage: {"component": STAGE_COMPONENT.get(stage, "unknown"), "draws": n,
                    "beyond": k, "beyond_share": round(k / n, 4) if n else 0.0,
                    "load_max": round(top, 3), "calibrated_load_max": round(cal, 3)}
            for stage, (n, k, top, cal) in sorted(res.drawn.items())}


def summary(res: SimResult) -> dict[str, Any]:
    """Headline numbers of a simulated storm: create p50/p95 (s, server side, successful
    boots), throughput (boots per minute, first start to last ACTIVE), outcome counts,
    retries, boots per host (top 5), resource utilisation and, per component, the share of
    its times drawn beyond the calibrated load (:func:`beyond_by_component`)."""
    done = [b for b in res.boots if b.outcome in ("success", "retried") and b.end_s is not None]
    durs = [b.end_s - b.start_s for b in done if b.end_s is not None]
    qs = statistics.quantiles(durs, n=20, method="inclusive") if len(durs) > 1 else durs * 19
    t0 = min((b.start_s for b in res.boots), default=0.0)
    t1 = max((b.end_s or 0.0 for b in done), default=0.0)
    return {
        "boots": len(res.boots),
        "success": sum(b.outcome == "success" for b in res.boots),
        "retried": sum(b.outcome == "retried" for b in res.boots),
        "failed": sum(b.outcome == "failed" for b in res.boots),
        "retries": sum(b.retries for b in res.boots),
        "create_p50_s": qs[9] if durs else None,
        "create_p95_s": qs[18] if durs else None,
        "throughput_per_min": len(done) / (t1 - t0) * 60 if t1 > t0 else None,
        "duration_s": res.duration_s,
        "top_hosts": sorted(res.placed, reverse=True)[:5],
        "utilisation": {k: round(v, 3) for k, v in res.busy.items()},
        "beyond_calibration": beyond_by_component(res),
    }
