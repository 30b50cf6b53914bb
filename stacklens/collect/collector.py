"""The collection run: every host of an inventory, in parallel, into one output folder.

Per host (at most ``parallel`` hosts at once): connect (SSH, or this machine for ``local``
hosts), run one listing script (:mod:`stacklens.collect.listing`), then bring each file
(:mod:`stacklens.collect.files`) and each journald unit (:mod:`stacklens.collect.journald`),
``per_host`` transfers at once on one connection. A host's failure (unreachable, host key
rejected, authentication, a glob that matches nothing, a file that cannot be read) is recorded
in its :class:`~stacklens.collect.manifest.HostResult` and never stops the other hosts.

The transport is injected (``connect``), so tests run the same code against a real sshd, this
machine, or a fake. Every wait is bounded: connect/login ``connect_timeout_s``, the listing
``listing_timeout_s``, each transfer ``file_timeout_s``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from stacklens.collect.files import collect_file
from stacklens.collect.inventory import HostPlan, Inventory, Unit, analysis_maps
from stacklens.collect.journald import collect_unit
from stacklens.collect.listing import RemoteFile, listing_script, parse_listing
from stacklens.collect.manifest import (
    HostResult,
    SourceResult,
    StateJournal,
    manifest_dict,
    write_manifest,
)
from stacklens.collect.transport import LocalTransport, Transport
from stacklens.collect.window import Window

__all__ = ["CollectOptions", "CollectResult", "Connector", "collect", "collect_async"]

Connector = Callable[[HostPlan, float], Awaitable[tuple[Transport | None, tuple[str, str] | None]]]


@dataclass(frozen=True)
class CollectOptions:
    """Bounds of a run: hosts at once, transfers at once per host, timeouts (seconds), and how
    long before the window a ``.gz`` may have been rotated and still hold window lines."""

    parallel: int = 8
    per_host: int = 4
    connect_timeout_s: float = 15.0
    listing_timeout_s: float = 120.0
    file_timeout_s: float = 900.0
    rotated_slack_s: int = 86400


@dataclass
class CollectResult:
    """The hosts' results, the manifest (as written) and its path."""

    hosts: list[HostResult]
    manifest: dict[str, Any]
    manifest_path: Path
    wall_s: float = 0.0
    problems: list[str] = field(default_factory=list)

    @property
    def collected(self) -> int:
        """Sources whose data is in the output folder, over all hosts."""
        return sum(h.collected for h in self.hosts)


async def _default_connect(
    plan: HostPlan, timeout_s: float
) -> tuple[Transport | None, tuple[str, str] | None]:
    from stacklens.collect.ssh import connect

    return await connect(plan, timeout_s)


async def _host(plan: HostPlan, w: Window, out: Path, journal: StateJournal,
                opts: CollectOptions, connect: Connector,
                note: Callable[[str], None]) -> HostResult:
    t0 = time.perf_counter()
    errors: list[dict[str, str]] = []
    sources: list[SourceResult] = []
    tools: dict[str, str] = {}
    transport: Transport
    if plan.transport == "local":
        transport = LocalTransport(plan.name)
    else:
        got, err = await connect(plan, opts.connect_timeout_s)
        if got is None:
            kind, detail = err or ("ssh_error", "no connection")
            note(f"{plan.name}: {kind}: {detail}")
            return HostResult(plan.name, plan.transport, plan.address, False,
                              errors=[{"kind": kind, "detail": detail,
                                       "source": plan.address or ""}],
                              wall_s=time.perf_counter() - t0)
        transport = got
    try:
        await _host_sources(plan, transport, w, out, journal, opts, sources, errors, tools, note)
    finally:
        await transport.close()
    res = HostResult(plan.name, plan.transport, plan.address, True, sources, errors, tools,
                     time.perf_counter() - t0)
    t = res.totals()
    note(f"{plan.name}: {t['files']} files, {t['bytes']:,} B ({t['bytes_transferred']:,} B "
         f"transferred), {t['error_count']} errors")
    return res


async def _host_sources(plan: HostPlan, transport: Transport, w: Window, out: Path,
                        journal: StateJournal, opts: CollectOptions,
                        sources: list[SourceResult], errors: list[dict[str, str]],
                        tools: dict[str, str], note: Callable[[str], None]) -> None:
    """List the host's files, then bring them and its units; appends to the three lists."""
    globs = [g.path for g in plan.logs]
    try:
        lr = await transport.run(listing_script(globs), opts.listing_timeout_s)
    except TimeoutError:
        errors.append({"kind": "listing_failed", "source": "",
                           "detail": f"listing took more than {opts.listing_timeout_s:g} s"})
        return
    except Exception as e:  # the connection broke: the host's failure, not the run's
        errors.append({"kind": "listing_failed", "source": "", "detail": repr(e)})
        return
    if lr.exit_status != 0:
        errors.append({"kind": "listing_failed", "source": "",
                           "detail": f"exit status {lr.exit_status}: {lr.stderr.strip()[:300]}"})
        return
    listing = parse_listing(lr.stdout)
    tools.update(listing.tools)
    for i, g in enumerate(globs):
        if listing.matched.get(i, 0) == 0:
            errors.append({"kind": "no_match", "source": g, "detail": "no file matches"})
    for _i, path, why in listing.errors:
        errors.append({"kind": "unreadable", "source": path, "detail": why})
    sem = asyncio.Semaphore(max(1, opts.per_host))
    local = plan.transport == "local"

    async def one_file(f: RemoteFile) -> SourceResult:
        async with sem:
            try:
                return await collect_file(transport, plan.name, f, w, out, journal,
                                          listing.tools, local=local,
                                          timeout_s=opts.file_timeout_s,
                                          rotated_slack_s=opts.rotated_slack_s)
            except OSError:
                raise  # local disk trouble ends the run
            except Exception as e:  # a broken channel: this file's failure
                return SourceResult(plan.name, "file", f.path, None, "none", "", "error",
                                    error=repr(e))

    async def one_unit(u: Unit) -> SourceResult:
        async with sem:
            try:
                return await collect_unit(transport, plan.name, u, w, out, journal,
                                          listing.tools, timeout_s=opts.file_timeout_s)
            except OSError:
                raise
            except Exception as e:
                return SourceResult(plan.name, "journald", u.unit, None, "filtered",
                                    "journalctl", "error", error=repr(e))

    results = await asyncio.gather(*(one_file(f) for f in listing.files),
                                   *(one_unit(u) for u in plan.units))
    sources.extend(results)
    for s in results:
        if s.status == "error":
            note(f"{plan.name}: {s.source}: {s.error}")


async def collect_async(inv: Inventory, w: Window, out: Path,
                        opts: CollectOptions | None = None, *,
                        connect: Connector | None = None,
                        note: Callable[[str], None] | None = None,
                        inventory_path: str | None = None) -> CollectResult:
    """Collect every host of ``inv`` for window ``w`` into ``out``; write the manifest.

    ``connect(plan, timeout_s)`` opens a host's transport (default: asyncssh,
    :func:`stacklens.collect.ssh.connect`); ``note(text)`` receives one line per host event
    (progress for stderr). Raises only for local problems (the output folder cannot be written).
    """
    opts = opts or CollectOptions()
    connect = connect or _default_connect
    note = note or (lambda _t: None)
    t0 = time.perf_counter()
    started = datetime.now(UTC)
    out.mkdir(parents=True, exist_ok=True)
    journal = StateJournal(out)
    sem = asyncio.Semaphore(max(1, opts.parallel))

    async def bounded(p: HostPlan) -> HostResult:
        async with sem:
            return await _host(p, w, out, journal, opts, connect, note)

    hosts = list(await asyncio.gather(*(bounded(p) for p in inv.plans())))
    journal.compact()
    maps = analysis_maps(inv, out)
    wall = time.perf_counter() - t0
    doc = manifest_dict(hosts, w.as_dict(), {
        "inventory": inventory_path,
        "started": started.isoformat(timespec="seconds"),
        "wall_s": round(wall, 3),
        "options": {"parallel": opts.parallel, "per_host": opts.per_host},
        "analyze_maps": {"host_map": maps.host_map, "service_map": maps.service_map},
    })
    path = write_manifest(out, doc)
    return CollectResult(hosts, doc, path, wall)


def collect(inv: Inventory, w: Window, out: Path, opts: CollectOptions | None = None, *,
            connect: Connector | None = None, note: Callable[[str], None] | None = None,
            inventory_path: str | None = None) -> CollectResult:
    """:func:`collect_async` in a fresh event loop (for the CLI and ``run``)."""
    return asyncio.run(collect_async(inv, w, out, opts, connect=connect, note=note,
                                     inventory_path=inventory_path))
