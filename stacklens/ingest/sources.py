"""Finding log files under the user's paths and reading their bytes without ever aborting.

Damage is reported, not raised: a truncated or corrupt gzip member yields the bytes decompressed
before the damage plus a ``data_loss`` stat; an unreadable file yields no bytes plus a stat.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from stacklens.errors import InputNotFound

__all__ = ["SourceFile", "find_files", "read_bytes"]

_CHUNK = 1 << 20
_SKIP_DIRS = {".git", "__pycache__"}


@dataclass(frozen=True)
class SourceFile:
    """One file to ingest. ``root`` is the command-line path it was found under; ``explicit`` is
    True when the user named the file itself (not found by recursing into a folder)."""

    path: Path
    root: Path
    explicit: bool


@dataclass
class ReadResult:
    """Bytes of one file (decompressed) and the problems met: ``(kind, severity, count, detail)``."""

    data: bytes
    problems: list[tuple[str, str, int, str]] = field(default_factory=list)


def find_files(paths: list[str | os.PathLike]) -> Iterator[SourceFile]:
    """Yield every regular file under ``paths`` (files, folders recursed, ``.gz`` files), sorted.

    Raises :class:`~stacklens.errors.InputNotFound` for a path that does not exist.
    """
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise InputNotFound(f"no such file or folder: {p}")
        if p.is_file():
            yield SourceFile(p, p.parent, True)
            continue
        for dirpath, dirnames, filenames in os.walk(p):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                f = Path(dirpath) / name
                if f.is_file() and not f.is_symlink():
                    yield SourceFile(f, p, False)


def _salvage(d: zlib._Decompress, piece: bytes) -> bytes:
    """Feed ``piece`` to ``d`` in small slices and return what came out before the damage."""
    out = []
    for i in range(0, len(piece), 256):
        try:
            out.append(d.decompress(piece[i : i + 256]))
        except zlib.error:
            break
    return b"".join(out)


def _gunzip(raw: bytes) -> ReadResult:
    """Decompress every gzip member of ``raw``; keep what precedes damage (RFC 1952)."""
    out: list[bytes] = []
    problems: list[tuple[str, str, int, str]] = []
    data = raw
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            for i in range(0, len(data), _CHUNK):
                saved = d.copy()
                piece = data[i : i + _CHUNK]
                try:
                    out.append(d.decompress(piece))
                except zlib.error:
                    out.append(_salvage(saved, piece))
                    raise
                if d.eof:
                    break
            out.append(d.flush())
        except zlib.error as e:
            problems.append(("corrupt_gzip", "data_loss", 1, f"stopped at damage: {e}"))
            break
        if not d.eof:
            problems.append(
                ("truncated_gzip", "data_loss", 1, "gzip stream ends early; kept what was read")
            )
            break
        data = d.unused_data.lstrip(b"\0")
    return ReadResult(b"".join(out), problems)


def read_bytes(path: Path) -> ReadResult:
    """Read ``path``, gunzipping when it starts with the gzip magic number.

    Never raises for I/O or format problems; they come back in ``problems``.
    """
    try:
        raw = path.read_bytes()
    except OSError as e:
        return ReadResult(b"", [("unreadable_file", "data_loss", 1, str(e))])
    if raw[:2] == b"\x1f\x8b":
        return _gunzip(raw)
    return ReadResult(raw)
