"""``stacklens cleanup RUN``: delete what a run left behind (servers, for ``boot_servers``), found
by its name prefix; the run's workload type (from its manifest) says how.

The run's manifest gives the prefix (``sl-<runid>-``) and where the cloud was (endpoint or
clouds.yaml entry; the token is never stored: give ``--token`` again for noauth2 clouds).
Exit code 1 when servers remain after ``--timeout``.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer
from rich.console import Console

from stacklens.cli._connection import choose_connection
from stacklens.cli.run_cmd import CLOUD, ENDPOINT, TOKEN
from stacklens.drive.client import ComputeClient
from stacklens.drive.session import finalize_records
from stacklens.drive.workload import get_workload
from stacklens.errors import UserError
from stacklens.store import RunStore

err = Console(stderr=True)


def cleanup(
    run: Path = typer.Argument(..., help="Run folder written by stacklens run."),
    cloud: str | None = CLOUD,
    endpoint: str | None = ENDPOINT,
    token: str | None = TOKEN,
    prefix: str | None = typer.Option(None, "--prefix", help="Name prefix to delete "
                                      "(default: the run's sl-<runid>-)."),
    timeout: float = typer.Option(300.0, "--timeout", help="Seconds to wait for deletes."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Delete every server whose name carries the run's prefix and wait until they are gone."""
    if not run.exists():
        raise UserError(f"{run}: no such run folder")
    info = RunStore(run).read_manifest().run or {}
    prefix = prefix or info.get("prefix")
    if not prefix:
        raise UserError(f"{run} has no run manifest with a prefix: give --prefix sl-<runid>-")
    conn_info = info.get("connection") or {}
    ep = conn_info.get("endpoint") if conn_info.get("source") == "flags" else None
    conn = choose_connection(cloud, endpoint, token, info.get("cloud"), ep).connection
    scn = info.get("scenario") or {}
    poll = (scn.get("client") or {}).get("poll_interval_s", 2.0)
    kind = get_workload(next(iter(scn.get("workload") or {}), "boot_servers"))

    async def go():
        async with ComputeClient(conn) as client:
            return await kind.cleanup(client, prefix, timeout, poll)

    res = asyncio.run(go())
    if as_json:
        print(json.dumps({"prefix": prefix, "found": res.found, "deleted": res.deleted,
                          "remaining": res.remaining, "errors": res.errors}, indent=2))
    else:
        print(f"{prefix}: {res.found} found, {res.deleted} deleted, {len(res.remaining)} remaining")
    for e in res.errors:
        err.print(f"cleanup: {e}")
    if info.get("state") == "running" and (run / "requests.jsonl").exists():  # a killed run
        n = finalize_records(run)
        bad = (RunStore(run).read_manifest().run or {}).get("jsonl_bad_lines", 0)
        err.print(f"cleanup: the run was killed; {n} servers' records kept from requests.jsonl"
                  + (f", {bad} unreadable lines (cut by the kill)" if bad else ""))
    if res.remaining:
        raise UserError(f"{len(res.remaining)} servers with prefix {prefix} remain after "
                        f"{timeout:g} s: {', '.join(res.remaining[:5])}")
