"""``stacklens import osprofiler FILES --out RUN`` and ``stacklens import rally FILE --out RUN``:
traces and load results made by other tools, written as run folders that ``compare``,
``export`` and ``sql`` read."""

from __future__ import annotations

from pathlib import Path

import typer

from stacklens.imports import import_osprofiler, import_rally
from stacklens.schema import TABLES, empty
from stacklens.store import RunStore

import_app = typer.Typer(help="Import OSProfiler traces or a Rally task as a run folder.",
                         no_args_is_help=True)

OUT = typer.Option(..., "--out", "-o", help="Run folder to write (created; must be empty "
                   "unless --force).")
FORCE = typer.Option(False, "--force", help="Replace the run in a non-empty --out folder.")


def _with_empty(tables: dict) -> dict:
    """``tables`` plus an empty table for every other canonical table, so that stages reading
    a run folder (``report``, ``sql``) find each table they name (an import has no log
    records: its events, templates, ... are empty, not missing)."""
    return {**{n: empty(n) for n in TABLES}, **tables}


@import_app.command("osprofiler")
def osprofiler(
    paths: list[Path] = typer.Argument(..., help="OSProfiler JSON ('osprofiler trace show "
                                       "--json' output, any extension) or folders of them."),
    out: Path = OUT,
    force: bool = FORCE,
) -> None:
    """Import OSProfiler traces into spans, flows, traces and breakdown tables."""
    res = import_osprofiler([str(p) for p in paths])
    store = RunStore(out)
    store.prepare(force)
    store.write(_with_empty(res.tables))
    store.write_section("run", {
        "source": "osprofiler", "state": "imported", "inputs": res.files,
        "base_ids": res.base_ids, "points": res.points,
        "skipped": [f"{f}: {why}" for f, why in res.skipped]})
    for f, why in res.skipped:
        typer.echo(f"import: skipped {f}: {why}", err=True)
    t = res.tables
    typer.echo(f"import: {len(res.files)} files, {len(res.base_ids)} OSProfiler traces, "
               f"{res.points} points -> {t['traces'].height} traces, {t['spans'].height} spans, "
               f"{t['flows'].height} flows in {out}", err=True)


@import_app.command("rally")
def rally(
    path: Path = typer.Argument(..., help="Rally results: 'rally task report --json' (format "
                                "1.2) or the older 'rally task results' list."),
    out: Path = OUT,
    force: bool = FORCE,
) -> None:
    """Import a Rally task as a run: the requests table and the manifest's run section."""
    requests, run = import_rally(path)
    store = RunStore(out)
    store.prepare(force)
    store.write(_with_empty({"requests": requests}))
    store.write_section("run", run)
    counts = ", ".join(f"{k} {v}" for k, v in sorted(run["stats"].items()))
    typer.echo(f"import: {requests.height} iterations of {run['scenario']} ({counts}) -> {out}",
               err=True)
