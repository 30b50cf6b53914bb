"""One log file of one host: decide how it travels, then bring it (or skip it).

Decision (:func:`plan_file`), first match wins:

1. ``outside_window``: the file's first header is at or after ``until``, its last before
   ``since``, or (``.gz``, whose last header is not probed) it was last written more than
   ``rotated_slack_s`` before ``since``. Nothing travels.
2. ``whole`` via ``cat``: no oslo.log header in the file's first 64 KiB (syslog files, other
   formats: the filter cannot place their lines), or the host has neither awk nor python3 (nor
   gzip, for a ``.gz``), or every header of a plain file is inside the window. On a ``local``
   host a ``.gz`` (rotated, immutable) file is hard-linked instead when the filesystem allows.
3. ``filtered`` via ``awk`` (else ``python3``): only the window's lines travel. A ``.gz`` file is
   decompressed, filtered and recompressed on the host (``gzip -n``, deterministic), and stays
   ``.gz`` locally.

Local layout: ``<out>/<host>/var/log/<path below /var/log>``; a path elsewhere keeps its whole
path below ``var/log`` (``/opt/stack/logs/n-api.log`` -> ``<host>/var/log/opt/stack/logs/...``),
so ingest always finds the host in the ``<host>/var/log/`` layout.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from stacklens.collect.fetch import Producer, fetch, file_stats
from stacklens.collect.listing import RemoteFile
from stacklens.collect.manifest import SourceFields, SourceResult, StateJournal
from stacklens.collect.transport import Transport
from stacklens.collect.window import Window, awk_command, python_command

__all__ = ["FilePlan", "collect_file", "local_path", "plan_file"]

_EMPTY = "no line of the file is inside the window (found by filtering on the host)"


@dataclass(frozen=True)
class FilePlan:
    """How one file travels: ``method`` ``filtered``/``whole``/``none``, ``via`` the program,
    ``reason`` in words, ``producer`` the script builder (None when nothing travels)."""

    method: str
    via: str
    reason: str
    producer: Producer | None


def local_path(host: str, remote: str) -> str:
    """The path under the output folder where ``host``'s file ``remote`` lands (POSIX)."""
    p = PurePosixPath(remote)
    parts = p.parts[1:] if p.is_absolute() else p.parts
    parts = tuple(x for x in parts if x not in ("..", "."))
    if parts[:2] == ("var", "log"):
        parts = parts[2:]
    return str(PurePosixPath(host, "var", "log", *parts))


def plan_file(f: RemoteFile, w: Window, tools: dict[str, str],
              rotated_slack_s: int = 86400) -> FilePlan:
    """Choose the method for ``f`` (see the module docstring). Pure."""
    q = shlex.quote(f.path)
    if f.first is not None and not w.overlaps(f.first, f.last):
        return FilePlan("none", "", "no header of the file is inside the window", None)
    if f.gz and f.mtime_s < w.since_epoch - rotated_slack_s:
        return FilePlan("none", "", f"rotated (last written) more than {rotated_slack_s} s "
                        "before the window", None)
    whole = Producer(f"cat {q}")
    if f.first is None:
        return FilePlan("whole", "cat", "no oslo.log header in the first 64 KiB", whole)
    if not f.gz and w.covers(f.first, f.last):
        return FilePlan("whole", "cat", "every header of the file is inside the window", whole)
    if "awk" in tools:
        via, flt = "awk", awk_command(w, tools["awk"])
    elif "python3" in tools:
        via, flt = "python3", python_command(w, tools["python3"])
    else:
        return FilePlan("whole", "cat", "no awk or python3 on the host to filter with", whole)
    if f.gz:
        if "gzip" not in tools:
            return FilePlan("whole", "cat", "no gzip on the host to filter a .gz with", whole)
        gz = shlex.quote(tools["gzip"])
        return FilePlan("filtered", via, "window's lines only (decompressed, filtered, "
                        "recompressed on the host)", Producer(f"{gz} -dc {q}", flt, f"{gz} -n -c"))
    return FilePlan("filtered", via, "window's lines only", Producer(f"{flt} < {q}"))


def _key(f: RemoteFile, p: FilePlan, w: Window) -> dict[str, Any]:
    return {"src": f.path, "size": f.size_b, "mtime": f.mtime_s, "inode": f.inode,
            "method": p.method, "via": p.via,
            "window": [w.since_text, w.until_text] if p.method == "filtered" else None}


def _outside(base: SourceFields) -> SourceFields:
    """``base`` with the reason of a filtered file that had no line inside the window."""
    return {**base, "reason": _EMPTY}


def _same_but_grown(old: dict[str, Any], new: dict[str, Any], gz: bool) -> bool:
    """A plain file that only grew since the last complete copy (same inode, method, window)."""
    same = all(old.get(k) == new[k] for k in ("src", "inode", "method", "via", "window"))
    return same and not gz and isinstance(old.get("size"), int) and new["size"] >= old["size"]


async def collect_file(transport: Transport, host: str, f: RemoteFile, w: Window, out: Path,
                       journal: StateJournal, tools: dict[str, str], *, local: bool = False,
                       timeout_s: float = 900.0, rotated_slack_s: int = 86400) -> SourceResult:
    """Bring ``f`` into ``out`` as planned, resuming or skipping by the journal. Failures are
    returned in the result (status ``error``), never raised; local disk errors propagate."""
    t0 = time.perf_counter()
    plan = plan_file(f, w, tools, rotated_slack_s)
    rel = local_path(host, f.path)
    dest = out / rel
    base = SourceFields(host=host, kind="file", source=f.path, method=plan.method, via=plan.via,
                        reason=plan.reason, remote_bytes=f.size_b, remote_mtime_s=f.mtime_s)
    rec = journal.get(rel)
    if plan.producer is None:
        if rec is not None and rec.get("phase") != "removed":  # another window's data
            for p in (dest, dest.with_name(dest.name + ".part")):
                with contextlib.suppress(FileNotFoundError):
                    p.unlink()
            journal.record(rel, "removed", {"src": f.path})
        return SourceResult(local=None, status="outside_window", **base)
    key = _key(f, plan, w)
    part = dest.with_name(dest.name + ".part")
    if rec and rec.get("phase") == "complete" and rec.get("key") == key and rec.get("empty"):
        return SourceResult(local=None, status="outside_window", **_outside(base))
    if rec and rec.get("phase") == "complete" and rec.get("key") == key and dest.exists() \
            and dest.stat().st_size == rec.get("bytes"):
        return SourceResult(local=rel, status="unchanged", bytes=rec["bytes"],
                            lines=rec.get("lines", 0), sha256=rec.get("sha256"),
                            wall_s=time.perf_counter() - t0, **base)
    prefix, status = None, "fetched"
    if rec and rec.get("phase") == "started" and rec.get("key") == key and part.exists():
        prefix, status = part, "resumed"
    elif rec and rec.get("phase") == "complete" and dest.exists() \
            and _same_but_grown(rec.get("key", {}), key, f.gz):
        prefix, status = dest, "appended"
    if local and plan.method == "whole" and f.gz:
        linked = await asyncio.to_thread(_hardlink, Path(f.path), dest)
        if linked:
            base["via"] = "hardlink"
            prefix, status = None, "fetched"
    else:
        linked = False
    if not linked:
        journal.record(rel, "started", key)
        res = await fetch(transport, plan.producer, dest, prefix=prefix, mtime_s=f.mtime_s,
                          timeout_s=timeout_s)
        if not res.ok:
            return SourceResult(local=None, status="error", bytes_transferred=res.bytes_in,
                                error=res.error, wall_s=time.perf_counter() - t0, **base)
        if status != "fetched" and res.resumed_from == 0:
            status = "fetched"  # the prefix did not match: restarted
        n_in, damage = res.bytes_in, res.error
    else:
        n_in, damage = 0, None
    size, lines, sha = await asyncio.to_thread(file_stats, dest)
    if lines == 0 and plan.method == "filtered" and damage is None:
        dest.unlink()
        journal.record(rel, "complete", key, bytes=0, lines=0, empty=True)
        return SourceResult(local=None, status="outside_window", bytes_transferred=n_in,
                            wall_s=time.perf_counter() - t0, **_outside(base))
    journal.record(rel, "complete", key, bytes=size, lines=lines, sha256=sha)
    return SourceResult(local=rel, status=status, bytes=size, bytes_transferred=n_in,
                        lines=lines, sha256=sha, error=damage, wall_s=time.perf_counter() - t0,
                        **base)


def _hardlink(src: Path, dest: Path) -> bool:
    """Hard-link ``src`` at ``dest`` (replacing it); False when the filesystem refuses."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".link")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        os.link(src, tmp)
    except OSError:
        return False
    os.replace(tmp, dest)
    return True
