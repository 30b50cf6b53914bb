"""``stacklens trace RUN``: events -> spans, flows, traces, breakdown, phases."""

from __future__ import annotations

from pathlib import Path

import typer

from stacklens.cli._render import print_trace
from stacklens.pipeline import trace_and_mine_step
from stacklens.store import RunStore


def trace(run: Path = typer.Argument(..., help="Run folder written by stacklens ingest.")) -> None:
    """Rebuild every request across services from the run's events."""
    store = RunStore(run)
    print_trace(trace_and_mine_step(store))
