"""``stacklens capacity SCENARIO --vary concurrency|computes --sla KEY=VALUE --out DIR``:
step the load of a boot-storm scenario until the SLA breaks (:mod:`stacklens.forecast.capacity`).

Targets: ``forecast`` (default; the calibrated model, ``--model``, knobs with ``--set``) or
``cloud`` (the cloud the scenario names, e.g. the lab: each step is ``stacklens run`` of the
scenario with the step's concurrency, so only ``--vary concurrency``). Each step's run folder
stays in DIR (``step-<vary>-<value>``); DIR/capacity.json holds the search and makes it
resumable: run the same command again after an interruption.

Step sizes: varying concurrency keeps the scenario's servers but boots at least two waves
(servers = max(scenario servers, 2 x concurrency)); varying computes keeps the scenario's
servers per compute and its ratio of concurrency to servers (the seeds' fixed ratio per node).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import typer
import yaml

from stacklens.cli._render import err
from stacklens.errors import InputNotFound, UserError
from stacklens.forecast.capacity import parse_sla, search
from stacklens.forecast.knobs import parse_sets
from stacklens.forecast.run import forecast_run, knobs_for, resolve_model

__all__ = ["capacity"]


def _storm(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    if not path.is_file():
        raise InputNotFound(f"scenario {path} does not exist")
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        bs = dict(doc["workload"]["boot_servers"])
    except (yaml.YAMLError, KeyError, TypeError) as e:
        raise UserError(f"{path}: not a boot_servers scenario ({e})") from None
    return doc, bs


def _sizes(bs: dict[str, Any], vary: str, v: int) -> tuple[int, int, int]:
    """(computes, servers, concurrency) of the step with value ``v``."""
    k = int(bs.get("computes") or 4)
    per = int(bs.get("per_compute") or 0)
    total = int(bs.get("count") or per * k or 20 * k)
    conc = int(bs.get("concurrency") or total)
    if vary == "concurrency":
        return k, max(total, 2 * v), v
    per = per or max(1, total // k)
    servers = per * v
    return v, servers, max(1, round(servers * conc / total))


def capacity(
    scenario: Path = typer.Argument(..., help="Boot-storm scenario (examples/boot-storm.yaml)."),
    vary: str = typer.Option("concurrency", "--vary", help="concurrency or computes."),
    sla: list[str] = typer.Option([], "--sla", help="p95_s=60, p50_s=.., success_rate=0.95, "
                                  "throughput_per_min=.. (repeatable)."),
    out: Path = typer.Option(..., "--out", "-o", help="Search folder (resumable)."),
    target: str = typer.Option("forecast", "--target", help="forecast or cloud."),
    model: str | None = typer.Option(None, "--model", help="Calibration [default: shipped]."),
    sets: list[str] = typer.Option([], "--set", help="Model knob=value (forecast target)."),
    start: int = typer.Option(5, "--start", min=1, help="First value of the varied quantity."),
    max_value: int = typer.Option(2560, "--max", min=1, help="Largest value tried."),
    resolution: float = typer.Option(0.1, "--resolution", min=0.0,
                                     help="Bisect until the gap is this fraction of the value."),
    max_steps: int = typer.Option(16, "--max-steps", min=1, max=100),
    seed: int = typer.Option(1, "--seed"),
    as_json: bool = typer.Option(False, "--json", help="Print capacity.json to stdout."),
) -> None:
    """Find the load where the SLA breaks, keeping every step's run, and name the component
    that saturated first."""
    if vary not in ("concurrency", "computes"):
        raise UserError("--vary must be concurrency or computes")
    if target not in ("forecast", "cloud"):
        raise UserError("--target must be forecast or cloud")
    if target == "cloud" and vary != "concurrency":
        raise UserError("--target cloud varies concurrency only (the cloud's size is fixed); "
                        "vary computes with --target forecast")
    limits = parse_sla(sla)
    doc, bs = _storm(scenario)
    settings: dict[str, Any] = {"target": target, "scenario": str(scenario.resolve()),
                                "resolution": resolution}
    if target == "forecast":
        cal, name = resolve_model(model)
        settings.update(model=name, sets=list(sets), seed=seed)

        def step(v: int, run: Path) -> None:
            k, n, c = _sizes(bs, vary, v)
            kn = parse_sets(sets, knobs_for(cal, computes=k, servers=n, concurrency=c,
                                            seed=seed))
            forecast_run(cal, kn, run, name, force=True)
    else:
        def step(v: int, run: Path) -> None:
            k, n, c = _sizes(bs, vary, v)
            d = json.loads(json.dumps(doc))
            b = d["workload"]["boot_servers"]
            if b.get("computes"):
                b["per_compute"] = max(1, math.ceil(n / int(b["computes"])))
                b.pop("count", None)
            else:
                b["count"] = n
            b["concurrency"] = c
            d["name"] = f"{doc.get('name', 'capacity')}-c{c}"
            run.mkdir(parents=True, exist_ok=True)
            scn = run.parent / f"{run.name}.yaml"
            scn.write_text(yaml.safe_dump(d, sort_keys=False), encoding="utf-8")
            p = subprocess.run([sys.executable, "-m", "stacklens", "run", str(scn), "--out",
                                str(run), "--force"], timeout=7200)
            if p.returncode not in (0, 3):  # 3: the run's own SLA breached, still measured
                raise UserError(f"capacity: stacklens run failed at {vary}={v} (exit "
                                f"{p.returncode}); the search resumes from here")

    def show(rec: dict[str, Any]) -> None:
        m = rec["metrics"]

        def f(x: float | None) -> str:
            return "-" if x is None else f"{x:.1f}"

        err.print(f"capacity: {vary}={rec['value']}: p50 {f(m.get('create_p50_s'))} s, p95 "
                  f"{f(m.get('create_p95_s'))} s, {f(m.get('throughput_per_min'))} boots/min, "
                  f"success {m.get('success_rate')}: "
                  + ("; ".join(rec["breaches"]) or "within SLA"))

    state = search(out, vary, limits, step, start, max_value, resolution, max_steps,
                   settings, on_step=show)
    if as_json:
        typer.echo(json.dumps(state, indent=2, default=str))
        return
    b = state["boundary"]
    if b["first_fail"] is None:
        typer.echo(f"SLA held up to {vary}={b['last_ok']} (largest tried); steps in {out}")
        return
    ev = state["evidence"] or {}
    top = (ev.get("components") or [{}])[0]
    typer.echo(f"boundary: {vary} {b['last_ok']} passes, {b['first_fail']} breaks the SLA "
               f"({_why(state)})")
    first = min(s["value"] for s in state["steps"])
    if top:
        typer.echo(f"saturated first: {ev['saturated_first']} (p50 {top['p50_first_s']:.2f} s "
                   f"at {vary}={first} -> {top['p50_at_break_s']:.2f} s at {b['first_fail']})")
    far = {c: v for c, v in (ev.get("beyond_calibration_at_break") or {}).items() if v > 0}
    if far:
        typer.echo(f"at {vary}={b['first_fail']} the model drew times beyond its calibrated "
                   "load (extrapolated): " + ", ".join(
                       f"{c} {v:.0%}" for c, v in sorted(far.items(), key=lambda kv: -kv[1])))
    typer.echo(f"steps kept in {out} ({len(state['steps'])} runs; `stacklens report` each)")


def _why(state: dict[str, Any]) -> str:
    ff = state["boundary"]["first_fail"]
    for s in state["steps"]:
        if s["value"] == ff:
            return "; ".join(s["breaches"])
    return ""
