"""The ``probes:`` of a plan, run after its matrices: latency by placement and fail-over gaps
(:mod:`stacklens.sweep.probe`), one row each for the ``sweep_probes`` table.

Resumable like the points: ``<out>/probes.jsonl`` holds one row per finished probe repeat
(the latest line wins) and ping's raw output goes to ``<out>/raw/probes/<probe>/r<n>.txt``.
A probe whose targets cannot be reached, or whose fault command fails, is kept with its
reason.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from stacklens.sweep.plan import FailoverProbe, LatencyProbe, Plan
from stacklens.sweep.probe import ping_probe, timed
from stacklens.sweep.targets import Opened

__all__ = ["PROBE_JOURNAL", "probe_names", "read_probes", "run_probes"]

PROBE_JOURNAL = "probes.jsonl"


def probe_names(plan: Plan) -> set[str]:
    """The targets the plan's probes use."""
    if plan.probes is None:
        return set()
    out = {n for p in plan.probes.latency for n in (p.src, p.dst)}
    return out | {n for p in plan.probes.failover for n in (p.src, p.dst, p.target)}


def read_probes(out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Finished probe rows by (probe, repeat); damaged lines are ignored."""
    p = out / PROBE_JOURNAL
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    if p.exists():
        for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                r = json.loads(line)
                rows[(r["probe"], int(r["repeat"]))] = r
            except (ValueError, KeyError, TypeError):
                continue
    return rows


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")


def _fault(op: Opened, f: FailoverProbe, errors: list[str]) -> Callable[[], Awaitable[float]]:
    async def run(cmd: str) -> None:
        try:
            r = await op.transports[f.target].run(cmd, 30)
        except (TimeoutError, OSError) as e:
            errors.append(f"{cmd!r} on {f.target}: {e}")
            return
        if r.exit_status != 0:
            errors.append(f"{cmd!r} on {f.target}: exit {r.exit_status}: {r.stderr.strip()[:200]}")

    async def inject() -> None:
        await run(f.inject)

    async def undo() -> None:
        await run(f.undo)

    return timed(inject, f.hold_s, undo)


async def run_probes(plan: Plan, out: Path, op: Opened,
                     say: Callable[[str], None]) -> list[dict[str, Any]]:
    """Run every probe repeat not finished in ``out``; return all rows of the plan's probes
    (finished before and now), columns of ``sweep_probes``."""
    if plan.probes is None:
        return []
    pr = plan.probes
    done = read_probes(out)
    todo: list[tuple[str, str, LatencyProbe | FailoverProbe]] = [
        *((f"latency-{p.src}-{p.dst}", "latency", p) for p in pr.latency),
        *((f"failover-{p.src}-{p.dst}-on-{p.target}-{i}", "failover", p)
          for i, p in enumerate(pr.failover))]
    rows = []
    with (out / PROBE_JOURNAL).open("a", encoding="utf-8") as journal:
        for key, kind, p in todo:
            for rep in range(pr.repeats):
                if (key, rep) in done:
                    rows.append(done[(key, rep)])
                    continue
                row = await _one(plan, out, op, key, kind, p, rep)
                journal.write(json.dumps(row) + "\n")
                journal.flush()
                rows.append(row)
                say(f"probe {key} r{rep}: {row['status']}"
                    + (f" ({row['reason']})" if row["reason"] else ""))
    return rows


async def _one(plan: Plan, out: Path, op: Opened, key: str, kind: str,
               p: LatencyProbe | FailoverProbe, rep: int) -> dict[str, Any]:
    assert plan.probes is not None
    pr = plan.probes
    row: dict[str, Any] = {"sweep": plan.name, "kind": kind, "probe": key, "repeat": rep,
                           "src": p.src, "dst": p.dst,
                           "placement": p.placement if isinstance(p, LatencyProbe) else None,
                           "interval_s": pr.interval_s, "status": "ok", "reason": None}
    need = [p.src, p.dst] + ([p.target] if isinstance(p, FailoverProbe) else [])
    missing = [n for n in need if n not in op.transports]
    if missing:
        row.update(status="failed", reason="target unavailable: " + "; ".join(
            f"{n}: {op.errors.get(n, 'not opened')}" for n in missing))
        return row
    raw = out / "raw" / "probes" / key / f"r{rep}.txt"
    raw.parent.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    res = await ping_probe(
        op.transports[p.src], op.addresses[p.dst], pr.interval_s, pr.duration_s,
        fault=_fault(op, p, errors) if isinstance(p, FailoverProbe) else None,
        fault_after_s=p.after_s if isinstance(p, FailoverProbe) else 1.0,
        keep=lambda text: _write(raw, text))
    row.update(raw=str(raw.relative_to(out)), sent=res.sent, received=res.received,
               loss_pct=res.loss_pct, rtt_p50_ms=res.rtt_p50_ms, rtt_p99_ms=res.rtt_p99_ms,
               rtt_max_ms=res.rtt_max_ms, max_gap_s=res.max_gap_s, outage_s=res.outage_s,
               fault_s=res.fault_s)
    reason = "; ".join([*([res.error] if res.error else []), *errors]) or None
    if reason:
        row.update(status="failed", reason=reason)
    return row
