"""``stacklens analyze PATHS --out RUN``: ingest, trace and report in one go."""

from __future__ import annotations

from pathlib import Path

import typer

from stacklens.cli._stages import FORCE, ingest_stage, prepare_out, report_stage, trace_stage
from stacklens.cli.ingest_cmd import HOST_MAP, OUT, PATHS, SERVICE_MAP, TZ, TZ_ZONE, WORKERS
from stacklens.errors import InputNotFound


def analyze(
    paths: list[str] = PATHS,
    out: Path = OUT,
    host_map: list[str] = HOST_MAP,
    service_map: list[str] = SERVICE_MAP,
    tz_offset: int = TZ,
    workers: int | None = WORKERS,
    tz: list[str] = TZ_ZONE,
    as_json: bool = typer.Option(False, "--json", help="Print report.json to stdout."),
    force: bool = FORCE,
) -> None:
    """Ingest logs, rebuild every request and report where the time went and why requests
    failed."""
    missing = [p for p in paths if not Path(p).exists()]
    if missing:  # before --force empties the output folder
        raise InputNotFound(f"no such file or folder: {missing[0]}")
    prepare_out(out, force)
    quiet = as_json
    store = ingest_stage(paths, out, host_map, service_map, tz_offset, workers, quiet=quiet,
                         tz=tz)
    trace_stage(store, quiet=quiet)
    report_stage(store, as_json)
