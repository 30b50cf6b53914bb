"""``stacklens analyze PATHS --out RUN``: ingest, trace and report in one go."""

from __future__ import annotations

from pathlib import Path

import typer

from stacklens.cli._render import FORCE, analyze_store, print_report
from stacklens.cli.ingest_cmd import HOST_MAP, OUT, PATHS, SERVICE_MAP, TZ, TZ_ZONE, WORKERS
from stacklens.errors import InputNotFound
from stacklens.pipeline import IngestOptions
from stacklens.store import RunStore


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
    store = RunStore(out)
    store.prepare(force)
    opts = IngestOptions(host_map, service_map, tz_offset, tz, workers)
    print_report(analyze_store(store, paths, opts, quiet=as_json), out, as_json)
