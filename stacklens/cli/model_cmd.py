"""``stacklens model messages RUN... [--nodes N] [--holdout] [--json]``: the message model.

Fits messages per boot and periodic messages per minute per RPC method as ``a + b * nodes``
over runs that hold a broker capture (:mod:`stacklens.forecast.messages`), prints the fitted
terms with their residuals, predicts ``--nodes`` with a 95 % interval, and with ``--holdout``
fits all runs but the largest and compares the prediction with it. Data on stdout; exit 1 on
a user error (no capture, fewer than two node counts).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.table import Table

from stacklens.forecast.messages import MessageModel, fit_messages, holdout, run_counts

__all__ = ["model_app"]

model_app = typer.Typer(help="Models fitted to measured runs.", no_args_is_help=True)


def _num(v: float | None, nd: int = 2) -> str:
    return "-" if v is None else f"{v:,.{nd}f}"


def _fits_table(model: MessageModel, nodes: int | None, top: int) -> Table:
    pred = model.predict(nodes) if nodes else None
    t = Table(title="messages per boot (a + b*N) and periodic messages per minute")
    for c in ("quantity", "method", "a", "b per node", "residuals", *(
            [f"at N={nodes}", "95 % interval"] if pred else [])):
        t.add_column(c, justify="left" if c in ("quantity", "method") else "right")
    for qty, fits, pkey in (("per boot", model.per_boot, "per_boot"),
                            ("periodic/min", model.periodic, "periodic_per_min")):
        ranked = sorted(fits.values(), key=lambda f: -(f.a + f.b * (nodes or 0)))
        for f in ranked[:top]:
            row = [qty, f.key, _num(f.a), _num(f.b, 3) if f.linear else "0 (t test)",
                   " ".join(f"{r:+.2f}" for r in f.residuals)]
            if pred:
                v, lo, hi = pred[pkey][f.key]
                row += [_num(v), "-" if lo is None else f"{lo:,.1f}..{hi:,.1f}"]
            t.add_row(*row)
        if len(ranked) > top:
            t.add_row(qty, f"... {len(ranked) - top} more (--json)", "", "", "")
    return t


@model_app.command("messages")
def messages(
    runs: list[Path] = typer.Argument(..., help="Run folders with a broker capture."),
    nodes: int | None = typer.Option(None, "--nodes", "-n",
                                     help="Predict this many compute nodes (e.g. 600)."),
    hold_out: bool = typer.Option(False, "--holdout",
                                  help="Fit all runs but the largest, predict the largest."),
    top: int = typer.Option(15, "--top", help="Method rows shown per quantity."),
    as_json: bool = typer.Option(False, "--json", help="JSON on stdout."),
) -> None:
    """Fit the message model over RUNS (see the module docstring)."""
    counts = [run_counts(r) for r in runs]
    model = fit_messages(counts)
    out: dict[str, Any] = {"model": model.to_json()}
    if nodes:
        p = model.predict(nodes)
        out["prediction"] = {k: v for k, v in p.items()}
    if hold_out:
        out["holdout"] = holdout(counts)
    if as_json:
        typer.echo(json.dumps(out, indent=1, default=str))
        return
    con = Console()
    if not con.is_terminal:  # a pipe or file: rich's 80 columns would cut the method names
        con = Console(width=140)
    con.print("runs: " + ", ".join(f"{c.run} (N={c.nodes}, {c.boots} boots, "
                                    f"{c.window_min:.1f} min)" for c in model.runs))
    con.print(_fits_table(model, nodes, top))
    if nodes:
        p = out["prediction"]
        for label, k, per in (("messages per boot", "per_boot_total", 1),
                              ("periodic messages per node per minute",
                               "periodic_total_per_min", nodes)):
            v, lo, hi = p[k]
            iv = "" if lo is None else f" (95 % {lo / per:,.1f}..{hi / per:,.1f})"
            con.print(f"at {nodes} nodes: {label} {v / per:,.1f}{iv}")
    if hold_out:
        t = Table(title="held out: the largest run, predicted from the others")
        for c in ("metric", "predicted", "interval", "measured", "error"):
            t.add_column(c, justify="left" if c == "metric" else "right")
        for r in out["holdout"][:top + 2]:
            iv = "-" if r["low"] is None else f"{r['low']:,.1f}..{r['high']:,.1f}"
            e = r["error_pct"]
            t.add_row(r["metric"], _num(r["predicted"]), iv, _num(r["measured"]),
                      "-" if e is None else f"{e:+.1f} %")
        con.print(t)
    for m in model.missing:
        con.print(f"missing: {m}")
