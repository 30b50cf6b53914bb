"""What a collection produced: one record per source, one per host, and two files in ``<out>``.

``collect-manifest.json`` (written at the end of every run, replacing the previous one) is the
report: the window, per host its sources (file or journald unit), how each travelled (``method``
``filtered`` / ``whole``, ``via`` awk / python3 / cat / hardlink / journalctl), sizes, line counts,
checksums and errors, and the ``--host-map`` / ``--service-map`` entries for ``analyze``.

``.collect-state.jsonl`` is the resume journal, appended as work happens (so it survives a crash
or Ctrl-C): a ``started`` record before a transfer and a ``complete`` record after it, each with
the source's key (remote size, mtime, inode, method, window). The last record of a local path
wins. A ``.part`` file beside a destination is a transfer in progress or interrupted.

Manifest format history (``format``):
  ``stacklens-collect/1``: first version.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, NotRequired, TypedDict

__all__ = [
    "HostResult",
    "MANIFEST_FORMAT",
    "MANIFEST_NAME",
    "STATE_NAME",
    "SourceFields",
    "SourceResult",
    "StateJournal",
    "manifest_dict",
    "write_manifest",
]

MANIFEST_FORMAT = "stacklens-collect/1"
MANIFEST_NAME = "collect-manifest.json"
STATE_NAME = ".collect-state.jsonl"


class SourceFields(TypedDict):
    """The fields of a :class:`SourceResult` that name the source and how it travels, known
    before any transfer (a collector builds them once and adds the outcome per result)."""

    host: str
    kind: str
    source: str
    method: str
    via: str
    reason: str
    remote_bytes: NotRequired[int | None]
    remote_mtime_s: NotRequired[int | None]


@dataclass(frozen=True)
class SourceResult:
    """One source of one host, as collected (or not).

    ``kind`` ``file`` or ``journald``; ``source`` the remote path or unit; ``local`` the path
    under ``<out>`` (None: nothing written); ``method`` ``filtered`` (only the window's lines
    travelled), ``whole`` (the file as it is) or ``none``; ``via`` the program that produced the
    bytes; ``status`` one of ``fetched``, ``resumed`` (a ``.part`` was continued), ``appended``
    (a grown file's new bytes were added), ``unchanged`` (complete from an earlier run),
    ``outside_window`` (nothing of the window in it), ``error``; ``reason`` why the method was
    chosen. ``remote_bytes`` / ``remote_mtime_s`` describe the source on its host (None for
    journald); ``bytes`` the local file, ``bytes_transferred`` what this run received over the
    transport, ``lines`` the local file's lines (decompressed), ``sha256`` its checksum.
    ``error`` is set for failures and for damage met on the way (the data before it is kept).
    """

    host: str
    kind: str
    source: str
    local: str | None
    method: str
    via: str
    status: str
    reason: str = ""
    remote_bytes: int | None = None
    remote_mtime_s: int | None = None
    bytes: int = 0
    bytes_transferred: int = 0
    lines: int = 0
    sha256: str | None = None
    error: str | None = None
    wall_s: float = 0.0


@dataclass(frozen=True)
class HostResult:
    """One host: whether it was reached, its sources, and the errors that are not one source's
    (``kind``, ``detail``, ``source``): ``unreachable``, ``auth_failed``, ``host_key_rejected``,
    ``no_match`` (a glob matched nothing), ``unreadable``, ``listing_failed``, ..."""

    host: str
    transport: str
    address: str | None
    reached: bool
    sources: list[SourceResult] = field(default_factory=list)
    errors: list[dict[str, str]] = field(default_factory=list)
    tools: dict[str, str] = field(default_factory=dict)
    wall_s: float = 0.0

    @property
    def collected(self) -> int:
        """Sources whose data is in ``<out>`` (fetched now or complete from before)."""
        return sum(1 for s in self.sources if s.local and s.status != "error")

    def totals(self) -> dict[str, int]:
        """Files and bytes in ``<out>``, bytes transferred, bytes of the matched files on the
        host (what whole copies would have cost), lines, and errors (host and source)."""
        ok = [s for s in self.sources if s.local and s.status != "error"]
        return {
            "files": len(ok),
            "bytes": sum(s.bytes for s in ok),
            "bytes_transferred": sum(s.bytes_transferred for s in self.sources),
            "remote_bytes": sum(s.remote_bytes or 0 for s in self.sources
                                if s.status != "error"),
            "lines": sum(s.lines for s in ok),
            "error_count": len(self.errors) + sum(1 for s in self.sources if s.error),
        }


def manifest_dict(
    hosts: list[HostResult], window: dict[str, str], extra: dict[str, Any]
) -> dict[str, Any]:
    """The manifest as a JSON-ready dict: format, window, totals, hosts, then ``extra``."""
    totals: dict[str, int] = {"hosts": len(hosts), "hosts_reached": sum(h.reached for h in hosts)}
    for h in hosts:
        for k, v in h.totals().items():
            totals[k] = totals.get(k, 0) + v
    out: dict[str, Any] = {"format": MANIFEST_FORMAT, "window": window, "totals": totals}
    out.update(extra)
    out["hosts"] = [
        {"host": h.host, "transport": h.transport, "address": h.address, "reached": h.reached,
         "window": window, **h.totals(), "wall_s": round(h.wall_s, 3), "tools": h.tools,
         "errors": h.errors,
         "sources": [{k: v for k, v in asdict(s).items() if k != "host"} for s in h.sources]}
        for h in hosts
    ]
    return out


def write_manifest(out: Path, doc: dict[str, Any]) -> Path:
    """Write ``doc`` to ``<out>/collect-manifest.json`` atomically; returns the path."""
    path = out / MANIFEST_NAME
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


class StateJournal:
    """The resume journal of one output folder (see the module docstring).

    ``get(local)`` returns the last record of a local path (a dict with ``phase``, ``key`` and,
    when complete, ``bytes``, ``lines``, ``sha256``, ``mtime_ns``) or None.
    """

    def __init__(self, out: Path) -> None:
        self.path = out / STATE_NAME
        self._last: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash
                if isinstance(rec, dict) and isinstance(rec.get("local"), str):
                    self._last[rec["local"]] = rec

    def get(self, local: str) -> dict[str, Any] | None:
        """The last record of ``local`` (path relative to the output folder), or None."""
        return self._last.get(local)

    def record(self, local: str, phase: str, key: dict[str, Any], **info: Any) -> None:
        """Append a record and remember it as the last of ``local``."""
        rec = {"local": local, "phase": phase, "key": key, **info}
        self._last[local] = rec
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec, sort_keys=True) + "\n")

    def compact(self) -> None:
        """Rewrite the journal with only the last record of each path (atomic)."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            for rec in self._last.values():
                f.write(json.dumps(rec, sort_keys=True) + "\n")
        os.replace(tmp, self.path)
