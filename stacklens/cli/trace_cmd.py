"""``stacklens trace RUN``: events -> spans, flows, traces, breakdown, phases."""

from __future__ import annotations

from pathlib import Path

import typer

from stacklens.cli._render import print_trace
from stacklens.pipeline import trace_step
from stacklens.store import RunStore


def trace(run: Path = typer.Argument(..., help="Run folder written by stacklens ingest.")) -> None:
    """Rebuild every request across services from the run's events."""
    print_trace(trace_step(RunStore(run)))
