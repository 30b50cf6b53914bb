"""Resumable transfer of one command's output into one local file.

A *producer* is a function ``skip -> sh script`` whose output is the source's bytes from byte
``skip`` on (``... | tail -c +N``). The output must be deterministic for a given source key
(same file size, mtime and inode; same window): a filter's output for a file is, a gzip stream
of it is (``gzip -n``), ``cat`` is.

Resuming from a prefix of ``N`` bytes asks for the output from ``N - K`` (``K`` = up to
:data:`OVERLAP` bytes) and compares those ``K`` bytes with the prefix's last ``K``: equal, the
rest is appended; different (the file was rewritten, copytruncate rotated it), the prefix is
dropped and the transfer restarts from zero. So a wrong guess costs a restart, never bad data.

Bytes go to ``<dest>.part`` and are renamed to ``dest`` when the command ends well; the local
mtime is set to the source's (``mtime_s``) so the local copy keeps the rotation time (ingest
takes the syslog year from it). Units: bytes, seconds.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from stacklens.collect.transport import Transport

__all__ = ["FetchOutcome", "OVERLAP", "Producer", "fetch", "file_stats", "with_skip"]

OVERLAP = 4096
_MARK = "stacklens-stage-failed"


@dataclass(frozen=True)
class FetchOutcome:
    """How a transfer ended. ``ok``: ``dest`` is complete. ``resumed_from``: the prefix kept
    (0: fresh). ``bytes_in``: bytes received this time. ``error``: why not ok, or damage met on
    the way (a stage's failure with its stderr) when ``ok`` with partial source data."""

    ok: bool
    resumed_from: int
    bytes_in: int
    error: str | None = None


class Producer:
    """Builds the script for a source: ``stages`` are shell commands piped together; each is
    wrapped so that its failure is reported on stderr (POSIX ``sh`` has no ``pipefail``)."""

    def __init__(self, *stages: str) -> None:
        self.stages = stages

    def __call__(self, skip: int) -> str:
        parts = [f"{{ {s} || echo \"{_MARK}: stage {i} exit $?\" >&2; }}"
                 for i, s in enumerate(self.stages)]
        return with_skip(" | ".join(parts), skip)


def with_skip(script: str, skip: int) -> str:
    """``script``'s output from byte ``skip`` on."""
    return f"{script} | tail -c +{skip + 1}" if skip > 0 else script


def _tail(path: Path, n: int) -> bytes:
    with path.open("rb") as f:
        f.seek(-n, os.SEEK_END)
        return f.read(n)


async def _pump(transport: Transport, script: str, part: Path, verify: bytes,
                timeout_s: float) -> tuple[str, int, str | None, str]:
    """Stream ``script`` into ``part`` (appending) after checking its first bytes equal
    ``verify``. Returns ``(state, bytes_in, failure, stderr)``, state ``done``, ``mismatch`` or
    ``failed``. Remote and channel failures are returned; local write errors propagate."""
    stream = await transport.stream(script)
    n_in = 0
    head = b""
    finished = False
    try:
        async with asyncio.timeout(timeout_s):
            with part.open("ab") as f:
                while True:
                    try:
                        chunk = await stream.read()
                    except Exception as e:  # channel or connection lost
                        return "failed", n_in, f"{type(e).__name__}: {e}", ""
                    if not chunk:
                        break
                    n_in += len(chunk)
                    if len(head) < len(verify):
                        need = len(verify) - len(head)
                        head += chunk[:need]
                        chunk = chunk[need:]
                        if not verify.startswith(head):
                            return "mismatch", n_in, None, ""
                    if chunk:
                        await asyncio.to_thread(f.write, chunk)
            try:
                rc, err = await stream.finish()
            except Exception as e:
                return "failed", n_in, f"{type(e).__name__}: {e}", ""
            finished = True
    except TimeoutError:
        return "failed", n_in, f"no end after {timeout_s:g} s", ""
    finally:
        if not finished:
            await stream.abort()
    if len(head) < len(verify):
        return "mismatch", n_in, None, err
    if rc != 0:
        return "failed", n_in, f"exit status {rc}", err
    return "done", n_in, None, err


async def fetch(transport: Transport, producer: Producer, dest: Path, *,
                prefix: Path | None = None, mtime_s: float | None = None,
                timeout_s: float = 900.0) -> FetchOutcome:
    """Write the producer's output to ``dest``, continuing ``prefix`` (``dest`` itself or
    ``<dest>.part``) when given and non-empty. Never raises for remote problems; local I/O
    errors (disk full) propagate."""
    part = dest.with_name(dest.name + ".part")
    dest.parent.mkdir(parents=True, exist_ok=True)
    start = 0
    if prefix is not None and prefix.exists() and prefix.stat().st_size > 0:
        if prefix != part:
            os.replace(prefix, part)
        start = part.stat().st_size
    elif part.exists():
        part.unlink()
    total_in = 0
    for attempt in (0, 1):
        k = min(start, OVERLAP)
        verify = _tail(part, k) if k else b""
        if k:
            os.truncate(part, start)
        elif part.exists():
            part.unlink()
        state, n_in, detail, err = await _pump(transport, producer(start - k), part, verify,
                                               timeout_s)
        total_in += n_in
        if state == "mismatch" and attempt == 0 and start:
            start = 0
            continue
        if state != "done":
            why = detail or "output does not continue the local copy"
            return FetchOutcome(False, start, total_in, f"{why}{': ' + err.strip() if err else ''}")
        damage = None
        if _MARK in err:
            damage = " ".join(err.split())[:500]
        if mtime_s is not None:
            os.utime(part, (mtime_s, mtime_s))
        os.replace(part, dest)
        return FetchOutcome(True, start, total_in, damage)
    return FetchOutcome(False, 0, total_in, "restart failed")  # pragma: no cover


def file_stats(path: Path) -> tuple[int, int, str]:
    """``(bytes, lines, sha256)`` of a local file; lines are counted in the decompressed text
    for gzip files (a damaged stream counts what precedes the damage). Blocking: run it in a
    thread."""
    h = hashlib.sha256()
    size = 0
    lines = 0
    with path.open("rb") as f:
        magic = f.read(2)
        f.seek(0)
        d = zlib.decompressobj(16 + zlib.MAX_WBITS) if magic == b"\x1f\x8b" else None
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
            if d is None:
                lines += chunk.count(b"\n")
                continue
            try:
                data = d.decompress(chunk)
                while d.eof and d.unused_data:  # concatenated members
                    rest = d.unused_data
                    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
                    lines += data.count(b"\n")
                    data = d.decompress(rest)
                lines += data.count(b"\n")
            except zlib.error:
                break  # keep the count before the damage
        while chunk := f.read(1 << 20):  # hash the rest after damage
            h.update(chunk)
            size += len(chunk)
    return size, lines, h.hexdigest()

