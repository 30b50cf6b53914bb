"""Stage runners shared by the subcommands: each reads the previous stage's tables from the
run folder and writes its own, so ``analyze`` is exactly ``ingest`` + ``trace`` + ``report``."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import polars as pl
import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from stacklens.analyze.run import analyze
from stacklens.errors import UserError
from stacklens.ingest.names import NameMap
from stacklens.ingest.pipeline import ingest as run_ingest
from stacklens.report.html import render_html
from stacklens.report.terminal import render_terminal
from stacklens.store import RunStore
from stacklens.trace import build_traces

err = Console(stderr=True)

#: What stacklens writes in a run folder (removed by ``--force``; nothing else is touched).
RUN_FILES = ("tables", "stacklens.duckdb", "stacklens.duckdb.wal", "manifest.json",
             "report.json", "report.html", "requests.jsonl", "scenario.yaml", "logs")

FORCE = typer.Option(False, "--force", help="Reuse a non-empty --out folder: remove what "
                     "stacklens wrote there before (tables, database, reports, records).")


class Ticker:
    """Progress for logs and pipes: when stderr is not a terminal (where rich's bar is off),
    one line at most every ``every_s`` seconds, e.g. ``ingest: 12/40 files, 1,204,332 lines,
    14 s``. Silent on a terminal (the bar shows) and when ``quiet``."""

    def __init__(self, stage: str, quiet: bool, every_s: float = 5.0):
        self.stage, self.every_s = stage, every_s
        self.on = not quiet and not err.is_terminal
        self.t0 = self.last = time.monotonic()

    def __call__(self, text: str) -> None:
        """Print ``<stage>: <text>, <elapsed> s`` if ``every_s`` passed since the last line."""
        now = time.monotonic()
        if self.on and now - self.last >= self.every_s:
            self.last = now
            print(f"{self.stage}: {text}, {now - self.t0:.0f} s", file=sys.stderr, flush=True)


def prepare_out(out: Path, force: bool) -> None:
    """Refuse to write a run into a non-empty folder unless ``force``; with ``force``, remove
    the files stacklens writes there (:data:`RUN_FILES`) so no table of an earlier run stays.
    Raises :class:`~stacklens.errors.UserError` (exit 1)."""
    if not out.exists():
        return
    if not out.is_dir():
        raise UserError(f"--out {out} exists and is not a folder")
    if not any(out.iterdir()):
        return
    if not force:
        raise UserError(f"--out {out} is not empty: choose a new folder or pass --force to "
                        "replace the run in it")
    for name in RUN_FILES:
        p = out / name
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()


def ingest_stage(
    paths: list[str],
    out: Path,
    host_map: list[str],
    service_map: list[str],
    tz_offset_s: int,
    workers: int | None,
    quiet: bool = False,
    window_ns: tuple[int, int] | None = None,
    tz: list[str] | None = None,
) -> RunStore:
    """Ingest ``paths`` into the run folder ``out``; progress bar on stderr. With ``window_ns``
    only records inside ``[start, end]`` are kept (the rest are counted in ``ingest_stats``)."""
    names = NameMap(host_map, service_map)
    with Progress(
        TextColumn("ingest"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
        TextColumn("{task.fields[lines]:,} lines"), TimeElapsedColumn(),
        console=err, disable=quiet or not err.is_terminal, transient=True,
    ) as prog:
        task = prog.add_task("ingest", total=None, lines=0)
        seen = {"lines": 0}
        tick = Ticker("ingest", quiet)

        def on_file(done: int, total: int, lines: int) -> None:
            seen["lines"] += lines
            prog.update(task, completed=done, total=total, lines=seen["lines"])
            tick(f"{done}/{total} files, {seen['lines']:,} lines")

        res = run_ingest(paths, names=names, tz_offset_s=tz_offset_s, workers=workers,
                         on_file=on_file, tz=tz)
    events, stats = res.events, res.ingest_stats
    if window_ns is not None:
        inside = pl.col("ts_ns").is_between(*window_ns)
        n_out = events.height - events.filter(inside).height
        events = events.filter(inside)
        stats = pl.concat([stats, pl.DataFrame(
            [("*", "outside_run_window", "info", n_out, "records outside the run's time window")],
            schema=stats.schema, orient="row")])
    store = RunStore(out)
    store.write({"events": events, "ingest_stats": stats, "quarantine": res.quarantine})
    store.update_manifest(
        inputs=res.inputs,
        stages=["ingest"],
        ingest={
            "files_read": res.files_read,
            "files_skipped": res.files_skipped,
            "lines": res.lines,
            "bytes": res.bytes,
            "records": events.height,
            "quarantined": res.quarantine.height,
            "wall_s": round(res.wall_s, 3),
            "lines_per_s": round(res.lines / res.wall_s) if res.wall_s else None,
            "timezone_assumption": res.timezone_summary,
            "tz_offset_s": tz_offset_s,
            "tz": list(tz or []),
        },
    )
    if not quiet:
        err.print(
            f"ingest: {res.files_read} files ({res.files_skipped} skipped), {res.lines:,} lines,"
            f" {res.events.height:,} records, {res.quarantine.height} lines quarantined,"
            f" {res.wall_s:.1f} s"
        )
    return store


def trace_stage(store: RunStore, quiet: bool = False) -> dict[str, Any]:
    """Build the trace tables from the store's events."""
    tables = build_traces(store.read("events"))
    store.write(tables)
    m = store.manifest()
    store.update_manifest(stages=list(dict.fromkeys([*m.get("stages", []), "trace"])))
    if not quiet:
        err.print(f"trace: {tables['traces'].height:,} traces, {tables['spans'].height:,} spans,"
                  f" {tables['flows'].height:,} flows")
    return tables


def report_stage(
    store: RunStore, as_json: bool, html: bool = True, quiet_terminal: bool = False
) -> dict[str, Any]:
    """Analyze, write ``report.json`` (and ``report.html``), print the summary or the JSON."""
    report = analyze(store)
    text = json.dumps(report, indent=2, default=str)
    (store.path / "report.json").write_text(text)
    if html:
        (store.path / "report.html").write_text(render_html(report), encoding="utf-8")
    if as_json:
        sys.stdout.write(text + "\n")
    elif not quiet_terminal:
        con = Console()
        for r in render_terminal(report):
            con.print(r)
        err.print(f"report: {store.path / 'report.html'}")
    return report
