"""SSH transport (asyncssh): one connection per host, commands as ``sh -c`` on exec channels.

Host keys are always verified against the host's ``known_hosts`` file; a missing file is an
error, never a reason to skip verification (asyncssh disables verification when passed
``known_hosts=None``, which this module never does). Authentication is public key only: the
inventory's ``key_file`` and, with ``agent: true``, the keys of ``$SSH_AUTH_SOCK``; without a
``key_file``, asyncssh's default ``~/.ssh/id_*`` keys. No password or keyboard prompts, no
``~/.ssh/config`` (the inventory is the whole truth).

:func:`connect` never raises for the host's own problems; it returns ``(transport, None)`` or
``(None, (kind, detail))`` with ``kind`` one of ``unreachable``, ``timeout``,
``host_key_rejected``, ``known_hosts_missing``, ``key_file_missing``, ``auth_failed``,
``ssh_error``. Reference: asyncssh ``connect`` / ``SSHClientConnectionOptions``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
from typing import Any

import asyncssh

from stacklens.collect.inventory import HostPlan
from stacklens.collect.transport import STDERR_LIMIT, ByteStream, CmdResult

__all__ = ["SshTransport", "connect"]

_CHUNK = 1 << 16


class _SshStream:
    """:class:`~stacklens.collect.transport.ByteStream` over an asyncssh process."""

    def __init__(self, proc: asyncssh.SSHClientProcess[bytes]) -> None:
        self._p = proc
        self._err = asyncio.ensure_future(proc.stderr.read(1 << 20))

    async def read(self) -> bytes:
        return await self._p.stdout.read(_CHUNK)

    async def finish(self) -> tuple[int | None, str]:
        done = await self._p.wait()
        err = await self._err
        text = err.decode("utf-8", "replace")  # bytes: the process has encoding=None
        return done.exit_status, text[:STDERR_LIMIT]

    async def abort(self) -> None:
        self._p.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._p.wait_closed(), 10)
        self._err.cancel()


class SshTransport:
    """Runs ``sh -c SCRIPT`` on one host over an open asyncssh connection."""

    def __init__(self, conn: asyncssh.SSHClientConnection, label: str) -> None:
        self._conn = conn
        self.label = label

    def _cmd(self, script: str) -> str:
        return "sh -c " + shlex.quote(script)

    async def run(self, script: str, timeout_s: float) -> CmdResult:
        """Run ``script`` remotely to the end. Raises TimeoutError after ``timeout_s``."""
        r = await asyncio.wait_for(
            self._conn.run(self._cmd(script), encoding=None, check=False, stdin=asyncssh.DEVNULL),
            timeout_s,
        )
        out = r.stdout if isinstance(r.stdout, bytes) else b""
        err = r.stderr.decode("utf-8", "replace") if isinstance(r.stderr, bytes) else ""
        return CmdResult(out, err[:STDERR_LIMIT], r.exit_status)

    async def stream(self, script: str) -> ByteStream:
        """Start ``script`` remotely and stream its stdout."""
        proc = await self._conn.create_process(self._cmd(script), encoding=None,
                                               stdin=asyncssh.DEVNULL)
        return _SshStream(proc)

    async def close(self) -> None:
        """Close the connection (waits at most 10 s)."""
        self._conn.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._conn.wait_closed(), 10)


async def connect(plan: HostPlan, timeout_s: float = 15.0,
                  keepalive_s: float = 15.0) -> tuple[SshTransport | None, tuple[str, str] | None]:
    """Open an SSH connection to ``plan``'s host; failures come back as ``(kind, detail)``.

    ``timeout_s`` bounds the TCP connect plus the SSH handshake and login; a dead peer is
    noticed after ``keepalive_s`` x 4 seconds of silence.
    """
    where = f"{plan.user}@{plan.address}:{plan.port}"
    if not plan.known_hosts or not os.path.isfile(plan.known_hosts):
        return None, ("known_hosts_missing",
                      f"known_hosts file {plan.known_hosts or '(none)'} not found; host keys "
                      "are always verified (add the host with ssh-keyscan after checking it)")
    if plan.key_file and not os.path.isfile(plan.key_file):
        return None, ("key_file_missing", f"key file {plan.key_file} not found")
    opts: dict[str, Any] = {
        "port": plan.port,
        "username": plan.user,
        "known_hosts": plan.known_hosts,
        "config": None,
        "password_auth": False,
        "kbdint_auth": False,
        "connect_timeout": timeout_s,
        "login_timeout": timeout_s,
        "keepalive_interval": keepalive_s,
        "keepalive_count_max": 4,
    }
    if plan.key_file:
        opts["client_keys"] = [plan.key_file]
    if not plan.agent:
        opts["agent_path"] = None
    try:
        conn = await asyncio.wait_for(asyncssh.connect(plan.address, **opts), timeout_s + 5)
    except asyncssh.HostKeyNotVerifiable as e:
        return None, ("host_key_rejected",
                      f"{where}: host key not verified against {plan.known_hosts}: {e.reason}")
    except asyncssh.PermissionDenied as e:
        return None, ("auth_failed", f"{where}: {e.reason}")
    except asyncssh.KeyImportError as e:
        return None, ("key_file_unusable", f"{plan.key_file}: {e}")
    except TimeoutError:
        return None, ("timeout", f"{where}: no SSH login within {timeout_s:g} s")
    except asyncssh.Error as e:
        return None, ("ssh_error", f"{where}: {e.reason}")
    except OSError as e:
        return None, ("unreachable", f"{where}: {e.strerror or e}")
    return SshTransport(conn, plan.name), None
