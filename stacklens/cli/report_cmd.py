"""``stacklens report RUN``: analyses -> terminal summary, report.json, report.html."""

from __future__ import annotations

from pathlib import Path

import typer

from stacklens.cli._render import print_report
from stacklens.errors import InputNotFound
from stacklens.pipeline import report_step
from stacklens.store import RunStore


def report(
    run: Path = typer.Argument(..., help="Run folder written by stacklens trace."),
    as_json: bool = typer.Option(False, "--json", help="Print report.json to stdout."),
) -> None:
    """Analyze a traced run and write report.json and a self-contained report.html."""
    if not run.is_dir():
        raise InputNotFound(f"run folder {run} does not exist")
    print_report(report_step(RunStore(run)), run, as_json)
