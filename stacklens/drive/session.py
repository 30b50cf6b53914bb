"""One ``stacklens run``: resolve the scenario against the cloud, drive it, write the run folder.

Workload-agnostic: the scenario's workload type (:mod:`stacklens.drive.workload`) plans the run
and gives its driver; this module writes the folder, the manifest, the SLA and the summary.

Run folder (on top of :mod:`stacklens.store`'s layout)::

    requests.jsonl            record snapshots as they happened (see stacklens.drive.records)
    scenario.yaml             the scenario as given
    config/                   the cloud's config files, secrets redacted (stacklens.drive.capture)
    tables/requests.parquet   the canonical requests table (last snapshot per server)
    manifest.json             "run": run id, name prefix, endpoint, plan, stats, SLA, leftovers,
                              and with ``cloud`` facts: service_versions, config_files, hosts

The manifest's ``run`` section is written before the first server is asked for, so
``stacklens cleanup RUN`` finds the prefix even after a killed run.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from stacklens.drive.capture import CloudFacts, api_versions, capture
from stacklens.drive.client import ComputeClient, Connection
from stacklens.drive.clock import Clock
from stacklens.drive.pacer import DriveStats, DriveSummary
from stacklens.drive.plan import new_run_id
from stacklens.drive.reach import Prober
from stacklens.drive.records import (
    RecordOutcome,
    RecordWriter,
    RequestRecord,
    read_records,
    to_frame,
)
from stacklens.drive.scenario import Scenario, scenario_dict
from stacklens.drive.sla import SlaCheck, evaluate_sla, percentile
from stacklens.drive.workload import RunPlan, Workload, get_workload, workload_types
from stacklens.errors import UserError
from stacklens.store import RunStore

__all__ = ["RunResult", "finalize_records", "run_scenario", "summarize"]

REQUESTS_JSONL = "requests.jsonl"


@dataclass(frozen=True)
class RunResult:
    """What a run produced."""

    summary: DriveSummary
    plan: RunPlan
    sla: list[SlaCheck]
    out: Path

    @property
    def breached(self) -> list[SlaCheck]:
        """The SLA checks that failed."""
        return [c for c in self.sla if not c.ok]


def _workload(scn: Scenario) -> Workload:
    name, cfg = scn.workload.chosen()
    return get_workload(name)(cfg)


async def run_scenario(
    scn: Scenario,
    conn: Connection,
    out: str | Path,
    *,
    scenario_text: str | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    clock: Clock | None = None,
    prober: Prober | None = None,
    on_tick: Callable[[DriveStats], None] | None = None,
    on_plan: Callable[[RunPlan], None] | None = None,
    computes: int | None = None,
    run_id: str | None = None,
    cloud: CloudFacts | None = None,
) -> RunResult:
    """Drive ``scn`` against ``conn`` and write the run folder ``out``; the workload type the
    scenario names plans and drives it. ``cloud``: what is known of the cloud (its config files
    are copied, redacted, to ``out/config/``; versions and hosts go to the manifest's ``run``
    section, see :func:`stacklens.drive.capture.capture`). Raises UserError (folder already
    holds a run, unknown flavor/image...); failures during the run are records."""
    out = Path(out)
    wl = _workload(scn)
    if (out / REQUESTS_JSONL).exists():
        raise UserError(f"{out} already holds a run ({REQUESTS_JSONL}); choose another --out")
    store = RunStore(out)
    c = scn.client
    async with ComputeClient(conn, microversion=c.microversion, timeout_s=c.request_timeout_s,
                             max_connections=c.max_connections, transport=transport) as client:
        plan = await wl.plan(scn, client, run_id or new_run_id(), computes)
        if on_plan:
            on_plan(plan)
        out.mkdir(parents=True, exist_ok=True)
        if scenario_text is not None:
            (out / "scenario.yaml").write_text(scenario_text, encoding="utf-8")
        run_info: dict[str, Any] = {
            "run_id": plan.run_id, "prefix": plan.prefix, "scenario": scenario_dict(scn),
            "cloud": scn.cloud, "connection": conn.describe(), "plan": plan.describe(),
            "logs": scn.logs, "state": "running",
        }
        if cloud is not None:
            versions = dict(cloud.service_versions)
            if cloud.query_api:
                versions.update(await api_versions(client))
            run_info.update(capture(dataclasses.replace(cloud, service_versions=versions), out))
        store.write_section("run", run_info)
        with RecordWriter(out / REQUESTS_JSONL) as writer:
            driver = wl.driver(plan, client, writer, clock=clock, prober=prober,
                               on_tick=on_tick)
            summary = await driver.run()
    checks = evaluate_sla(summary.records, scn.sla, duration=wl.sla_value)
    summary_d = summarize(summary.records, wl.durations)
    if parts := wl.groups(summary.records):  # mixed: one summary per part as well
        summary_d["parts"] = {k: summarize(recs, durs) for k, (recs, durs) in parts.items()}
    store.write({"requests": to_frame(summary.records)})
    run_info.update(
        state="interrupted" if summary.interrupted else "finished",
        started_ns=summary.started_ns, ended_ns=summary.ended_ns,
        stats=dataclasses.asdict(summary.stats), calls=summary.calls,
        leftovers=summary.leftovers, errors=summary.errors[:100],
        summary=summary_d,
        sla=[dataclasses.asdict(x) for x in checks],
    )
    store.write_section("run", run_info)
    return RunResult(summary, plan, checks, out)


def finalize_records(out: str | Path) -> int:
    """Rebuild the ``requests`` table from ``requests.jsonl`` (after a run was killed);
    returns the number of records."""
    out = Path(out)
    records, bad = read_records(out / REQUESTS_JSONL)
    store = RunStore(out)
    store.write({"requests": to_frame(records)})
    run_info = store.read_manifest().run or {}
    if run_info.get("state") == "running":
        names = list((run_info.get("scenario") or {}).get("workload") or {})
        types = workload_types()
        durations = types[names[0]].durations if names and names[0] in types else ("api_s",)
        store.write_section("run", {**run_info, "state": "killed", "jsonl_bad_lines": bad,
                                    "summary": summarize(records, durations)})
    return len(records)


def summarize(records: list[RequestRecord],
              durations: tuple[str, ...] = ("api_s", "create_s", "delete_s")) -> dict[str, Any]:
    """Counts by outcome, the share ok and p50/p95/max of each of ``durations`` (record
    properties in seconds; ``api_s`` over every record, the others over records ok), for the
    CLI's table and the manifest. Percentiles: :func:`stacklens.drive.sla.percentile` (linear
    interpolation, as SQL ``percentile_cont``). The count key is ``servers`` (format 1)."""
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r.outcome or "pending"] = outcomes.get(r.outcome or "pending", 0) + 1
    ok = [r for r in records if r.outcome == RecordOutcome.OK]

    def pct(vals: list[float]) -> dict[str, float | None]:
        return {k: percentile(vals, q) for k, q in (("p50", 0.5), ("p95", 0.95), ("max", 1.0))}

    def values(name: str) -> list[float]:
        pool = records if name == "api_s" else ok
        return [v for r in pool if (v := getattr(r, name)) is not None]

    return {
        "servers": len(records),
        "outcomes": dict(sorted(outcomes.items())),
        "success_rate": len(ok) / len(records) if records else None,
        **{name: pct(values(name)) for name in durations},
        "hosts": len({r.host for r in records if r.host}),
    }
