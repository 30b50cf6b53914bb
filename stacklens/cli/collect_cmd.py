"""``stacklens collect INVENTORY --since ISO --until ISO --out DIR``: logs of a window from many
hosts into ``DIR/<host>/var/log/...`` plus ``DIR/collect-manifest.json``.

Data on stdout (a table per host, or the manifest with ``--json``); one line per host event on
stderr. Exit codes: 0 when anything was collected (per-host failures are in the manifest and on
stderr), 1 when nothing could be (or the inventory or window is unusable), 2 usage.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from stacklens.collect import CollectOptions, Window, collect, load_inventory
from stacklens.errors import UserError

err = Console(stderr=True, highlight=False)

INVENTORY = typer.Argument(..., help="Host inventory YAML (see examples/collect/inventory.yaml).")
SINCE = typer.Option(..., "--since", envvar="STACKLENS_SINCE",
                     help="Window start, ISO 8601 (2016-01-29T15:38:00; a zone converts to UTC).")
UNTIL = typer.Option(..., "--until", envvar="STACKLENS_UNTIL", help="Window end (exclusive).")
OUT = typer.Option(Path("stacklens-logs"), "--out", "-o", envvar="STACKLENS_COLLECT_OUT",
                   help="Folder to collect into (re-running resumes it).")
PARALLEL = typer.Option(8, "--parallel", "-p", envvar="STACKLENS_PARALLEL", min=1, max=256,
                        help="Hosts collected at once.")
PER_HOST = typer.Option(4, "--per-host", min=1, max=16,
                        help="Transfers at once on one host's connection.")
CONNECT_TIMEOUT = typer.Option(15.0, "--connect-timeout", min=1.0,
                               help="Seconds for TCP connect + SSH login per host.")
FILE_TIMEOUT = typer.Option(900.0, "--file-timeout", min=1.0,
                            help="Seconds one file or unit may take.")


def _table(doc: dict) -> Table:
    t = Table(title=f"collect {doc['window']['since']} .. {doc['window']['until']}")
    for c in ("host", "reached", "files", "bytes", "transferred", "lines", "errors"):
        t.add_column(c, justify="left" if c == "host" else "right")
    for h in doc["hosts"]:
        t.add_row(h["host"], "yes" if h["reached"] else "no", str(h["files"]), f"{h['bytes']:,}",
                  f"{h['bytes_transferred']:,}", f"{h['lines']:,}", str(h["error_count"]))
    return t


def collect_cmd(
    inventory: Path = INVENTORY,
    since: str = SINCE,
    until: str = UNTIL,
    out: Path = OUT,
    parallel: int = PARALLEL,
    per_host: int = PER_HOST,
    connect_timeout: float = CONNECT_TIMEOUT,
    file_timeout: float = FILE_TIMEOUT,
    as_json: bool = typer.Option(False, "--json", help="Print the manifest as JSON."),
) -> None:
    """Gather the window's logs from every inventory host over SSH, journald and local folders;
    only the window's lines travel where the source allows it."""
    inv = load_inventory(inventory)
    window = Window.parse(since, until)
    opts = CollectOptions(parallel=parallel, per_host=per_host,
                          connect_timeout_s=connect_timeout, file_timeout_s=file_timeout)
    res = collect(inv, window, out, opts, note=lambda t: err.print(f"collect: {t}"),
                  inventory_path=str(inventory))
    if as_json:
        sys.stdout.write(json.dumps(res.manifest, indent=2) + "\n")
    else:
        Console().print(_table(res.manifest))
    tot = res.manifest["totals"]
    err.print(f"collect: {tot['files']} files, {tot['bytes']:,} B, {tot['lines']:,} lines from "
              f"{tot['hosts_reached']}/{tot['hosts']} hosts in {res.wall_s:.1f} s; "
              f"manifest {res.manifest_path}")
    if res.collected == 0:
        firsts = [f"{h.host}: {e['kind']}" for h in res.hosts for e in h.errors[:1]]
        firsts += [f"{s.host}: {s.source}: {s.error}" for h in res.hosts for s in h.sources
                   if s.status == "error"][:3]
        why = f" ({'; '.join(firsts[:5])})" if firsts else (
            f" (no line of {window.since_text} .. {window.until_text} on the "
            f"{tot['hosts_reached']} hosts reached)")
        raise UserError(f"nothing could be collected{why}; see {res.manifest_path}")
