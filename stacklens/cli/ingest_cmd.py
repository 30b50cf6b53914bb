"""``stacklens ingest PATHS --out RUN``: logs -> events, ingest_stats, quarantine tables."""

from __future__ import annotations

from pathlib import Path

import typer

from stacklens.cli._render import print_ingest, stage_progress
from stacklens.pipeline import IngestOptions, ingest_step
from stacklens.store import RunStore

PATHS = typer.Argument(..., help="Log files, folders (recursed) or .gz files, from any hosts.")
OUT = typer.Option(Path("stacklens-run"), "--out", "-o", envvar="STACKLENS_OUT",
                   help="Run folder to write (DuckDB, Parquet, reports).")
HOST_MAP = typer.Option([], "--host-map", help="GLOB=HOST for file paths (repeatable).")
SERVICE_MAP = typer.Option([], "--service-map", help="GLOB=SERVICE for file paths (repeatable).")
TZ = typer.Option(0, "--tz-offset", help="UTC offset of the logs' clocks in seconds (all hosts).")
TZ_ZONE = typer.Option(
    [], "--tz",
    help="Zone the logs' local times are in: ZONE for all hosts or HOST=ZONE (repeatable); "
         "an IANA name (Europe/Paris) or +HH:MM. Default: UTC assumed, said per host.",
)
WORKERS = typer.Option(None, "--workers", help="Files read in parallel (default: cores).")


def ingest(
    paths: list[str] = PATHS,
    out: Path = OUT,
    host_map: list[str] = HOST_MAP,
    service_map: list[str] = SERVICE_MAP,
    tz_offset: int = TZ,
    workers: int | None = WORKERS,
    tz: list[str] = TZ_ZONE,
) -> None:
    """Read logs into the canonical events table; count and keep every line it cannot place."""
    opts = IngestOptions(host_map, service_map, tz_offset, tz, workers)
    with stage_progress(quiet=False) as on_progress:
        section = ingest_step(RunStore(out), paths, opts, on_progress)
    print_ingest(section)
