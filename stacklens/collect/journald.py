"""systemd journal export, one unit at a time, over the host's transport (SSH or local).

Runs ``TZ=UTC journalctl --no-pager -q -o short-precise --since S --until U -u UNIT``: journald
selects the window itself, so only the window's entries travel (``method`` is always
``filtered``). ``TZ=UTC`` makes journalctl read ``S``/``U`` and print its timestamps in UTC,
stacklens's convention; times are given without a zone suffix so journalctl versions older than
systemd 235 accept them. The output is the syslog-style format stacklens ingest reads
(``Jan 25 09:29:50.123456 host devstack@n-api.service[1234]: DEBUG nova... {{(pid=1234) ...}}``,
see :mod:`stacklens.ingest.formats`), written to ``<out>/<host>/var/log/journald/<unit>.log``.

``short-precise`` has no year: ingest takes it from the file's mtime, so the file's mtime is set
to the window's end (or now, if that is in the future). A window that spans New Year gets the
later year for all its lines: collect such windows in two parts.

Resume: a unit collected completely for the same window, when the window had already ended at
collection time, is ``unchanged``; otherwise its output is fetched again and continued from the
local copy when it extends it (:func:`stacklens.collect.fetch.fetch` verifies the overlap).
"""

from __future__ import annotations

import asyncio
import shlex
import time
from pathlib import Path

from stacklens.collect.fetch import Producer, fetch, file_stats
from stacklens.collect.inventory import Unit
from stacklens.collect.manifest import SourceFields, SourceResult, StateJournal
from stacklens.collect.transport import Transport
from stacklens.collect.window import Window

__all__ = ["collect_unit", "journal_command", "unit_path"]


def unit_path(host: str, unit: str) -> str:
    """Where ``host``'s export of ``unit`` lands under the output folder (POSIX)."""
    return f"{host}/var/log/journald/{unit}.log"


def journal_command(unit: str, w: Window, journalctl: str = "journalctl") -> str:
    """The shell command exporting ``unit``'s entries inside ``w``."""
    return (f"TZ=UTC LC_ALL=C {shlex.quote(journalctl)} --no-pager -q -o short-precise "
            f"--since {shlex.quote(w.since_text)} --until {shlex.quote(w.until_text)} "
            f"-u {shlex.quote(unit)}")


async def collect_unit(transport: Transport, host: str, unit: Unit, w: Window, out: Path,
                       journal: StateJournal, tools: dict[str, str], *,
                       timeout_s: float = 900.0) -> SourceResult:
    """Export ``unit`` for window ``w`` into ``out``. Failures come back as a result with
    status ``error`` (``journalctl`` missing, non-zero exit, timeout); never raises for them."""
    t0 = time.perf_counter()
    rel = unit_path(host, unit.unit)
    dest = out / rel
    base = SourceFields(host=host, kind="journald", source=unit.unit, method="filtered",
                        via="journalctl", reason="journalctl --since/--until selects the window")
    if "journalctl" not in tools:
        return SourceResult(local=None, status="error", error="journalctl not found on the host",
                            **base)
    key = {"unit": unit.unit, "window": [w.since_text, w.until_text]}
    rec = journal.get(rel)
    part = dest.with_name(dest.name + ".part")
    if rec and rec.get("phase") == "complete" and rec.get("key") == key and dest.exists() \
            and dest.stat().st_size == rec.get("bytes") \
            and rec.get("collected_at", 0) >= w.until_epoch:
        return SourceResult(local=rel, status="unchanged", bytes=rec["bytes"],
                            lines=rec.get("lines", 0), sha256=rec.get("sha256"), **base)
    prefix, status = None, "fetched"
    if rec and rec.get("key") == key:
        if rec.get("phase") == "started" and part.exists():
            prefix, status = part, "resumed"
        elif rec.get("phase") == "complete" and dest.exists():
            prefix, status = dest, "appended"
    now = time.time()
    journal.record(rel, "started", key)
    producer = Producer(journal_command(unit.unit, w, tools["journalctl"]))
    res = await fetch(transport, producer, dest, prefix=prefix, mtime_s=min(w.until_epoch, now),
                      timeout_s=timeout_s)
    if not res.ok:
        return SourceResult(local=None, status="error", bytes_transferred=res.bytes_in,
                            error=res.error, wall_s=time.perf_counter() - t0, **base)
    if status != "fetched" and res.resumed_from == 0:
        status = "fetched"
    size, lines, sha = await asyncio.to_thread(file_stats, dest)
    journal.record(rel, "complete", key, bytes=size, lines=lines, sha256=sha, collected_at=now)
    return SourceResult(local=rel, status=status, bytes=size, bytes_transferred=res.bytes_in,
                        lines=lines, sha256=sha, error=res.error,
                        wall_s=time.perf_counter() - t0, **base)
