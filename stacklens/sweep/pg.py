"""A throw-away PostgreSQL server for the application workload's tests and benches: ``initdb``
into a fresh data folder and ``postgres`` run as the ``postgres`` user, in a network namespace
(``ip netns exec``) or on this machine, listening only on the given address (TCP) and a socket
in the data folder, trust authentication for that address's /24 (TEST-NET in the netlab).
Root only. :meth:`PgServer.stop` stops it (SIGINT: fast shutdown, then SIGKILL to its process
group) and removes the data folder; use it as a context manager.

Binaries: Debian's ``postgresql`` package (``/usr/lib/postgresql/<major>/bin``).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field

__all__ = ["PgServer", "pg_bin", "pg_unavailable"]


def pg_bin() -> str | None:
    """The newest Debian PostgreSQL bin folder holding ``initdb`` and ``postgres``."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/postgres"),
                   key=lambda p: int(p.split("/")[-3]) if p.split("/")[-3].isdigit() else 0)
    return os.path.dirname(found[-1]) if found else None


def pg_unavailable() -> str | None:
    """Why a PostgreSQL test server cannot be started here (None: it can)."""
    if os.geteuid() != 0:
        return "starting postgres as the postgres user needs root"
    if pg_bin() is None or shutil.which("pgbench") is None:
        return "postgresql / pgbench not installed (bash .ci/sweep-setup.sh)"
    try:
        import pwd

        pwd.getpwnam("postgres")
    except KeyError:
        return "no postgres user"
    return None


@dataclass
class PgServer:
    """PostgreSQL on ``address:port`` in namespace ``netns`` (None: this machine)."""

    address: str
    netns: str | None = None
    port: int = 5432
    datadir: str = ""
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    def _as_pg(self, *argv: str) -> list[str]:
        pre = ["ip", "netns", "exec", self.netns] if self.netns else []
        return [*pre, "runuser", "-u", "postgres", "--", *argv]

    def start(self, wait_s: float = 30.0) -> PgServer:
        """initdb, start, wait until it accepts connections. Raises OSError (after
        stopping what was started) when a step fails."""
        b = pg_bin()
        if b is None:
            raise OSError("PostgreSQL is not installed")
        self.datadir = tempfile.mkdtemp(prefix="slt-pg-")
        shutil.chown(self.datadir, "postgres", "postgres")
        os.chmod(self.datadir, 0o700)
        try:
            r = subprocess.run(self._as_pg(f"{b}/initdb", "-D", self.datadir, "-A", "trust",
                                           "-U", "postgres", "--no-sync"),
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise OSError(f"initdb: {r.stderr.strip()[-300:]}")
            net = ".".join(self.address.split(".")[:3]) + ".0/24"
            with open(f"{self.datadir}/pg_hba.conf", "a", encoding="utf-8") as f:
                f.write(f"host all all {net} trust\n")
            self.proc = subprocess.Popen(
                self._as_pg(f"{b}/postgres", "-D", self.datadir, "-p", str(self.port),
                            "-c", f"listen_addresses={self.address}",
                            "-c", f"unix_socket_directories={self.datadir}",
                            "-c", "shared_buffers=16MB", "-c", "max_connections=40",
                            "-c", "fsync=off"),
                stdout=subprocess.DEVNULL, stderr=open(f"{self.datadir}/server.log", "wb"),
                start_new_session=True)
            self._wait(b, wait_s)
        except (OSError, subprocess.TimeoutExpired):
            self.stop()
            raise
        return self

    def _wait(self, b: str, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise OSError(f"postgres exited: {self._log()}")
            r = subprocess.run(self._as_pg(f"{b}/pg_isready", "-h", self.address, "-p",
                                           str(self.port), "-t", "2"),
                               capture_output=True, timeout=10)
            if r.returncode == 0:
                return
            time.sleep(0.2)
        raise OSError(f"postgres not ready within {wait_s:g} s: {self._log()}")

    def _log(self) -> str:
        with contextlib.suppress(OSError):
            with open(f"{self.datadir}/server.log", encoding="utf-8", errors="replace") as f:
                return f.read()[-300:]
        return ""

    def stop(self) -> None:
        """Stop the server (bounded waits) and remove its data folder."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
            self.proc = None
        if self.datadir:
            shutil.rmtree(self.datadir, ignore_errors=True)
            self.datadir = ""

    def __enter__(self) -> PgServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
