"""What the subcommands share: progress on stderr and the stage summaries. The stages
themselves run in :mod:`stacklens.pipeline`; this module only shows what they report."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from stacklens.manifest import IngestSection, TraceSection
from stacklens.pipeline import (
    IngestOptions,
    OnProgress,
    StageProgress,
    ingest_step,
    report_step,
    trace_and_mine_step,
)
from stacklens.store import RunStore

# config advice and the report renderers are imported where used: an ingest or trace alone
# does not need them (~0.1 s of each start, session 33)

__all__ = [
    "FORCE",
    "Ticker",
    "analyze_store",
    "err",
    "print_ingest",
    "print_report",
    "print_trace",
    "stage_progress",
]

err = Console(stderr=True)

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


@contextlib.contextmanager
def stage_progress(quiet: bool) -> Iterator[OnProgress]:
    """A pipeline progress callback: rich's bar on a terminal, :class:`Ticker` lines otherwise,
    nothing when ``quiet``."""
    with Progress(
        TextColumn("ingest"), BarColumn(), MofNCompleteColumn(), TextColumn("files"),
        TextColumn("{task.fields[lines]:,} lines"), TimeElapsedColumn(),
        console=err, disable=quiet or not err.is_terminal, transient=True,
    ) as prog:
        task = prog.add_task("ingest", total=None, lines=0)
        tick = Ticker("ingest", quiet)

        def on_progress(p: StageProgress) -> None:
            if p.stage == "ingest":
                prog.update(task, completed=p.done, total=p.total, lines=p.lines)
                tick(f"{p.done}/{p.total} files, {p.lines:,} lines")

        yield on_progress


def print_ingest(s: IngestSection) -> None:
    """One stderr line: files, lines, records, quarantined, wall time, whether the native
    tokenizer ran (``native: true``; ``false`` means the slower Polars path)."""
    err.print(f"ingest: {s.files_read} files ({s.files_skipped} skipped), {s.lines:,} lines,"
              f" {s.records:,} records, {s.quarantined} lines quarantined,"
              f" {s.wall_s or 0:.1f} s, native: {str(s.native).lower()}")


def print_trace(s: TraceSection) -> None:
    """One stderr line: traces, spans, flows."""
    err.print(f"trace: {s.traces:,} traces, {s.spans:,} spans, {s.flows:,} flows")


def analyze_store(store: RunStore, paths: Sequence[str], opts: IngestOptions,
                  quiet: bool) -> dict[str, Any]:
    """Run ingest, trace, template mining, config advice (when the run kept the cloud's config
    files in ``config/``) and report into ``store`` with progress and the stage summaries on
    stderr (none when ``quiet``); returns the report dict."""
    with stage_progress(quiet=quiet) as on_progress:
        ing = ingest_step(store, paths, opts, on_progress)
    if not quiet:
        print_ingest(ing)
    tr = trace_and_mine_step(store)
    if (store.path / "config").is_dir():  # the cloud's config files a run kept: config advice
        from stacklens.advise import write_config_findings

        write_config_findings(store.path)
    if not quiet:
        print_trace(tr)
    return report_step(store)


def print_report(report: dict[str, Any], run: Path, as_json: bool) -> None:
    """The report as JSON on stdout, or the terminal summary (and where the HTML is)."""
    from stacklens.report.json_out import render_json
    from stacklens.report.terminal import render_terminal

    if as_json:
        sys.stdout.write(render_json(report) + "\n")
        return
    con = Console()
    for r in render_terminal(report):
        con.print(r)
    err.print(f"report: {run / 'report.html'}")
