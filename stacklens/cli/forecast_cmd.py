"""``stacklens forecast``: a boot storm in the calibrated model, written as a run folder.

Forms (the first argument picks one)::

    stacklens forecast [MODEL] --computes N --servers M --concurrency C [--set knob=value]
                       --out RUN            simulate; then `stacklens report RUN`
    stacklens forecast calibrate RUN... -o model.json [--cores N [--demand regression]]
                                                           fit a model to traced runs (with
                                                           resource samples: a shared CPU of
                                                           N cores, stacklens.forecast.cpu)
    stacklens forecast validate MODEL RUN... [--seeds S] [--record]
                                                           predicted vs measured (median of
                                                           RUNs); --record keeps it in MODEL
    stacklens forecast knobs                               list the knobs and their defaults

MODEL is a calibration file, or omitted / ``lab-2025.1`` for the model shipped with stacklens.
Data goes to stdout, progress to stderr; the run folder says "simulated" (manifest section
``forecast``, hosts ``simulated-*``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import typer

from stacklens.cli._render import err
from stacklens.errors import UserError
from stacklens.forecast.attribution import fit_attribution
from stacklens.forecast.calibrate import calibrate, run_settings
from stacklens.forecast.cpufit import fit_stretch
from stacklens.forecast.knobs import KNOB_HELP, Knobs, parse_sets
from stacklens.forecast.records import beyond_by_component
from stacklens.forecast.run import forecast_run, knobs_for, resolve_model
from stacklens.forecast.tables import SIMULATED, to_tables
from stacklens.forecast.validate import (
    compare,
    measured_metrics,
    median_metrics,
    record,
    render,
    seed_spread,
)
from stacklens.store import RunStore

__all__ = ["forecast"]


def _commit() -> str | None:
    try:
        r = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                           timeout=10, cwd=Path(__file__).parent)
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _calibrate(runs: list[str], out: Path | None, provenance: list[str], load: str,
               cores: float | None, demand: str = "regression",
               stage_load: dict[str, str] | None = None) -> None:
    if out is None:
        raise UserError("forecast calibrate: -o model.json is required")
    prov: dict[str, object] = {"stacklens_commit": _commit()}
    for item in provenance:
        if "=" not in item:
            raise UserError(f"--provenance {item}: expected key=value")
        k, v = item.split("=", 1)
        prov[k.strip()] = v.strip()
    cal = calibrate(runs, provenance=prov, load=load, cores=cores, demand=demand,
                    stage_load=stage_load)
    cal = fit_attribution(fit_stretch(cal, runs), runs)
    out.write_text(json.dumps(cal.to_json(), indent=1) + "\n", encoding="utf-8")
    m = cal.measured["runs"]
    err.print(f"forecast: calibrated {len(cal.stages)} stages from {len(runs)} run(s), "
              f"{sum(r['creates'] for r in m)} boots -> {out}")


def _validate(model: str, runs: list[str], seeds: int, sets: list[str], keep: bool) -> None:
    cal, name = resolve_model(model)
    if keep and name.startswith("shipped:"):
        raise UserError("forecast validate --record: give the model's file path (the shipped "
                        "model is installed with stacklens)")
    sizes = []
    for run in runs:
        rs = run_settings(RunStore(run))
        sizes.append((int(rs["computes"]), int(rs["servers"]),
                      int(rs.get("concurrency") or rs["servers"]), rs.get("poll_interval_s")))
    if len(set(sizes)) > 1:
        raise UserError("forecast validate: the runs differ in computes/servers/concurrency/"
                        f"poll interval: {sorted(set(sizes), key=str)}")
    computes, servers, concurrency, poll = sizes[0]
    meas, spread = median_metrics([measured_metrics(r, concurrency) for r in runs])
    base = knobs_for(cal, computes=computes, servers=servers, concurrency=concurrency,
                     poll_interval_s=poll)
    base = parse_sets(sets, base)
    preds = []
    results = []
    with tempfile.TemporaryDirectory(prefix="stacklens-validate-") as tmp:
        for s in range(1, seeds + 1):
            res, _ = forecast_run(cal, base.replace(seed=s), None, name)
            results.append(res)
            st = RunStore(Path(tmp) / str(s))
            st.write(to_tables(res, 0, cal.attribution))  # metrics through the same tables as measured runs
            preds.append(measured_metrics(st.path, concurrency))
    pred, _ = median_metrics(preds)  # the seeds' median, as the runs'
    what = runs[0] if len(runs) == 1 else f"median of {len(runs)} runs"
    typer.echo(f"model {name}; measured {what} ({base.servers} boots, {base.computes} computes, "
               f"concurrency {base.concurrency}); predicted: median of {seeds} seeds")
    rows = compare(pred, meas, spread if len(runs) > 1 else None, seed_spread(preds))
    typer.echo(render(rows, runs=len(runs)))
    share = beyond_by_component(*results)
    typer.echo("drawn beyond the calibrated load (all seeds): " + ", ".join(
        f"{c} {v:.0%}" for c, v in sorted(share.items())))
    if keep:
        at = datetime.now(UTC).isoformat(timespec="seconds")
        rec = record(rows, {"computes": base.computes, "servers": base.servers,
                            "concurrency": base.concurrency}, len(runs), seeds, share, at,
                     sets)
        Path(model).write_text(json.dumps(replace(
            cal, validations=(*cal.validations, rec)).to_json(), indent=1) + "\n",
            encoding="utf-8")
        err.print(f"forecast validate: recorded in {model}")


def forecast(
    args: list[str] = typer.Argument(None, help="[MODEL] | calibrate RUN... | validate MODEL "
                                     "RUN... | knobs"),
    computes: int | None = typer.Option(None, "--computes", "-k", min=1, help="Compute hosts."),
    servers: int | None = typer.Option(None, "--servers", "-n", min=1,
                                       help="Servers booted [default: 20 per compute]."),
    concurrency: int | None = typer.Option(None, "--concurrency", "-c", min=1,
                                           help="Client slots [default: servers / 2]."),
    sets: list[str] = typer.Option([], "--set", help="knob=value (repeatable; see "
                                   "`stacklens forecast knobs`)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run folder to write (forecast) "
                                    "or model file (calibrate)."),
    force: bool = typer.Option(False, "--force", help="Replace the run in a non-empty --out."),
    seed: int = typer.Option(1, "--seed", help="Random seed of the simulation."),
    seeds: int = typer.Option(40, "--seeds", min=1, max=100, help=(
        "validate: seeds to run, the prediction their median (per seed a burst may pile onto "
        "one host or split: p95 and throughput need many).")),
    provenance: list[str] = typer.Option([], "--provenance", help="calibrate: key=value "
                                         "recorded in the model (lab, release, date...)."),
    load: str = typer.Option("pipeline", "--load", help="calibrate: load index of the bins: "
                             "pipeline (creates between the API and a compute), work "
                             "(pipeline and the builds in their build phase), client "
                             "(slots in use), active (slots minus boots queued at a compute) "
                             "or server (creates in flight)."),
    stage_load: list[str] = typer.Option([], "--stage-load", help="calibrate: STAGE=INDEX, "
                                         "that stage's load index instead of --load "
                                         "(repeatable; e.g. conductor_call=work)."),
    cores: float | None = typer.Option(None, "--cores", min=0.1, help="calibrate: CPU cores "
                                       "of the host that ran the services: adds its shared "
                                       "CPU to the model (runs with resource samples)."),
    demand: str = typer.Option("regression", "--demand", help="calibrate, with --cores: CPU "
                               "demands per stage by regression over the resource-sample "
                               "intervals, or utilisation (the storm's CPU shared by stage "
                               "time)."),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    keep: bool = typer.Option(False, "--record", help="validate: keep the validation in the "
                              "MODEL file (its errors and scale; forecasts from it report "
                              "them)."),
) -> None:
    """Simulate a boot storm in a model calibrated from real traces (SimPy), write it as a run
    folder that `stacklens report` reads; or calibrate / validate / list knobs."""
    args = list(args or [])
    verb = args[0] if args else None
    if verb == "calibrate":
        bad = [x for x in stage_load if "=" not in x]
        if bad:
            raise UserError(f"--stage-load {bad[0]}: expected STAGE=INDEX")
        per = dict(x.split("=", 1) for x in stage_load)  # calibrate() checks names and indices
        _calibrate(args[1:] or [], out, provenance, load, cores, demand, per)
        return
    if verb == "validate":
        if len(args) < 3:
            raise UserError("forecast validate MODEL RUN [RUN...]")
        _validate(args[1], args[2:], seeds, sets, keep)
        return
    if verb == "knobs":
        d = Knobs().as_dict()
        for k, h in KNOB_HELP.items():
            typer.echo(f"{k:<34}{d[k]!s:>8}  {h}")
        return
    if len(args) > 1:
        raise UserError(f"forecast takes one MODEL, got {len(args)} arguments")
    cal, name = resolve_model(verb)
    n_hosts = computes or int(cal.knobs.get("computes") or 4)
    n = servers or 20 * n_hosts
    c = concurrency or max(1, n // 2)
    knobs = parse_sets(sets, knobs_for(cal, computes=n_hosts, servers=n, concurrency=c,
                                       seed=seed))
    err.print(f"forecast: {n} boots on {n_hosts} computes at concurrency {c} ({SIMULATED}, "
              f"model {name})")
    _, s = forecast_run(cal, knobs, out, name, force=force)
    if as_json:
        typer.echo(json.dumps(s, indent=2))
    else:
        def f(v: object) -> str:
            return "-" if v is None else (f"{v:.1f}" if isinstance(v, float) else str(v))
        typer.echo(f"simulated: {s['boots']} boots, {s['success']} ok, {s['retried']} retried, "
                   f"{s['failed']} failed; create p50 {f(s['create_p50_s'])} s, p95 "
                   f"{f(s['create_p95_s'])} s, {f(s['throughput_per_min'])} boots/min; "
                   f"storm {f(s['duration_s'])} s simulated in {s['wall_s']:.2f} s")
        busiest = max(s["utilisation"].items(), key=lambda kv: kv[1])
        typer.echo(f"busiest: {busiest[0]} {busiest[1]:.0%}; top hosts {s['top_hosts']}")
        far = {c: v for c, v in s["beyond_calibration"].items() if v > 0}
        typer.echo("drawn beyond the calibrated load: " + (", ".join(
            f"{c} {v:.0%}" for c, v in sorted(far.items(), key=lambda kv: -kv[1]))
            if far else "none"))
    if out is not None:
        err.print(f"forecast: wrote {out} (stacklens report {out})")
    sys.stdout.flush()
