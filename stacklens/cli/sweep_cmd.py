"""``stacklens sweep``: ``run PLAN --out DIR`` runs a fio / iperf3 matrix on many targets;
``analyze DIR... --out DIR`` reads fio / iperf3 JSON written by other tools. Both write the
sweep tables and ``report.json`` into ``--out`` and print tables (or, with ``--json``, the
report) on stdout; progress goes to stderr."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from dataclasses import asdict
from pathlib import Path

import typer
from rich.console import Console

from stacklens.errors import InputNotFound, UserError
from stacklens.store import RunStore
from stacklens.sweep import RunOptions, finish, load_plan, run_sweep, scan
from stacklens.sweep.foreign import DEFAULT_REPEAT_PATTERN
from stacklens.sweep.output import plan_limits
from stacklens.sweep.report import render
from stacklens.sweep.runner import JOURNAL
from stacklens.sweep.tables import Limits

__all__ = ["sweep_app"]

sweep_app = typer.Typer(
    help="Data-plane sweeps: fio and iperf3 matrices over many targets, knees found.",
    no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)

OUT = typer.Option(..., "--out", "-o", help="Folder for raw output, tables and report.json.")
JSON = typer.Option(False, "--json", help="Print report.json to stdout instead of tables.")
HTML = typer.Option(False, "--html", help="Also write a self-contained report.html into --out.")


def _show(rep: dict, as_json: bool, out: Path, with_html: bool) -> None:
    if with_html:
        from stacklens.sweep.html import html_page

        (out / "report.html").write_text(html_page(rep), encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(rep, indent=2, default=str) + "\n")
    else:
        Console(width=160).print(render(rep))


@sweep_app.command("run")
def run(
    plan_file: Path = typer.Argument(..., help="Sweep plan YAML (see examples/sweep/)."),
    out: Path = OUT,
    as_json: bool = JSON,
    with_html: bool = HTML,
    retry_failed: bool = typer.Option(False, "--retry-failed",
                                      help="Run failed and partial points of an earlier run "
                                           "again (finished ok points are always skipped)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress on stderr."),
) -> None:
    """Run every point of PLAN (targets of a point start together); a re-run with the same
    --out skips the points already done."""
    plan = load_plan(plan_file)
    if out.exists() and any(out.iterdir()) and not (out / JOURNAL).exists():
        raise UserError(f"--out {out} is not empty and holds no sweep: choose a new folder")

    def say(line: str) -> None:
        if not quiet:
            print(f"sweep: {line}", file=sys.stderr, flush=True)

    res = asyncio.run(run_sweep(plan, out, RunOptions(retry_failed, say)))
    say(f"{res.ran} point repeats run, {res.skipped} done before, {res.failed} not ok")
    rep = finish(out, res.runs, plan_limits(plan), meta={"command": "run", "plan": plan.name,
                                              "plan_file": str(plan_file)}, base=out,
                 probes=res.probes, app=res.app)
    _show(rep, as_json, out, with_html)


@sweep_app.command("analyze")
def analyze(
    dirs: list[Path] = typer.Argument(..., help="Folders (or files) of fio / iperf3 JSON."),
    out: Path = OUT,
    as_json: bool = JSON,
    with_html: bool = HTML,
    repeat_pattern: str = typer.Option(
        DEFAULT_REPEAT_PATTERN, "--repeat-pattern",
        help="Folder names matching this regex number repeats instead of naming a series."),
    force: bool = typer.Option(False, "--force", help="Replace the results in a non-empty --out."),
    max_bw_mib_s: float | None = typer.Option(
        None, "--max-bw-mib-s", min=0.0,
        help="fio: flag repeats whose summed bandwidth is above this (MiB/s, the device's "
             "limit): above_limit_bw."),
    max_iops: float | None = typer.Option(
        None, "--max-iops", min=0.0, help="fio: flag repeats above this summed IOPS."),
    max_pair_mbit_s: float | None = typer.Option(
        None, "--max-pair-mbit-s", min=0.0,
        help="iperf3: flag repeats with one pair above this (Mbit/s = 10^6 bit/s)."),
    max_link_mbit_s: float | None = typer.Option(
        None, "--max-link-mbit-s", min=0.0,
        help="iperf3: flag repeats whose sum over pairs is above this (the link's Mbit/s): "
             "above_limit_total."),
) -> None:
    """Sum, merge and find knees in fio / iperf3 JSON written by other tools; files that are
    not such JSON are counted and listed as skipped, never fatal. The --max-* sanity limits
    flag repeats above a device or link limit (flagged, never dropped)."""
    missing = [d for d in dirs if not d.exists()]
    if missing:
        raise InputNotFound(f"no such file or folder: {missing[0]}")
    try:
        re.compile(repeat_pattern)
    except re.error as e:
        raise UserError(f"--repeat-pattern: not a regular expression: {e}") from None
    RunStore(out).prepare(force)
    found = scan(dirs, repeat_pattern)
    if not found.runs:
        print(f"sweep: no fio or iperf3 JSON among {found.n_files} files "
              f"({len(found.skipped)} skipped)", file=sys.stderr)
    limits = Limits(bw_mib_s=max_bw_mib_s or None, iops=max_iops or None,
                    pair_mbit_s=max_pair_mbit_s or None, total_mbit_s=max_link_mbit_s or None)
    rep = finish(out, found.runs, limits, skipped=found.skipped,
                 meta={"command": "analyze", "inputs": [str(d) for d in dirs],
                       "files": found.n_files,
                       "limits": {k: v for k, v in asdict(limits).items() if v}})
    _show(rep, as_json, out, with_html)
