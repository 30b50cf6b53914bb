"""A simulated storm as the canonical tables of a run folder, so ``stacklens report`` (and any
SQL over the tables) works on a forecast exactly as on a measured run.

Written: ``traces`` (``server.create`` and ``server.delete``, outcome, retries, error),
``spans`` (nova-api, nova-conductor, nova-scheduler, nova-compute per trace), ``breakdown``
(per trace and component, summing to the trace's ``dur_s``), ``phases`` (nova-compute
``build``, ``teardown``, ``resource_cleanup``); ``events``, ``flows``, ``quarantine``,
``clock_offsets`` are empty tables of the right schema, and ``ingest_stats`` has one row saying
the run is simulated. Hosts are ``simulated-controller`` and ``simulated-compute-N``; every
trace's ``outcome_reason`` starts with "simulated". The manifest gets a ``forecast`` section
(model, knobs, provenance of the calibration, summary, wall time).

Times: the storm starts at ``start_ns`` (the caller's choice: the CLI uses the wall clock),
``*_ns`` since the epoch, as in measured runs.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import polars as pl

from stacklens.schema import TABLES, conform, empty
from stacklens.store import RunStore

if TYPE_CHECKING:  # the model (and simpy) only for the annotations
    from stacklens.forecast.model import SimResult

__all__ = ["SIMULATED", "to_tables", "write_run"]

#: What a simulated row says where a measured one names a file or host.
SIMULATED = "simulated"

_CREATE_SERVICES = "nova-api,nova-conductor,nova-scheduler,placement-api,nova-compute"


def _ids(rng_seed: int, n: int) -> list[str]:
    r = uuid.UUID(int=rng_seed)  # deterministic ids: uuid5 of a seed namespace
    return [str(uuid.uuid5(r, str(i))) for i in range(n)]


def to_tables(res: SimResult, start_ns: int,
              attribution: dict[str, float] | None = None) -> dict[str, pl.DataFrame]:
    """The canonical tables of ``res`` (see module docstring), times offset by ``start_ns``.
    ``attribution`` scales each component's breakdown time (:mod:`stacklens.forecast.attribution`:
    the model's stages mapped onto how stacklens.trace attributes log gaps); the rest of each
    trace stays 'between components'."""
    attr = attribution or {}
    ns = 1_000_000_000
    seed = res.knobs.seed
    inst = _ids(seed * 2 + 1, len(res.boots))
    creq = ["req-" + x for x in _ids(seed * 2 + 2, len(res.boots))]
    dreq = ["req-" + x for x in _ids(seed * 2 + 3, len(res.boots))]
    traces: list[dict[str, Any]] = []
    spans: list[tuple[Any, ...]] = []
    bd: list[tuple[str, str, float]] = []
    ph: list[tuple[Any, ...]] = []

    def t(s: float) -> int:
        return start_ns + int(round(s * ns))

    def add_spans(tid: str, recs: list[tuple[str, str, str, float, float]]) -> None:
        root = None
        for j, (svc, host, op, a, b) in enumerate(recs):
            sid = f"{tid}:{svc}@{host}:{j}"
            spans.append((tid, sid, root, tid, host, svc, None, op, t(a), t(b), True,
                          "ok", None, 0))
            root = root or sid

    for b in res.boots:
        tid = creq[b.i]
        end = b.end_s if b.end_s is not None else b.start_s
        dur = end - b.start_s
        failed = b.outcome == "failed"
        traces.append({
            "trace_id": tid, "request_id": tid, "operation": "server.create",
            "outcome": b.outcome,
            "outcome_reason": f"{SIMULATED}: " + ("failure" if failed else "completion"),
            "http_status": b.http_status, "error": b.error,
            "error_service": b.error_service, "error_file": SIMULATED if failed else None,
            "retries": b.retries, "instance_uuid": inst[b.i], "start_ns": t(b.start_s),
            "end_ns": t(end), "dur_s": dur, "end_exact": True, "client_dur_s": None,
            "n_spans": len(b.spans), "services": _CREATE_SERVICES,
            "n_error_records": 1 if failed else 0, "first_error": b.error})
        add_spans(tid, b.spans)
        _breakdown(bd, tid, b.stages, dur, attr)
        for name, a, e in b.phases:
            ph.append((tid, "nova-compute", name, t(a), t(e), e - a))
    for d in res.deletes:
        tid = dreq[d.i]
        dur = d.end_s - d.start_s
        traces.append({
            "trace_id": tid, "request_id": tid, "operation": "server.delete",
            "outcome": "success", "outcome_reason": f"{SIMULATED}: completion",
            "http_status": 204, "retries": 0, "instance_uuid": inst[d.i],
            "start_ns": t(d.start_s), "end_ns": t(d.end_s), "dur_s": dur, "end_exact": True,
            "n_spans": len(d.spans), "services": "nova-api,nova-compute",
            "n_error_records": 0})
        add_spans(tid, d.spans)
        _breakdown(bd, tid, d.stages, dur, attr)
        for name, a, e in d.phases:
            ph.append((tid, "nova-compute", name, t(a), t(e), e - a))
    out = {name: empty(name) for name in ("events", "flows", "quarantine", "clock_offsets")}
    out["ingest_stats"] = conform(pl.DataFrame([{
        "file": SIMULATED, "kind": "simulated", "severity": "info",
        "count": len(res.boots) + len(res.deletes),
        "detail": "forecast: tables written by the boot-storm model, not read from logs"}]),
        "ingest_stats")
    out["traces"] = conform(pl.DataFrame(traces, infer_schema_length=None), "traces")
    out["spans"] = pl.DataFrame(spans, schema=TABLES["spans"], orient="row")
    out["breakdown"] = pl.DataFrame(bd, schema=TABLES["breakdown"], orient="row")
    out["phases"] = pl.DataFrame(ph, schema=TABLES["phases"], orient="row")
    return out


def _breakdown(bd: list[tuple[str, str, float]], tid: str, stages: dict[str, float],
               dur: float, attr: dict[str, float]) -> None:
    """Rows of one trace, summing to ``dur``: 'between components' is what the stages do not
    cover; with ``attr`` every component (between included) is scaled by its factor and the
    rows are then rescaled together to ``dur``."""
    named = {k: max(0.0, v) for k, v in stages.items() if k != "between components"}
    s = sum(named.values())
    if s > dur > 0:
        named = {k: v * dur / s for k, v in named.items()}
        s = dur
    named["between components"] = max(0.0, dur - s)
    if attr:
        named = {k: v * attr.get(k, 1.0) for k, v in named.items()}
        tot = sum(named.values())
        if tot > 0:
            named = {k: v * dur / tot for k, v in named.items()}
    for k, v in named.items():
        bd.append((tid, k, v))


def write_run(store: RunStore, res: SimResult, start_ns: int, section: dict[str, Any],
              attribution: dict[str, float] | None = None) -> None:
    """Write the tables of ``res`` into ``store`` and the manifest's ``forecast`` section
    (:class:`~stacklens.manifest.ForecastSection`; ``section``: model path, knobs, provenance,
    summary, wall_s) with top-level ``inputs`` naming the model. The one writer of that
    section."""
    store.write(to_tables(res, start_ns, attribution))
    store.write_section("forecast", {"simulated": True, **section},
                        inputs=[f"{SIMULATED}: {section.get('model', 'model')}"])
