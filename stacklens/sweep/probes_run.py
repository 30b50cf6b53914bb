"""The ``probes:`` of a plan, run after its matrices: latency by placement and fail-over gaps
(:mod:`stacklens.sweep.probe`), and ``iperf3 --udp`` jitter and loss by placement (iperf3's
JSON, :mod:`stacklens.sweep.iperf`), one row each for the ``sweep_probes`` table.

Resumable like the points: ``<out>/probes.jsonl`` holds one row per finished probe repeat
(the latest line wins) and ping's raw output goes to ``<out>/raw/probes/<probe>/r<n>.txt``
(iperf3's to ``r<n>.json`` and ``r<n>-srv.json``).
A probe whose targets cannot be reached, or whose fault command fails, is kept with its
reason.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from stacklens.sweep.iperf import parse_iperf, server_command
from stacklens.sweep.plan import FailoverProbe, JitterProbe, LatencyProbe, Plan
from stacklens.sweep.probe import ping_probe, timed
from stacklens.sweep.targets import Opened

__all__ = ["PROBE_JOURNAL", "probe_names", "read_probes", "run_probes"]

PROBE_JOURNAL = "probes.jsonl"


def probe_names(plan: Plan) -> set[str]:
    """The targets the plan's probes use."""
    if plan.probes is None:
        return set()
    pairs = [(p.src, p.dst) for p in plan.probes.latency]
    out = {n for pair in pairs + [(j.src, j.dst) for j in plan.probes.jitter] for n in pair}
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
    todo: list[tuple[str, str, LatencyProbe | FailoverProbe | JitterProbe]] = [
        *((f"latency-{p.src}-{p.dst}", "latency", p) for p in pr.latency),
        *((f"jitter-{p.src}-{p.dst}-{i}", "jitter", p) for i, p in enumerate(pr.jitter)),
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
               p: LatencyProbe | FailoverProbe | JitterProbe, rep: int) -> dict[str, Any]:
    assert plan.probes is not None
    pr = plan.probes
    row: dict[str, Any] = {"sweep": plan.name, "kind": kind, "probe": key, "repeat": rep,
                           "src": p.src, "dst": p.dst,
                           "placement": getattr(p, "placement", None),
                           "interval_s": pr.interval_s, "status": "ok", "reason": None}
    need = [p.src, p.dst] + ([p.target] if isinstance(p, FailoverProbe) else [])
    missing = [n for n in need if n not in op.transports]
    if missing:
        row.update(status="failed", reason="target unavailable: " + "; ".join(
            f"{n}: {op.errors.get(n, 'not opened')}" for n in missing))
        return row
    raw = out / "raw" / "probes" / key / f"r{rep}.txt"
    raw.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(p, JitterProbe):
        return await _jitter(op, p, row, raw, out)
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


async def _jitter(op: Opened, p: JitterProbe, row: dict[str, Any], raw: Path,
                  out: Path) -> dict[str, Any]:
    """``iperf3 --udp`` from ``p.src`` to a one-test server on ``p.dst``: the client's JSON
    (``raw``, ``.json``) gives jitter (ms), loss (%) and the received rate; the server's
    JSON is kept beside it (``-srv.json``). Failures set ``status``/``reason``."""
    timeout = p.time_s + 30
    srv = asyncio.ensure_future(op.transports[p.dst].run("exec " + server_command(p.port),
                                                         timeout + 10))
    await asyncio.sleep(0.5)  # the server listens within milliseconds
    cmd = ["iperf3", "-c", op.addresses[p.dst], "-p", str(p.port), "-J", "-u", "-b",
           p.bitrate, "-t", f"{p.time_s:g}", "--connect-timeout", "3000"]
    reason = None
    try:
        res = await op.transports[p.src].run("exec " + " ".join(shlex.quote(a) for a in cmd),
                                             timeout)
    except (TimeoutError, OSError) as e:
        res, reason = None, f"iperf3 client: {e}"
    try:
        sres = await asyncio.wait_for(srv, 5)
        raw.with_name(raw.stem + "-srv.json").write_bytes(sres.stdout)
    except (TimeoutError, OSError):
        srv.cancel()
        await asyncio.gather(srv, return_exceptions=True)
    if res is not None:
        path = raw.with_suffix(".json")
        path.write_bytes(res.stdout)
        row["raw"] = str(path.relative_to(out))
        try:
            r = parse_iperf(json.loads(res.stdout))
        except (ValueError, KeyError, TypeError) as e:
            reason = f"iperf3 output unreadable (exit {res.exit_status}): {e}; " + \
                res.stderr.strip()[:200]
        else:
            reason = r.error
            row.update(jitter_ms=r.jitter_ms, loss_pct=r.lost_percent, bw_mbit_s=r.mbit_s,
                       sent=r.packets, received=(r.packets - r.lost_packets
                                                 if r.packets is not None
                                                 and r.lost_packets is not None else None))
    if reason:
        row.update(status="failed", reason=reason)
    return row
