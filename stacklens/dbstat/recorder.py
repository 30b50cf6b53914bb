"""``DbRecorder``: snapshots of a MariaDB/MySQL server's accounting during a run.

A :class:`~stacklens.recorder.Recorder`: :meth:`DbRecorder.start` connects (PyMySQL) and takes
snapshot 0 at once, a thread takes one every ``interval_s`` seconds, :meth:`DbRecorder.stop`
takes the last one and returns the tables ``db_digests`` and ``db_samples``
(:mod:`stacklens.schema`; what is read: :mod:`stacklens.dbstat.snapshot`).

Snapshot 0 and the last snapshot hold every digest; those between hold only digests whose
``count_star`` changed, so a long run at a few seconds per snapshot stays small. A failed
snapshot (server gone, timeout) is counted in the notes and the loop goes on (reconnecting);
the thread runs at most ``max_snapshots`` times. The password is used to connect and kept
nowhere else (never in tables or notes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import polars as pl

from stacklens.dbstat.snapshot import digest_rows, sample_rows
from stacklens.errors import StacklensError
from stacklens.schema import TABLES, conform

__all__ = ["DbRecorder", "DbTarget"]


@dataclass(frozen=True)
class DbTarget:
    """Where the server is: TCP ``host``:``port`` or a Unix ``socket`` path (wins when set)."""

    host: str = "127.0.0.1"
    port: int = 3306
    user: str = "root"
    password: str = ""
    socket: str | None = None

    @classmethod
    def from_url(cls, url: str) -> DbTarget:
        """From an SQLAlchemy-style URL as OpenStack's ``[database] connection`` holds it:
        ``mysql+pymysql://user:password@host:port/db?unix_socket=/path`` (the database name is
        ignored: digests of every schema are read). Raises :class:`StacklensError` for another
        scheme."""
        u = urlsplit(url)
        if not u.scheme.startswith(("mysql", "mariadb")):
            raise StacklensError(f"not a MySQL/MariaDB URL (scheme {u.scheme!r})")
        sock = None
        for part in u.query.split("&"):
            k, _, v = part.partition("=")
            if k == "unix_socket":
                sock = unquote(v)
        return cls(host=u.hostname or "127.0.0.1", port=u.port or 3306,
                   user=unquote(u.username or "root"), password=unquote(u.password or ""),
                   socket=sock)


class DbRecorder:
    """Record one server's statement digests and lock/connection counters during a run.

    ``target``: :class:`DbTarget`; ``interval_s``: seconds between snapshots (default 5);
    ``max_snapshots``: bound on the thread's loop (default 10 000: 14 h at 5 s); ``clock``:
    ns since the epoch (injected in tests). :meth:`start` raises the driver's error when the
    server cannot be reached or ``performance_schema`` is off (then :func:`~stacklens.recorder.
    recording` keeps that as the recorder's note)."""

    name = "db"

    def __init__(self, target: DbTarget, interval_s: float = 5.0, max_snapshots: int = 10_000,
                 clock: Callable[[], int] = time.time_ns) -> None:
        self.target, self.interval_s, self.max_snapshots = target, interval_s, max_snapshots
        self._clock = clock
        self._digests: list[dict[str, Any]] = []
        self._samples: list[dict[str, Any]] = []
        self._notes: set[str] = set()
        self._failures = 0
        self._prev: dict[tuple[Any, Any], int] = {}
        self._snap = 0
        self._conn: Any = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def _connect(self) -> Any:
        import pymysql  # the recorder's only user of it; stacklens imports without it

        t = self.target
        kw: dict[str, Any] = {"user": t.user, "password": t.password, "autocommit": True,
                              "connect_timeout": 5, "read_timeout": 30, "write_timeout": 30}
        if t.socket:
            kw["unix_socket"] = t.socket
        else:
            kw.update(host=t.host, port=t.port)
        return pymysql.connect(**kw)

    def snapshot(self, full: bool = False) -> None:
        """Take one snapshot now (thread-safe). ``full``: keep every digest, not only the
        changed ones. Raises the driver's error; the thread's loop counts it instead."""
        with self._lock:
            if self._conn is None:
                self._conn = self._connect()
            t0 = time.perf_counter()
            ts = self._clock()
            with self._conn.cursor() as cur:
                rows = digest_rows(cur, ts, self._snap)
                samples = sample_rows(cur, ts, self._notes)
            keep = []
            for r in rows:
                k = (r["schema"], r["digest"])
                if full or self._prev.get(k) != r["count_star"]:
                    keep.append(r)
                self._prev[k] = r["count_star"]
            self._digests += keep
            self._samples += samples
            self._samples.append({"ts_ns": ts, "metric": "snapshot_s", "object": "",
                                  "value": time.perf_counter() - t0})
            self._snap += 1

    def start(self) -> None:
        """Connect, take snapshot 0 (every digest), start the sampling thread."""
        self.snapshot(full=True)
        self._thread = threading.Thread(target=self._loop, name="stacklens-dbstat", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        for _ in range(self.max_snapshots):
            if self._stop.wait(self.interval_s):
                return
            try:
                self.snapshot()
            except Exception as e:  # noqa: BLE001 - counted; the run goes on
                self._fail(e)
        self._notes.add(f"stopped sampling after {self.max_snapshots} snapshots (the bound)")

    def _fail(self, e: Exception) -> None:
        self._failures += 1
        self._notes.add(f"a snapshot failed: {type(e).__name__}: {e}")
        with self._lock:
            try:
                if self._conn is not None:
                    self._conn.close()
            except Exception:  # noqa: BLE001 - the connection is broken already
                pass
            self._conn = None  # reconnect at the next snapshot

    def stop(self, timeout_s: float = 30.0) -> tuple[dict[str, pl.DataFrame], list[str]]:
        """Stop the thread, take the last snapshot (every digest), close the connection;
        ``({"db_digests": ..., "db_samples": ...}, notes)``. Never raises for the server's
        problems: a failed last snapshot is a note (deltas then end at the last good one)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                self._notes.add(f"sampling thread still busy after {timeout_s:.0f} s")
        try:
            self.snapshot(full=True)
        except Exception as e:  # noqa: BLE001 - keep what was recorded
            self._fail(e)
        with self._lock:
            if self._conn is not None:
                try:
                    self._conn.close()
                except Exception:  # noqa: BLE001
                    pass
                self._conn = None
        notes = sorted(self._notes)
        if self._failures:
            notes.insert(0, f"{self._failures} snapshot(s) failed")
        tables = {"db_digests": _frame(self._digests, "db_digests"),
                  "db_samples": _frame(self._samples, "db_samples")}
        if tables["db_digests"].filter(pl.col("digest").is_null()
                                       & pl.col("schema").is_null()).height:
            notes.append("the server's digest table overflowed (performance_schema_digests_size):"
                         " statements past it are counted in one row without a digest")
        return tables, notes


def _frame(rows: list[dict[str, Any]], name: str) -> pl.DataFrame:
    return conform(pl.DataFrame(rows or None, schema=TABLES[name]), name)
