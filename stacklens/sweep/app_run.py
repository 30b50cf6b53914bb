"""The ``pgbench:`` workload of a plan, run after the fio / iperf3 matrices with the same rules:
the clients of a point start together (the barrier), every raw output is kept, a failed client
is kept with its reason, a re-run skips finished point repeats (``<out>/app.jsonl``, the latest
line wins), every command has a timeout.

Raw layout: ``<out>/raw/<point>/r<n>/<client>.txt`` (pgbench's stdout: the summary),
``<client>.stderr`` (the ``--progress`` lines), ``<target>.samples`` (the /proc samples of each
client and the server, :func:`stacklens.sweep.app.sampler_command`); ``<out>/raw/pgbench-init.txt``.
Tables (columns in :mod:`stacklens.schema`): ``sweep_app`` (point x repeat x client),
``sweep_app_repeats`` (point x repeat: sums over clients), ``sweep_app_series`` (client x
second) and ``sweep_resources`` (target x second).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from stacklens.sweep.app import (
    init_command,
    netns_processes,
    parse_pgbench,
    parse_samples,
    pgbench_command,
    proc_rates,
    rates,
    sampler_command,
)
from stacklens.sweep.plan import Plan, points
from stacklens.sweep.targets import Opened, barrier_script, start_of

__all__ = [
    "APP_JOURNAL",
    "app_names",
    "app_points",
    "app_summary",
    "app_tables",
    "read_app",
    "run_app",
]

APP_JOURNAL = "app.jsonl"
SLACK_S = 60.0


def app_names(plan: Plan) -> set[str]:
    """The targets the pgbench workload uses."""
    pg = plan.pgbench
    return set() if pg is None else {pg.server, *pg.clients[:max(pg.vms)]}


def app_points(plan: Plan) -> list[tuple[str, int, int, int]]:
    """``(key, repeat, clients, connections)`` of every pgbench point repeat, in run order
    (the ``pgbench`` points of :func:`~stacklens.sweep.plan.points`)."""
    return [(p.key, p.repeat, p.n_targets, p.connections or 1)
            for p in points(plan) if p.tool == "pgbench"]


def read_app(out: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """Finished pgbench point repeats by (point, repeat); damaged lines are ignored."""
    p = out / APP_JOURNAL
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    if p.exists():
        for line in p.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                r = json.loads(line)
                rows[(r["point"], int(r["repeat"]))] = r
            except (ValueError, KeyError, TypeError):
                continue
    return rows


async def _run(op: Opened, name: str, script: str, timeout_s: float) -> tuple[Any, str | None]:
    try:
        return await op.transports[name].run(script, timeout_s), None
    except TimeoutError:
        return None, f"timeout: no end within {timeout_s:g} s"
    except Exception as e:  # transport errors: a failed target, not a crash
        return None, f"transport error: {type(e).__name__}: {e}"


def _ok(row: dict[str, Any]) -> bool:
    return bool(row["targets"]) and all(t["status"] == "ok" for t in row["targets"])


async def run_app(plan: Plan, out: Path, op: Opened, say: Callable[[str], None],
                  retry_failed: bool = False,
                  clock: Callable[[], int] = time.time_ns) -> list[dict[str, Any]]:
    """Run every pgbench point repeat not finished in ``out``; return the journal rows of all
    the plan's pgbench point repeats (before and now). Never raises for a target's failure."""
    pg = plan.pgbench
    if pg is None:
        return []
    done = read_app(out)
    todo = [(k, r, v, c) for k, r, v, c in app_points(plan)
            if (k, r) not in done or (retry_failed and not _ok(done[(k, r)]))]
    init_err = None
    if todo and pg.init:
        init_err = await _init(plan, out, op)
        if init_err:
            say(f"pgbench -i failed: {init_err}")
    with (out / APP_JOURNAL).open("a", encoding="utf-8") as journal:
        for i, (key, rep, vms, conns) in enumerate(todo):
            row = await _point(plan, out, op, key, rep, vms, conns, init_err, clock)
            journal.write(json.dumps(row) + "\n")
            journal.flush()
            done[(key, rep)] = row
            bad = [t for t in row["targets"] if t["status"] != "ok"]
            say(f"{key} r{rep}: {'ok' if not bad else 'failed'}"
                + (f" ({bad[0]['reason']})" if bad else ""))
            if pg.pause_s and i + 1 < len(todo):
                await asyncio.sleep(pg.pause_s)
    return [done[(k, r)] for k, r, _, _ in app_points(plan) if (k, r) in done]


async def _init(plan: Plan, out: Path, op: Opened) -> str | None:
    pg = plan.pgbench
    assert pg is not None
    first = pg.clients[0]
    if first not in op.transports or pg.server not in op.addresses:
        return f"target unavailable: {op.errors.get(first) or op.errors.get(pg.server)}"
    res, err = await _run(op, first, "exec " + init_command(
        op.addresses[pg.server], pg.port, pg.user, pg.database, pg.scale), 600)
    (out / "raw").mkdir(parents=True, exist_ok=True)
    if res is None:
        return err
    (out / "raw" / "pgbench-init.txt").write_text(res.stdout.decode("utf-8", "replace")
                                                  + res.stderr)
    if res.exit_status != 0:
        return f"exit status {res.exit_status}: " + (res.stderr.strip().splitlines()
                                                     or [""])[-1][:300]
    return None


async def _point(plan: Plan, out: Path, op: Opened, key: str, rep: int, vms: int, conns: int,
                 init_err: str | None, clock: Callable[[], int]) -> dict[str, Any]:
    pg = plan.pgbench
    assert pg is not None
    clients = pg.clients[:vms]
    row: dict[str, Any] = {"sweep": plan.name, "point": key, "repeat": rep, "n_targets": vms,
                           "connections": conns, "server": pg.server, "start_ns": None,
                           "time_s": pg.time_s,
                           "targets": [], "samples": {}}
    missing = [n for n in (pg.server, *clients) if n not in op.transports]
    why = init_err and f"pgbench -i failed: {init_err}"
    if missing:
        why = "target unavailable: " + "; ".join(f"{n}: {op.errors.get(n, 'not opened')}"
                                                 for n in missing)
    if why:
        row["targets"] = [{"target": c, "status": "failed", "reason": why, "raw": None,
                           "start_ns": None} for c in clients]
        return row
    folder = out / "raw" / key / f"r{rep}"
    folder.mkdir(parents=True, exist_ok=True)
    start_ns = clock() + int(plan.lead_s * 1e9)
    row["start_ns"] = start_ns
    timeout = plan.lead_s + pg.time_s + SLACK_S
    watched = list(dict.fromkeys([pg.server, *clients]))
    cmd = pgbench_command(op.addresses[pg.server], pg.port, pg.user, pg.database, conns,
                          pg.time_s)
    jobs = [_run(op, c, barrier_script(start_ns, cmd), timeout) for c in clients]
    jobs += [_run(op, t, barrier_script(start_ns, sampler_command(pg.time_s + 2)), timeout)
             for t in watched]
    procs = [(w, plan.target(w).netns) for w in watched if plan.target(w).netns]
    jobs.append(_watch_procs(folder, procs, start_ns, pg.time_s + 2))
    done = await asyncio.gather(*jobs)
    done = done[:-1]
    for w, _ in procs:
        if (folder / f"{w}.procs").exists():
            row["samples"][w + ".procs"] = str((folder / f"{w}.procs").relative_to(out))
    for w, (res, _err) in zip(watched, done[len(clients):], strict=True):
        if res is not None and res.stdout:
            (folder / f"{w}.samples").write_bytes(res.stdout)
            row["samples"][w] = str((folder / f"{w}.samples").relative_to(out))
    for c, (res, err) in zip(clients, done[:len(clients)], strict=True):
        t: dict[str, Any] = {"target": c, "status": "failed", "reason": err, "raw": None,
                             "start_ns": None}
        if res is not None:
            (folder / f"{c}.txt").write_bytes(res.stdout)
            (folder / f"{c}.stderr").write_text(res.stderr)
            t.update(raw=str((folder / f"{c}.txt").relative_to(out)),
                     start_ns=start_of(res.stderr))
            parsed = parse_pgbench(res.stdout.decode("utf-8", "replace"), res.stderr)
            if res.exit_status != 0:
                last = (res.stderr.strip().splitlines() or [""])[-1][:300]
                t["reason"] = f"exit status {res.exit_status}: {last}"
            elif parsed.error:
                t["reason"] = parsed.error
            else:
                t.update(status="ok", reason=None)
        row["targets"].append(t)
    return row


async def _watch_procs(folder: Path, procs: list[tuple[str, str | None]], start_ns: int,
                       n: int) -> tuple[None, None]:
    """Sample the processes of each namespace target ``n`` times, a second apart from the
    barrier's start, into ``<target>.procs`` (psutil, in a thread: the loop keeps running)."""
    if not procs:
        return None, None
    await asyncio.sleep(max(0.0, (start_ns - time.time_ns()) / 1e9))
    texts = {w: "" for w, _ in procs}
    for i in range(max(1, min(n, 3600))):
        for w, ns in procs:
            assert ns is not None
            texts[w] += await asyncio.to_thread(netns_processes, ns)
        if i + 1 < n:
            await asyncio.sleep(max(0.0, (start_ns + (i + 1) * 1_000_000_000
                                          - time.time_ns()) / 1e9))
    for w, text in texts.items():
        (folder / f"{w}.procs").write_text(text)
    return None, None


def _text(base: Path, rel: str) -> str:
    return (base / rel).read_text(encoding="utf-8", errors="replace")


def app_tables(rows: list[dict[str, Any]], base: Path) -> dict[str, list[dict[str, Any]]]:
    """Rows of ``sweep_app``, ``sweep_app_repeats``, ``sweep_app_series`` and
    ``sweep_resources`` from journal ``rows``, every number read from the raw files under
    ``base``. A client whose files are gone or unreadable is failed with the reason."""
    app: list[dict[str, Any]] = []
    reps: list[dict[str, Any]] = []
    series: list[dict[str, Any]] = []
    res_rows: list[dict[str, Any]] = []
    for r in rows:
        common = {"sweep": r["sweep"], "point": r["point"], "repeat": r["repeat"],
                  "n_targets": r["n_targets"], "connections": r["connections"]}
        ok = []
        for t in r["targets"]:
            a = {**common, "target": t["target"], "status": t["status"],
                 "reason": t["reason"], "raw": t["raw"], "start_ns": t["start_ns"]}
            if t["raw"]:
                try:
                    p = parse_pgbench(_text(base, t["raw"]),
                                      _text(base, t["raw"][:-4] + ".stderr"))
                except OSError as e:
                    a.update(status="failed", reason=a["reason"] or f"unreadable: {e}")
                else:
                    a.update(tps=p.tps, tpm=p.tpm, xacts=p.xacts, failed_xacts=p.failed,
                             lat_mean_ms=p.lat_mean_ms)
                    series += [{**common, "target": t["target"], "t_s": s, "tps": tps,
                                "tpm": tps * 60.0, "lat_ms": lat} for s, tps, lat in p.series]
                    if a["status"] == "ok":
                        ok.append(p)
            app.append(a)
        cpu: list[float] = []
        # intervals ending within the run (pgbench -T, half a second of slack)
        dur = r["time_s"] + 0.5 if r.get("time_s") else _dur(series, common)
        for target, rel in sorted(r["samples"].items()):
            if target.endswith(".procs"):
                continue
            try:
                samples = parse_samples(_text(base, rel))
                prel = r["samples"].get(target + ".procs")
                procs = proc_rates(_text(base, prel), r["start_ns"] or 0) if prel else []
            except OSError:
                continue
            for j, x in enumerate(rates(samples, r["start_ns"] or 0)):
                # the same one-second intervals from the barrier's start
                p_cpu = procs[j] if j < len(procs) else None
                res_rows.append({**common, "target": target, **x,
                                 "proc_cpu_pct": p_cpu[1] if p_cpu else None,
                                 "n_procs": p_cpu[2] if p_cpu else None})
                if 0 < x["t_s"] <= dur:
                    cpu.append(x["cpu_pct"])
        n = len(r["targets"])
        status = "ok" if ok and len(ok) == n else "partial" if ok else "failed"
        xacts = sum(p.xacts or 0 for p in ok)
        reps.append({**common, "status": status, "n_ok": len(ok),
                     "reason": "; ".join(dict.fromkeys(
                         t["reason"] for t in r["targets"] if t["reason"])) or None,
                     "tps": sum(p.tps or 0.0 for p in ok) if ok else None,
                     "tpm": 60.0 * sum(p.tps or 0.0 for p in ok) if ok else None,
                     "xacts": xacts if ok else None,
                     "lat_mean_ms": (sum((p.lat_mean_ms or 0.0) * (p.xacts or 0) for p in ok)
                                     / xacts) if xacts else None,
                     "cpu_pct_mean": statistics.fmean(cpu) if cpu else None})
    return {"sweep_app": app, "sweep_app_repeats": reps, "sweep_app_series": series,
            "sweep_resources": res_rows}


def _dur(series: list[dict[str, Any]], common: dict[str, Any]) -> float:
    """The run's length: the last progress second of this point repeat (inf without one)."""
    ts = [s["t_s"] for s in series if s["point"] == common["point"]
          and s["repeat"] == common["repeat"]]
    return max(ts) if ts else float("inf")


def app_summary(reps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per point: median, min and max over ok repeats of the summed TPS, TPM, the median
    mean latency and CPU, failed repeats counted."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in reps:
        groups.setdefault((r["sweep"], r["point"]), []).append(r)
    out = []
    for (sweep, point), rows in groups.items():
        good = [r for r in rows if r["status"] == "ok"]
        tps = [r["tps"] for r in good]

        def med(col: str, good: list[dict[str, Any]] = good) -> float | None:
            v = [r[col] for r in good if r.get(col) is not None]
            return statistics.median(v) if v else None

        out.append({"sweep": sweep, "point": point, "n_targets": rows[0]["n_targets"],
                    "connections": rows[0]["connections"], "n_repeats": len(rows),
                    "n_ok": len(good), "n_failed": len(rows) - len(good),
                    "tps": med("tps"), "tps_min": min(tps) if tps else None,
                    "tps_max": max(tps) if tps else None, "tpm": med("tpm"),
                    "lat_mean_ms": med("lat_mean_ms"), "cpu_pct_mean": med("cpu_pct_mean"),
                    "reasons": "; ".join(dict.fromkeys(
                        r["reason"] for r in rows if r["status"] != "ok" and r["reason"]))
                    or None})
    return out
