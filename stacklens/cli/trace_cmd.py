"""``stacklens trace RUN``: events -> spans, flows, traces, breakdown, phases."""

from __future__ import annotations

from pathlib import Path

import typer

from stacklens.cli._stages import trace_stage
from stacklens.store import RunStore


def trace(run: Path = typer.Argument(..., help="Run folder written by stacklens ingest.")) -> None:
    """Rebuild every request across services from the run's events."""
    trace_stage(RunStore(run))
