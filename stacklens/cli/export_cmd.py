"""``stacklens export otlp RUN --endpoint URL``: every trace of a run as OpenTelemetry spans
over OTLP/HTTP (JSON encoding); ``--out FILE`` writes the requests as JSON lines instead."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from stacklens.errors import InputNotFound, UserError
from stacklens.export import otlp_payloads, send_otlp
from stacklens.store import RunStore

export_app = typer.Typer(help="Export a run's traces to other tools.", no_args_is_help=True)


@export_app.command("otlp")
def otlp(
    run: Path = typer.Argument(..., help="Run folder (analyzed or imported)."),
    endpoint: str | None = typer.Option(
        None, "--endpoint", envvar="OTEL_EXPORTER_OTLP_ENDPOINT",
        help="OTLP/HTTP receiver, e.g. http://127.0.0.1:4318 (/v1/traces is added)."),
    out: Path | None = typer.Option(None, "--out", help="Write the OTLP JSON requests to this "
                                    "file, one per line, instead of sending them."),
    limit: int | None = typer.Option(None, "--limit", min=1,
                                     help="Only the first N traces (by start time)."),
    timeout_s: float = typer.Option(30.0, "--timeout", help="Seconds per HTTP request."),
) -> None:
    """Send every trace as OpenTelemetry spans with OpenStack attributes and RPC span links."""
    if not run.is_dir():
        raise InputNotFound(f"run folder {run} does not exist")
    store = RunStore(run)
    if out is not None:
        n = spans = 0
        with out.open("w", encoding="utf-8") as f:
            for payload, k in otlp_payloads(store, limit):
                f.write(json.dumps(payload, separators=(",", ":")) + "\n")
                n, spans = n + 1, spans + k
        typer.echo(f"export: {spans} spans in {n} OTLP requests -> {out}", err=True)
        return
    if not endpoint:
        raise UserError("give --endpoint URL (or OTEL_EXPORTER_OTLP_ENDPOINT) or --out FILE")
    res = send_otlp(store, endpoint, limit_traces=limit, timeout_s=timeout_s)
    typer.echo(f"export: {res.spans} spans of {res.traces} traces in {res.requests} OTLP "
               f"requests -> {endpoint}" + (f"; receiver rejected {res.rejected} spans"
                                            if res.rejected else ""), err=True)
    if res.rejected:
        raise UserError(f"the receiver rejected {res.rejected} of {res.spans} spans")
