"""The ``stacklens`` command line: one subcommand per module, data on stdout, progress and
errors on stderr. Exit codes: 0 ok, 1 user error (one line on stderr), 2 usage, 3 SLA breach
or regression (:data:`stacklens.errors.EXIT_CODES`)."""

from __future__ import annotations

import sys

import typer

from stacklens import __version__
from stacklens.cli import (
    analyze_cmd,
    broker_cmd,
    capacity_cmd,
    cleanup_cmd,
    collect_cmd,
    compare_cmd,
    config_cmd,
    export_cmd,
    forecast_cmd,
    import_cmd,
    ingest_cmd,
    lab_cmd,
    model_cmd,
    report_cmd,
    run_cmd,
    sql_cmd,
    sweep_cmd,
    trace_cmd,
)
from stacklens.errors import StacklensError

__all__ = ["app", "main"]

app = typer.Typer(
    name="stacklens",
    help="Where the time goes and why requests fail in an OpenStack cloud, from its logs.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
app.command("analyze")(analyze_cmd.analyze)
app.command("ingest")(ingest_cmd.ingest)
app.command("trace")(trace_cmd.trace)
app.command("report")(report_cmd.report)
app.command("run")(run_cmd.run)
app.command("cleanup")(cleanup_cmd.cleanup)
app.add_typer(lab_cmd.lab_app, name="lab")
app.command("collect")(collect_cmd.collect_cmd)
app.command("sql")(sql_cmd.sql)
app.command("compare")(compare_cmd.compare)
app.add_typer(import_cmd.import_app, name="import")
app.add_typer(export_cmd.export_app, name="export")
app.add_typer(sweep_cmd.sweep_app, name="sweep")
app.add_typer(broker_cmd.broker_app, name="broker")
app.command("forecast")(forecast_cmd.forecast)
app.command("capacity")(capacity_cmd.capacity)
app.add_typer(model_cmd.model_app, name="model")
app.add_typer(config_cmd.config_app, name="config")  # config advice (issue 8)


@app.callback(invoke_without_command=True)
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit(0)


def main() -> None:
    """Entry point: run the app, turning stacklens errors into one stderr line and exit code."""
    try:
        app()
    except StacklensError as e:
        print(f"stacklens: error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
