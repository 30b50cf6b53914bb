"""Where shell commands run: this machine (:class:`LocalTransport`) or a host over SSH
(:class:`stacklens.collect.ssh.SshTransport`). The collector speaks only POSIX ``sh`` through
this interface, so one collection algorithm serves both, and tests inject either.

A command's stdout is bytes (logs are not always UTF-8); stderr is kept as text, at most
:data:`STDERR_LIMIT` characters. Nothing here raises for a failing command: the exit status and
stderr come back as data. Timeouts raise :class:`TimeoutError`.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Protocol

__all__ = ["ByteStream", "CmdResult", "LocalTransport", "STDERR_LIMIT", "Transport"]

STDERR_LIMIT = 4000
_CHUNK = 1 << 16


@dataclass(frozen=True)
class CmdResult:
    """A finished command: all of stdout (bytes), stderr (text, cut), exit status (None: killed
    by a signal or the connection closed)."""

    stdout: bytes
    stderr: str
    exit_status: int | None


class ByteStream(Protocol):
    """A running command's stdout, read in chunks; :meth:`finish` waits for the exit."""

    async def read(self) -> bytes:
        """The next chunk of stdout, ``b""`` at the end."""
        ...

    async def finish(self) -> tuple[int | None, str]:
        """Wait for the command to end: ``(exit_status, stderr)``."""
        ...

    async def abort(self) -> None:
        """Stop the command (on a timeout or a local write error)."""
        ...


class Transport(Protocol):
    """Runs POSIX ``sh`` scripts on one host. ``label`` names it in messages."""

    label: str

    async def run(self, script: str, timeout_s: float) -> CmdResult:
        """Run ``script`` to the end and return its output. Raises TimeoutError."""
        ...

    async def stream(self, script: str) -> ByteStream:
        """Start ``script``; its stdout is read from the returned stream."""
        ...

    async def close(self) -> None:
        """Release the connection."""
        ...


class _ProcStream:
    """:class:`ByteStream` over an asyncio subprocess."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self._p = proc
        assert proc.stderr is not None
        self._err = asyncio.ensure_future(proc.stderr.read(1 << 20))

    async def read(self) -> bytes:
        assert self._p.stdout is not None
        return await self._p.stdout.read(_CHUNK)

    async def finish(self) -> tuple[int | None, str]:
        rc = await self._p.wait()
        err = (await self._err).decode("utf-8", "replace")[:STDERR_LIMIT]
        return (rc if rc >= 0 else None), err

    async def abort(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self._p.kill()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._p.wait(), 10)
        self._err.cancel()


class LocalTransport:
    """Runs scripts with this machine's ``/bin/sh`` (local folders and the local journal)."""

    def __init__(self, label: str = "local") -> None:
        self.label = label

    async def _start(self, script: str) -> asyncio.subprocess.Process:
        return await asyncio.create_subprocess_exec(
            "/bin/sh", "-c", script, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )

    async def run(self, script: str, timeout_s: float) -> CmdResult:
        """Run ``script`` to the end (killed after ``timeout_s``, then TimeoutError)."""
        proc = await self._start(script)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
            raise
        rc = proc.returncode
        return CmdResult(out, err.decode("utf-8", "replace")[:STDERR_LIMIT],
                         rc if rc is not None and rc >= 0 else None)

    async def stream(self, script: str) -> ByteStream:
        """Start ``script`` and stream its stdout."""
        return _ProcStream(await self._start(script))

    async def close(self) -> None:
        """Nothing to release."""
