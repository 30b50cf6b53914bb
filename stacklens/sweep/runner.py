"""``stacklens sweep run``: every point repeat of a plan, targets started together, raw output
kept, failures kept as data, resumable.

Layout of a sweep folder::

    <out>/plan.json                     the validated plan
    <out>/journal.jsonl                 one PointRun per finished point repeat (append only)
    <out>/probes.jsonl                  one sweep_probes row per finished probe repeat
    <out>/app.jsonl                     one pgbench point repeat per line (app_run)
    <out>/raw/<point>/r<repeat>/<target>.json       the tool's JSON (stdout) as produced
    <out>/raw/<point>/r<repeat>/<target>.stderr     its stderr (fio / iperf3 messages)
    <out>/raw/<point>/r<repeat>/<server>-srv<i>.json  iperf3 server side
    <out>/tables/*.parquet, stacklens.duckdb        sweep_points / _repeats / _summary

Resuming: a point repeat already in the journal is skipped (with ``retry_failed`` only the ok
ones are); the latest journal line of a point repeat wins. Every loop is bounded: the plan's
matrix (at most :data:`~stacklens.sweep.plan.MAX_POINTS`), a timeout on every command. fio's
test files (``<workdir>/sl-<target>.<job>``) are removed from the targets at the end.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from stacklens.sweep.app_run import app_names, run_app
from stacklens.sweep.fio import fio_command
from stacklens.sweep.iperf import client_command, server_command
from stacklens.sweep.plan import Plan, Point, points
from stacklens.sweep.probes_run import probe_names, run_probes
from stacklens.sweep.tables import PointRun, TargetRun, with_reason
from stacklens.sweep.targets import Opened, barrier_script, open_targets, start_of

__all__ = ["JOURNAL", "RunOptions", "SweepOutcome", "read_journal", "run_sweep"]

JOURNAL = "journal.jsonl"
#: Slack added to a point's own duration before its commands are killed.
SLACK_S = 60.0
#: How long iperf3 servers may outlive their clients before they are stopped.
SERVER_GRACE_S = 5.0


@dataclass(frozen=True)
class RunOptions:
    """How to run: ``retry_failed`` re-runs failed/partial point repeats of a previous run;
    ``on_event(text)`` receives one line per point repeat (progress, for stderr)."""

    retry_failed: bool = False
    on_event: Callable[[str], None] | None = None


@dataclass(frozen=True)
class SweepOutcome:
    """What a run did: point repeats run now, skipped (finished before), failed or partial."""

    ran: int
    skipped: int
    failed: int
    runs: list[PointRun]
    probes: list[dict[str, Any]] = field(default_factory=list)
    app: list[dict[str, Any]] = field(default_factory=list)


def read_journal(out: Path) -> dict[tuple[str, int], PointRun]:
    """The journal's point repeats by (point, repeat), the latest line winning; damaged lines
    (a run killed mid-write) are ignored."""
    p = out / JOURNAL
    found: dict[tuple[str, int], PointRun] = {}
    if not p.exists():
        return found
    for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            d = json.loads(line)
            run = PointRun(**{**d, "targets": tuple(TargetRun(**t) for t in d["targets"])})
        except (ValueError, TypeError, KeyError):
            continue
        found[(run.point, run.repeat)] = run
    return found


def _status(run: PointRun) -> str:
    ok = sum(t.status == "ok" for t in run.targets)
    return "ok" if ok == len(run.targets) and ok else "partial" if ok else "failed"


def _params(p: Point) -> dict[str, Any]:
    return {"rw": p.rw, "bs": p.bs, "iodepth": p.iodepth, "numjobs": p.numjobs,
            "protocol": p.protocol, "parallel": p.parallel, "reverse": p.reverse}


async def _one(tr: Any, script: str, timeout_s: float) -> tuple[Any, str | None]:
    try:
        return await tr.run(script, timeout_s), None
    except TimeoutError:
        return None, f"timeout: no end within {timeout_s:g} s"
    except OSError as e:
        return None, f"transport error: {e}"
    except Exception as e:  # asyncssh channel errors and the like: a failed target, not a crash
        return None, f"transport error: {type(e).__name__}: {e}"


def _tool_error(doc: Any) -> str | None:
    """The error a tool wrote into its own JSON: iperf3's ``error``, fio's job ``error``."""
    if not isinstance(doc, dict):
        return "output is not a JSON object"
    if doc.get("error"):
        return str(doc["error"])
    for j in doc.get("jobs") or []:
        if isinstance(j, dict) and j.get("error"):
            return f"fio job {j.get('jobname')}: error {j['error']}"
    return None


def _keep(res: Any, err: str | None, folder: Path, name: str, out: Path, start_ns: int,
          offset_ns: int) -> TargetRun:
    """Write one target's output and judge it."""
    if res is None:
        return TargetRun(name, "failed", err)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.stderr").write_text(res.stderr)
    raw = None
    reason = None
    if res.stdout.strip():
        (folder / f"{name}.json").write_bytes(res.stdout)
        raw = str((folder / f"{name}.json").relative_to(out))
        try:
            reason = _tool_error(json.loads(res.stdout))
        except ValueError:
            reason, raw = "output is not JSON", None
    if res.exit_status != 0 and reason is None:
        last = (res.stderr.strip().splitlines() or [""])[-1][:300]
        reason = f"exit status {res.exit_status}: {last}".rstrip(": ")
    elif raw is None and reason is None:
        reason = "no output"
    started = start_of(res.stderr)
    start = started - offset_ns if started is not None else None
    return TargetRun(name, "failed" if reason else "ok", reason, raw, start,
                     (start - start_ns) / 1e6 if start is not None else None,
                     offset_ns / 1e6)


async def _run_fio(plan: Plan, p: Point, op: Opened, out: Path, folder: Path,
                   clock: Callable[[], int]) -> tuple[TargetRun, ...]:
    assert plan.fio is not None
    f = plan.fio
    start_ns = clock() + int(plan.lead_s * 1e9)
    timeout = plan.lead_s + f.ramp_s + f.runtime_s + SLACK_S
    jobs = []
    for name in p.targets:
        off = op.offsets.get(name)
        script = barrier_script(start_ns + (off.offset_ns if off else 0),
                                fio_command(f, p, plan.workdir, name), plan.workdir)
        jobs.append(_one(op.transports[name], script, timeout))
    done = await asyncio.gather(*jobs)
    return tuple(
        _keep(res, err, folder, name, out, start_ns,
              op.offsets[name].offset_ns if name in op.offsets else 0)
        for name, (res, err) in zip(p.targets, done, strict=True))


async def _run_iperf(plan: Plan, p: Point, op: Opened, out: Path, folder: Path,
                     clock: Callable[[], int]) -> tuple[TargetRun, ...]:
    assert plan.iperf3 is not None
    m = plan.iperf3
    timeout = plan.lead_s + m.time_s + SLACK_S
    servers = [asyncio.ensure_future(_one(op.transports[s], "exec " + server_command(m.port + i),
                                          timeout + 5)) for i, s in enumerate(p.servers)]
    await asyncio.sleep(0.5)  # iperf3 -s listens within milliseconds; the barrier adds lead_s
    start_ns = clock() + int(plan.lead_s * 1e9)
    jobs = []
    for i, (c, s) in enumerate(zip(p.targets, p.servers, strict=True)):
        off = op.offsets.get(c)
        cmd = client_command(m, p, op.addresses[s], m.port + i)
        jobs.append(_one(op.transports[c], barrier_script(
            start_ns + (off.offset_ns if off else 0), cmd), timeout))
    done = await asyncio.gather(*jobs)
    # a server whose client never came (unreachable, failed) is stopped, not waited for
    _, late = await asyncio.wait(servers, timeout=SERVER_GRACE_S)
    for task in late:
        task.cancel()
    await asyncio.gather(*servers, return_exceptions=True)
    folder.mkdir(parents=True, exist_ok=True)
    for i, (s, task) in enumerate(zip(p.servers, servers, strict=True)):
        res = None if task.cancelled() or task.exception() else task.result()[0]
        if res is not None and res.stdout.strip():
            (folder / f"{s}-srv{i}.json").write_bytes(res.stdout)
    return tuple(
        _keep(res, err, folder, name, out, start_ns,
              op.offsets[name].offset_ns if name in op.offsets else 0)
        for name, (res, err) in zip(p.targets, done, strict=True))


async def run_sweep(plan: Plan, out: Path, opts: RunOptions = RunOptions(),
                    clock: Callable[[], int] = time.time_ns) -> SweepOutcome:
    """Run every point repeat of ``plan`` not finished in ``out`` yet; return what was done.
    Never raises for a target's failure (it is recorded); raises OSError when ``out`` cannot
    be written."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan.json").write_text(plan.model_dump_json(indent=2))
    todo = [p for p in points(plan) if p.tool != "pgbench"]  # pgbench: app_run.run_app
    done = read_journal(out)
    names = ({n for p in todo for n in (*p.targets, *p.servers)} | probe_names(plan)
             | app_names(plan))
    say = opts.on_event or (lambda _s: None)
    op = await open_targets(plan, names)
    for n, err in sorted(op.errors.items()):
        say(f"target {n}: cannot be used: {err}")
    ran = skipped = failed = 0
    try:
        with (out / JOURNAL).open("a", encoding="utf-8") as journal:
            for i, p in enumerate(todo):
                prev = done.get((p.key, p.repeat))
                if prev is not None and (not opts.retry_failed or _status(prev) == "ok"):
                    skipped += 1
                    continue
                run = await _run_point(plan, p, op, out, clock)
                journal.write(json.dumps(asdict(run)) + "\n")
                journal.flush()
                done[(p.key, p.repeat)] = run
                ran += 1
                st = _status(run)
                failed += st != "ok"
                say(f"[{i + 1}/{len(todo)}] {p.key} r{p.repeat}: {st}"
                    + (f" ({run.targets[0].reason or run.reason})" if st != "ok" else ""))
                pause = (plan.fio.pause_s if p.tool == "fio" and plan.fio else
                         plan.iperf3.pause_s if plan.iperf3 else 0.0)
                if pause and i + 1 < len(todo):
                    await asyncio.sleep(pause)
        app = await run_app(plan, out, op, say, opts.retry_failed, clock)
        probes = await run_probes(plan, out, op, say)
        if ran and plan.fio is not None:
            await _remove_files(plan, op)
    finally:
        await op.close()
    keys = [(p.key, p.repeat) for p in todo]
    return SweepOutcome(ran, skipped, failed, [done[k] for k in keys if k in done], probes,
                        app)


async def _remove_files(plan: Plan, op: Opened) -> None:
    """Remove fio's test files (``<workdir>/sl-<target>.*``) from every fio target; a
    failure leaves them (nothing else is removed)."""
    for name in plan.fio_targets():
        if name in op.transports:
            await _one(op.transports[name],
                       f"rm -f {plan.workdir}/sl-{name}.[0-9]*", 60)


async def _run_point(plan: Plan, p: Point, op: Opened, out: Path,
                     clock: Callable[[], int]) -> PointRun:
    folder = out / "raw" / p.key / f"r{p.repeat}"
    base = PointRun(plan.name, p.tool, p.key, p.repeat, p.n_targets, _params(p),
                    tuple(TargetRun(n, "ok") for n in p.targets))
    missing = [n for n in (*p.targets, *p.servers) if n not in op.transports]
    if missing:
        why = "; ".join(f"{n}: {op.errors.get(n, 'not opened')}" for n in missing)
        return with_reason(base, f"target unavailable: {why}")
    if p.tool == "fio":
        targets = await _run_fio(plan, p, op, out, folder, clock)
    else:
        targets = await _run_iperf(plan, p, op, out, folder, clock)
    return PointRun(plan.name, p.tool, p.key, p.repeat, p.n_targets, _params(p), targets)
