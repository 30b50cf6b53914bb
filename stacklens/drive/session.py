"""One ``stacklens run``: resolve the scenario against the cloud, drive it, write the run folder.

Run folder (on top of :mod:`stacklens.store`'s layout)::

    requests.jsonl            record snapshots as they happened (see stacklens.drive.records)
    scenario.yaml             the scenario as given
    tables/requests.parquet   the canonical requests table (last snapshot per server)
    manifest.json             "run": run id, name prefix, endpoint, plan, stats, SLA, leftovers

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

from stacklens.drive.client import ComputeClient, Connection
from stacklens.drive.clock import Clock
from stacklens.drive.driver import Driver, DriveStats, DriveSummary
from stacklens.drive.plan import Plan, new_run_id, plan_from_scenario
from stacklens.drive.reach import Prober
from stacklens.drive.records import RecordWriter, read_records, to_frame
from stacklens.drive.scenario import Scenario, scenario_dict
from stacklens.drive.sla import SlaCheck, evaluate_sla, percentile
from stacklens.errors import UserError
from stacklens.store import RunStore

__all__ = ["RunResult", "finalize_records", "resolve_plan", "run_scenario", "summarize"]

REQUESTS_JSONL = "requests.jsonl"


@dataclass(frozen=True)
class RunResult:
    """What a run produced."""

    summary: DriveSummary
    plan: Plan
    sla: list[SlaCheck]
    out: Path

    @property
    def breached(self) -> list[SlaCheck]:
        """The SLA checks that failed."""
        return [c for c in self.sla if not c.ok]


async def resolve_plan(scn: Scenario, client: ComputeClient, run_id: str,
                       computes: int | None = None) -> Plan:
    """Look up flavor, image, network (and the compute count for ``per_compute``)."""
    b = scn.boot
    flavor = await client.find_flavor(b.flavor)
    image = await client.find_image(b.image)
    network = await client.find_network(b.network)
    n = b.computes or computes
    if b.per_compute is not None and not n:
        n = await client.count_computes()
        if not n:
            raise UserError("per_compute: no nova-compute service is up (set workload computes)")
    return plan_from_scenario(scn, run_id, image, flavor, network, n)


def _plan_dict(plan: Plan) -> dict[str, Any]:
    d = dataclasses.asdict(plan)
    d["shape"] = repr(plan.shape)
    d["prefix"] = plan.prefix
    return d


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
    on_plan: Callable[[Plan], None] | None = None,
    computes: int | None = None,
    run_id: str | None = None,
) -> RunResult:
    """Drive ``scn`` against ``conn`` and write the run folder ``out``."""
    out = Path(out)
    if (out / REQUESTS_JSONL).exists():
        raise UserError(f"{out} already holds a run ({REQUESTS_JSONL}); choose another --out")
    store = RunStore(out)
    c = scn.client
    async with ComputeClient(conn, microversion=c.microversion, timeout_s=c.request_timeout_s,
                             max_connections=c.max_connections, transport=transport) as client:
        plan = await resolve_plan(scn, client, run_id or new_run_id(), computes)
        if on_plan:
            on_plan(plan)
        out.mkdir(parents=True, exist_ok=True)
        if scenario_text is not None:
            (out / "scenario.yaml").write_text(scenario_text, encoding="utf-8")
        run_info: dict[str, Any] = {
            "run_id": plan.run_id, "prefix": plan.prefix, "scenario": scenario_dict(scn),
            "cloud": scn.cloud, "connection": conn.describe(), "plan": _plan_dict(plan),
            "logs": scn.logs, "state": "running",
        }
        store.update_manifest(run=run_info)
        with RecordWriter(out / REQUESTS_JSONL) as writer:
            driver = Driver(plan, client, writer, clock=clock, prober=prober, on_tick=on_tick)
            summary = await driver.run()
    checks = evaluate_sla(summary.records, scn.sla)
    store.write({"requests": to_frame(summary.records)})
    m = store.manifest()
    run_info.update(
        state="interrupted" if summary.interrupted else "finished",
        started_ns=summary.started_ns, ended_ns=summary.ended_ns,
        stats=dataclasses.asdict(summary.stats), calls=summary.calls,
        leftovers=summary.leftovers, errors=summary.errors[:100],
        summary=summarize(summary.records),
        sla=[dataclasses.asdict(x) for x in checks],
    )
    store.update_manifest(run=run_info,
                          stages=list(dict.fromkeys([*m.get("stages", []), "run"])))
    return RunResult(summary, plan, checks, out)


def finalize_records(out: str | Path) -> int:
    """Rebuild the ``requests`` table from ``requests.jsonl`` (after a run was killed);
    returns the number of servers."""
    out = Path(out)
    records, bad = read_records(out / REQUESTS_JSONL)
    store = RunStore(out)
    store.write({"requests": to_frame(records)})
    run_info = store.manifest().get("run") or {}
    if run_info.get("state") == "running":
        store.update_manifest(run={**run_info, "state": "killed", "jsonl_bad_lines": bad,
                                   "summary": summarize(records)})
    return len(records)


def summarize(records: list) -> dict[str, Any]:
    """Counts by outcome and create/delete percentiles (the CLI's table and the manifest)."""
    outcomes: dict[str, int] = {}
    for r in records:
        outcomes[r.outcome or "pending"] = outcomes.get(r.outcome or "pending", 0) + 1
    ok = [r for r in records if r.outcome == "ok"]

    def pct(vals: list[float]) -> dict[str, float | None]:
        return {k: percentile(vals, q) for k, q in (("p50", 0.5), ("p95", 0.95), ("max", 1.0))}

    return {
        "servers": len(records),
        "outcomes": dict(sorted(outcomes.items())),
        "success_rate": len(ok) / len(records) if records else None,
        "api_s": pct([r.api_s for r in records if r.api_s is not None]),
        "create_s": pct([r.create_s for r in ok if r.create_s is not None]),
        "delete_s": pct([r.delete_s for r in ok if r.delete_s is not None]),
        "hosts": len({r.host for r in records if r.host}),
    }
