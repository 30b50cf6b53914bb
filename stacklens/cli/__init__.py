"""The ``stacklens`` command line: one subcommand per module, data on stdout, progress and
errors on stderr. Exit codes: 0 ok, 1 user error (one line on stderr), 2 usage, 3 SLA breach
or regression (:data:`stacklens.errors.EXIT_CODES`)."""

from __future__ import annotations

import gc
import sys

import typer

from stacklens import __version__
from stacklens.cli import _alloc  # noqa: F401  (before Polars is imported: see the module)
from stacklens.errors import StacklensError

__all__ = ["app", "build_app", "main"]

#: Subcommand -> (module in ``stacklens.cli``, its command function or Typer group, is a group).
#: :func:`main` imports only the module of the subcommand it runs: importing every module cost
#: ~1.8 s of each start, ~0.9 s more than the heaviest single one (``analyze``).
_COMMANDS: dict[str, tuple[str, str, bool]] = {
    "analyze": ("analyze_cmd", "analyze", False),
    "ingest": ("ingest_cmd", "ingest", False),
    "trace": ("trace_cmd", "trace", False),
    "report": ("report_cmd", "report", False),
    "run": ("run_cmd", "run", False),
    "cleanup": ("cleanup_cmd", "cleanup", False),
    "lab": ("lab_cmd", "lab_app", True),
    "collect": ("collect_cmd", "collect_cmd", False),
    "sql": ("sql_cmd", "sql", False),
    "compare": ("compare_cmd", "compare", False),
    "import": ("import_cmd", "import_app", True),
    "export": ("export_cmd", "export_app", True),
    "sweep": ("sweep_cmd", "sweep_app", True),
    "broker": ("broker_cmd", "broker_app", True),
    "forecast": ("forecast_cmd", "forecast", False),
    "capacity": ("capacity_cmd", "capacity", False),
    "model": ("model_cmd", "model_app", True),
    "config": ("config_cmd", "config_app", True),  # config advice (issue 8)
}


def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit."),
) -> None:
    if version:
        typer.echo(__version__)
        raise typer.Exit(0)


def build_app(only: str | None = None) -> typer.Typer:
    """The ``stacklens`` Typer app with every subcommand, or with only ``only`` (a name of
    :data:`_COMMANDS`; its module alone is imported). Raises KeyError for an unknown
    ``only``."""
    import importlib

    app = typer.Typer(
        name="stacklens",
        help="Where the time goes and why requests fail in an OpenStack cloud, from its logs.",
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
    )
    app.callback(invoke_without_command=True)(_root)
    for name, (module, attr, group) in _COMMANDS.items():
        if only is not None and name != only:
            continue
        target = getattr(importlib.import_module(f"stacklens.cli.{module}"), attr)
        if group:
            app.add_typer(target, name=name)
        else:
            app.command(name)(target)
    return app


def __getattr__(name: str) -> typer.Typer:
    """``stacklens.cli.app``: the app with every subcommand, built on first use."""
    if name == "app":
        globals()["app"] = built = build_app()
        return built
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """Entry point: run the app, turning stacklens errors into one stderr line and exit code."""
    # the subcommand named first: only its module is imported (anything else, such as
    # --help or a misspelt name, gets the whole app and its usage message)
    only = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] in _COMMANDS else None
    try:
        app = build_app(only)
        # the imported modules' objects (polars, pyarrow, duckdb...: ~200 k) are never garbage;
        # frozen, the cyclic collector stops walking them on each full collection (1-2 % of an
        # ingest's CPU on 2 cores, session 32)
        gc.freeze()
        app()
    except StacklensError as e:
        print(f"stacklens: error: {e}", file=sys.stderr)
        sys.exit(e.exit_code)
