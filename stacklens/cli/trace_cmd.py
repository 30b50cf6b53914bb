"""``stacklens trace RUN``: events -> spans, flows, traces, breakdown, phases."""

from __future__ import annotations

from pathlib import Path

import typer

from stacklens.cli._render import print_trace
from stacklens.pipeline import mine_step, trace_step
from stacklens.store import RunStore


def trace(run: Path = typer.Argument(..., help="Run folder written by stacklens ingest.")) -> None:
    """Rebuild every request across services from the run's events."""
    store = RunStore(run)
    print_trace(trace_step(store))
    mine_step(store)
