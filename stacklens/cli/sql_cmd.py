"""``stacklens sql RUN "SELECT ..."``: read-only SQL over a run's canonical tables.

The run's DuckDB database holds one view per table (``events``, ``spans``, ``traces``, ...; see
:mod:`stacklens.schema`), so any query DuckDB accepts works without installing a ``duckdb``
binary. Prints a table (or ``--json``: a list of row objects) on stdout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import duckdb
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from stacklens.errors import InputNotFound, UserError
from stacklens.store import RunStore

#: Rows printed in table form; --json prints them all.
MAX_TABLE_ROWS = 200


def sql(
    run: Path = typer.Argument(..., help="Run folder (stacklens analyze/ingest --out)."),
    query: str = typer.Argument(..., help='SQL, e.g. "SELECT outcome, count(*) FROM traces '
                                          'GROUP BY 1".'),
    as_json: bool = typer.Option(False, "--json", help="Rows as a JSON list on stdout."),
) -> None:
    """Run one read-only SQL query over the run's tables (events, spans, flows, traces, ...)."""
    if not run.is_dir():
        raise InputNotFound(f"run folder {run} does not exist")
    try:
        with RunStore(run).connect(read_only=True) as con:
            cur = con.execute(query)
            cols = [d[0] for d in cur.description or []]
            rows = cur.fetchall()
    except duckdb.Error as e:
        raise UserError(f"query failed: {str(e).splitlines()[0]}") from None
    if as_json:
        sys.stdout.write(json.dumps([dict(zip(cols, r, strict=True)) for r in rows], default=str) + "\n")
        return
    t = Table(*cols, header_style="bold")
    for r in rows[:MAX_TABLE_ROWS]:
        t.add_row(*[Text("" if v is None else str(v)) for v in r])
    con_out = Console()
    con_out.print(t)
    if len(rows) > MAX_TABLE_ROWS:
        con_out.print(f"{len(rows) - MAX_TABLE_ROWS} more rows (use --json for all)")
