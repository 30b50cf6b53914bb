"""Delete a run's leftovers by name prefix (``stacklens cleanup RUN``, and the driver's final
sweep): one list, one DELETE per server, then one list per poll interval until all are gone."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass

from stacklens.drive.client import ComputeClient

__all__ = ["CleanupResult", "cleanup_prefix"]


@dataclass(frozen=True)
class CleanupResult:
    """What :func:`cleanup_prefix` found and left."""

    found: int
    deleted: int
    remaining: list[str]
    errors: list[str]


async def cleanup_prefix(client: ComputeClient, prefix: str, timeout_s: float = 300.0,
                         poll_interval_s: float = 2.0, keep: set[str | None] | None = None
                         ) -> CleanupResult:
    """Delete every server whose name starts with ``prefix`` (except ids in ``keep``) and wait
    until they are gone or ``timeout_s`` passes. One list per poll interval."""
    keep = keep or set()
    loop = asyncio.get_running_loop()
    listed = await client.list_servers(f"^{prefix}")
    if listed.error:
        return CleanupResult(0, 0, [], [f"list: {listed.error}"])
    todo = {s["id"] for s in listed.servers
            if s.get("id") not in keep and s.get("status") not in ("DELETED", "SOFT_DELETED")}
    if not todo:
        return CleanupResult(0, 0, [], [])
    since = (listed.date_s or 0) - 2 if listed.date_s else None
    sem = asyncio.Semaphore(50)
    errors: list[str] = []

    async def one(sid: str) -> None:
        async with sem:
            r = await client.delete_server(sid, f"req-{uuid.uuid4()}")
        if r.status == 404:
            gone.add(sid)
        elif not r.ok:
            errors.append(f"{sid}: {r.error}")

    gone: set[str] = set()
    await asyncio.gather(*(one(s) for s in sorted(todo)))
    deadline = loop.time() + timeout_s
    while todo - gone and loop.time() < deadline:
        await asyncio.sleep(poll_interval_s)
        res = await client.list_servers(f"^{prefix}", since)
        if res.error:
            continue
        since = (res.date_s - 2) if res.date_s else since
        for s in res.servers:
            if s.get("status") in ("DELETED", "SOFT_DELETED") and s.get("id") in todo:
                gone.add(s["id"])
        if since is None:  # no changes-since: absent means gone
            present = {s["id"] for s in res.servers}
            gone |= todo - present
    remaining = sorted(todo - gone)
    return CleanupResult(len(todo), len(gone), remaining, errors)
