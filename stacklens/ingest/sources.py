"""Finding log files under the user's paths and reading their bytes without ever aborting.

Damage is reported, not raised: a truncated or corrupt gzip member yields the bytes decompressed
before the damage plus a ``data_loss`` stat; an unreadable file yields no bytes plus a stat.

Hostile entries in a log folder are listed by :func:`find_files` and classified by
:func:`read_bytes`, which never blocks and never reads without bound: FIFOs, sockets and device
files are skipped (a FIFO is never opened for a blocking read), symlink loops and dangling links
are counted, unreadable files and folders are counted, file names that are not valid UTF-8 are
read and counted (their display form escapes the bytes: :func:`display_name`), and gzip output is
capped (:data:`MAX_GUNZIP_BYTES`, :data:`MAX_GUNZIP_RATIO`) so a decompression bomb costs bounded
memory and time. Each problem is a ``(kind, severity, count, detail)`` row for ``ingest_stats``.
"""

from __future__ import annotations

import errno
import os
import stat
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from stacklens.errors import InputNotFound
from stacklens.settings import positive_int

__all__ = ["MAX_GUNZIP_BYTES", "MAX_GUNZIP_RATIO", "SourceFile", "display_name", "find_files",
           "read_bytes"]

_CHUNK = 1 << 20
#: at most this many bytes come out of one gzip file, unless ``STACKLENS_MAX_GUNZIP_BYTES`` says
#: otherwise (read at each file)
MAX_GUNZIP_BYTES = 2 << 30
#: ... and at most this many times its compressed size (oslo.log text compresses 5-30x; deflate's
#: limit is ~1032x, reached only by crafted or degenerate input)
MAX_GUNZIP_RATIO = 200
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


def display_name(path: str | os.PathLike) -> str:
    """``path`` as valid UTF-8 text: bytes that are not UTF-8 (held as surrogates by Python's
    file system decoding) become ``\\xNN`` escapes."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


def _is_special(p: Path) -> bool:
    """True for entries that are not a regular file nor a folder (FIFO, socket, device), and for
    symlinks that resolve to nothing (dangling, loop)."""
    try:
        st = p.stat()
    except OSError:
        return p.is_symlink()
    return not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode))


def _note_error(into: list[Path]) -> Callable[[OSError], None]:
    return lambda e: into.append(Path(e.filename))


def find_files(paths: Sequence[str | os.PathLike[str]]) -> Iterator[SourceFile]:
    """Yield every file under ``paths`` (files, folders recursed, ``.gz`` files), sorted.

    Besides regular files, entries :func:`read_bytes` must count rather than read are yielded
    too: FIFOs, sockets, devices, dangling or looping symlinks, and folders that cannot be
    listed. Symlinks to regular files found while recursing are skipped (a rotated log's
    ``screen-n-api.txt`` link duplicates its target); symlinked folders are not followed.

    Raises :class:`~stacklens.errors.InputNotFound` for a path that does not exist.
    """
    for raw in paths:
        p = Path(raw)
        if not p.exists() and not p.is_symlink():
            raise InputNotFound(f"no such file or folder: {display_name(p)}")
        if not p.is_dir():
            yield SourceFile(p, p.parent, True)
            continue
        unlistable: list[Path] = []
        for dirpath, dirnames, filenames in os.walk(p, onerror=_note_error(unlistable)):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
            for name in sorted(filenames):
                f = Path(dirpath) / name
                if (f.is_file() and not f.is_symlink()) or _is_special(f):
                    yield SourceFile(f, p, False)
        for d in unlistable:
            yield SourceFile(d, p, False)


def _salvage(d: zlib._Decompress, piece: bytes) -> bytes:
    """Feed ``piece`` to ``d`` in small slices and return what came out before the damage."""
    out = []
    for i in range(0, len(piece), 256):
        try:
            out.append(d.decompress(piece[i : i + 256]))
        except zlib.error:
            break
    return b"".join(out)


def _gunzip(raw: bytes, limit: int | None = None) -> ReadResult:
    """Decompress every gzip member of ``raw``; keep what precedes damage (RFC 1952).

    At most ``limit`` bytes come out (default: ``min(MAX_GUNZIP_BYTES, MAX_GUNZIP_RATIO *
    len(raw))``, at least 64 MiB); past it the output is cut at its last line end and a
    ``gzip_output_capped`` data_loss problem is reported (a decompression bomb).
    """
    if limit is None:
        cap = positive_int("STACKLENS_MAX_GUNZIP_BYTES", MAX_GUNZIP_BYTES, unit="bytes")
        limit = min(cap, max(64 << 20, MAX_GUNZIP_RATIO * len(raw)))
    out: list[bytes] = []
    size = 0
    problems: list[tuple[str, str, int, str]] = []
    data = raw
    capped = False
    while data and not capped:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            for i in range(0, len(data), _CHUNK):
                piece = data[i : i + _CHUNK]
                while piece and not capped:
                    saved = d.copy()
                    try:
                        got = d.decompress(piece, min(_CHUNK * 4, limit - size + 1))
                    except zlib.error:
                        out.append(_salvage(saved, piece))
                        raise
                    out.append(got)
                    size += len(got)
                    capped = size > limit
                    piece = d.unconsumed_tail
                if d.eof or capped:
                    break
            if not capped:
                out.append(d.flush())
        except zlib.error as e:
            problems.append(("corrupt_gzip", "data_loss", 1, f"stopped at damage: {e}"))
            break
        if capped:
            break
        if not d.eof:
            problems.append(
                ("truncated_gzip", "data_loss", 1, "gzip stream ends early; kept what was read")
            )
            break
        data = d.unused_data.lstrip(b"\0")
    text = b"".join(out)
    if capped:
        text = text[:limit]
        text = text[: text.rfind(b"\n") + 1]
        problems.append(
            ("gzip_output_capped", "data_loss", 1,
             f"decompressed output cut at {len(text)} bytes ({len(raw)} compressed): limit "
             f"{limit} bytes (decompression bomb?)")
        )
    return ReadResult(text, problems)


_SPECIAL = (
    (stat.S_ISFIFO, "FIFO"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
    (stat.S_ISDIR, "folder"),
)


def _open_error(path: Path, e: OSError) -> tuple[str, str, int, str]:
    if e.errno == errno.ELOOP:
        return ("symlink_loop", "error", 1, f"symlink loop: {e.strerror}")
    if e.errno == errno.ENOENT and path.is_symlink():
        return ("broken_symlink", "info", 1, f"symlink to nothing: {display_name(os.readlink(path))}")
    return ("unreadable_file", "data_loss", 1, f"{type(e).__name__}: {e.strerror}")


def read_bytes(path: Path) -> ReadResult:
    """Read ``path``, gunzipping when it starts with the gzip magic number.

    Never raises for I/O or format problems and never blocks: the file is opened non-blocking
    and read only when it is a regular file; anything else comes back as no bytes plus one
    problem (kinds: ``special_file_skipped``, ``symlink_loop``, ``broken_symlink``,
    ``unreadable_file``, ``corrupt_gzip``, ``truncated_gzip``, ``gzip_output_capped``,
    ``non_utf8_name``).
    """
    problems: list[tuple[str, str, int, str]] = []
    name = display_name(path)
    if name != os.fspath(path):
        problems.append(("non_utf8_name", "info", 1, f"file name is not UTF-8; shown as {name}"))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        return ReadResult(b"", [*problems, _open_error(path, e)])
    try:
        mode = os.fstat(fd).st_mode
        for test, what in _SPECIAL:
            if test(mode):
                kind = "unreadable_file" if what == "folder" else "special_file_skipped"
                sev = "data_loss" if what == "folder" else "info"
                detail = "folder that cannot be listed" if what == "folder" else f"{what}: not read"
                return ReadResult(b"", [*problems, (kind, sev, 1, detail)])
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as f:
            fd = -1
            raw = f.read()
    except OSError as e:
        return ReadResult(b"", [*problems, _open_error(path, e)])
    finally:
        if fd >= 0:
            os.close(fd)
    if raw[:2] == b"\x1f\x8b":
        rr = _gunzip(raw)
        return ReadResult(rr.data, problems + rr.problems)
    return ReadResult(raw, problems)
