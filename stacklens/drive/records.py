"""Client-side records: one frozen :class:`RequestRecord` per step a load driver took (a server
booted, a call made); the ``server_*``/``active_ns``/... columns stay null for workloads that
create no server.

The record is the driver's ``Result`` (vegeta ``lib/results.go``): everything one server's
lifecycle produced, its failure included. The driver writes a snapshot of a record each time
the server changes phase, appended to ``<run>/requests.jsonl`` and flushed to the OS per record
(fsync'd per batch), so a run killed at any point, SIGKILL included, keeps every phase it
completed; :func:`read_records` keeps the last snapshot of each server and counts lines it cannot
read (a line torn by a crash), and a writer reopening a torn file starts on a fresh line. :func:`to_frame` gives the canonical ``requests`` table
(:data:`stacklens.schema.REQUESTS`).

``requests.jsonl`` format history: 1 (stacklens 0.1) one JSON object per line, the fields of
:class:`RequestRecord` plus ``"v": 1``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import IO, Any, Protocol

import polars as pl

from stacklens.schema import REQUESTS, conform

__all__ = [
    "JSONL_VERSION",
    "JsonRecord",
    "OUTCOMES",
    "RecordOutcome",
    "RecordWriter",
    "RecordsRead",
    "RequestRecord",
    "read_records",
    "read_records_checked",
    "to_frame",
]

#: Version of the ``requests.jsonl`` line format.
JSONL_VERSION = 1

class RecordOutcome(StrEnum):
    """The client-side outcome of one record (:attr:`RequestRecord.outcome`, ``None`` while in
    flight). Not :class:`stacklens.vocab.Outcome`, which classifies the cloud's traces from its
    logs: here the client says what it saw."""

    OK = "ok"  # done: boot_servers: reached ACTIVE (and, when the scenario deletes, seen gone)
    ERROR = "error"  # the resource went to ERROR
    API_ERROR = "api_error"  # answered with an HTTP error (4xx/5xx)
    TIMEOUT = "timeout"  # no answer in time: the HTTP call, or a phase's limit
    TRANSPORT_ERROR = "transport_error"  # no HTTP answer at all (connection refused, reset)
    DELETE_FAILED = "delete_failed"  # done, but the delete was refused or did not finish
    FAILED = "failed"  # any other failure (Rally exceptions stacklens does not classify)
    CANCELLED = "cancelled"  # the run was interrupted before this record finished


#: The values of :attr:`RequestRecord.outcome`, in :class:`RecordOutcome` order.
OUTCOMES = tuple(o.value for o in RecordOutcome)


class JsonRecord(Protocol):
    """What :class:`RecordWriter` writes: anything with a one-line JSON form."""

    def to_json(self) -> str:
        """One JSONL line (no newline)."""
        ...


def _dur(a: int | None, b: int | None) -> float | None:
    return (b - a) / 1e9 if a is not None and b is not None else None


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One server's lifecycle as the client saw it. Field meanings: :data:`~stacklens.schema.REQUESTS`.

    ``*_ns`` are integer nanoseconds since the Unix epoch on the client's clock (except
    ``launched_ns``, the server's ``launched_at``); the ``*_s`` durations are derived properties
    and are not stored in the JSONL snapshots.
    """

    run_id: str
    name: str
    source: str = "stacklens"
    scenario: str | None = None
    repetition: int = 0
    iteration: int = 0
    server_id: str | None = None
    host: str | None = None
    status: str | None = None
    outcome: str | None = None
    error: str | None = None
    request_id: str | None = None
    global_request_id: str | None = None
    create_http_status: int | None = None
    delete_request_id: str | None = None
    delete_global_request_id: str | None = None
    delete_http_status: int | None = None
    submit_ns: int | None = None
    accepted_ns: int | None = None
    active_ns: int | None = None
    launched_ns: int | None = None
    ping_ns: int | None = None
    ssh_ns: int | None = None
    delete_ns: int | None = None
    delete_accepted_ns: int | None = None
    gone_ns: int | None = None
    reach_note: str | None = None
    profiler_trace_id: str | None = None

    @property
    def api_s(self) -> float | None:
        """Seconds from submit to the create's HTTP response."""
        return _dur(self.submit_ns, self.accepted_ns)

    @property
    def create_s(self) -> float | None:
        """Seconds from submit to ACTIVE seen (polling delay included)."""
        return _dur(self.submit_ns, self.active_ns)

    @property
    def delete_s(self) -> float | None:
        """Seconds from delete issued to gone seen."""
        return _dur(self.delete_ns, self.gone_ns)

    @property
    def key(self) -> tuple[str, str, int]:
        """Identity of the server across snapshots: (run_id, name, repetition)."""
        return (self.run_id, self.name, self.repetition)

    def evolve(self, **changes: Any) -> RequestRecord:
        """A copy with ``changes`` applied (records are frozen)."""
        return dataclasses.replace(self, **changes)

    def to_json(self) -> str:
        """One JSONL line (no newline)."""
        d = {f.name: getattr(self, f.name) for f in _FIELDS}
        d["v"] = JSONL_VERSION
        return json.dumps(d, separators=(",", ":"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RequestRecord:
        """Build a record from a JSONL object, ignoring unknown keys (newer minor fields)."""
        return cls(**{k: v for k, v in d.items() if k in _NAMES})


_FIELDS = dataclasses.fields(RequestRecord)
_NAMES = frozenset(f.name for f in _FIELDS)


def _ends_torn(path: Path) -> bool:
    """True when ``path`` is not empty and its last byte is not a newline."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            if f.tell() == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except FileNotFoundError:
        return False


class RecordWriter:
    """Append record snapshots to a JSONL file, one ``write`` and flush per record.

    Each line reaches the OS as soon as it is written, so killing the process (even SIGKILL)
    loses nothing written; :meth:`sync` fsyncs (against power loss) every ``batch`` records and
    whenever the driver calls it (once per poll interval). A file whose last line was torn by an
    earlier crash gets a newline first, so the torn line stays one unreadable line.
    """

    def __init__(self, path: str | Path, batch: int = 256):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        torn = _ends_torn(self.path)
        self._f: IO[str] | None = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        if torn:
            self._f.write("\n")
            self._f.flush()
        self._batch = batch
        self._pending = 0
        self.written = 0

    def write(self, rec: JsonRecord) -> None:
        """Append one snapshot."""
        if self._f is None:
            raise ValueError("RecordWriter is closed")
        self._f.write(rec.to_json() + "\n")
        self._f.flush()  # one write(2) per record: a kill cannot lose it
        self._pending += 1
        self.written += 1
        if self._pending >= self._batch:
            self.sync()

    def sync(self) -> None:
        """Fsync what was written since the last sync."""
        if self._f is None or not self._pending:
            return
        self._f.flush()
        os.fsync(self._f.fileno())
        self._pending = 0

    def close(self) -> None:
        """Sync and close (idempotent)."""
        if self._f is not None:
            self.sync()
            self._f.close()
            self._f = None

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass(frozen=True)
class RecordsRead:
    """What :func:`read_records_checked` found: the last snapshot of every server (first-seen
    order), the number of lines that are not a record, and whether the last line was torn (no
    final newline and not a record: the writer was killed mid-line)."""

    records: list[RequestRecord]
    bad_lines: int
    torn_last_line: bool
    lines: int


def read_records_checked(path: str | Path) -> RecordsRead:
    """Read a ``requests.jsonl`` file; never raises for its content (bad lines are counted).

    Raises ``OSError`` when the file cannot be opened."""
    latest: dict[tuple[str, str, int], RequestRecord] = {}
    bad = lines = 0
    last_bad = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            lines += 1
            ended = line.endswith("\n")
            line = line.strip()
            if not line:
                continue
            try:
                d = json.loads(line)
                if not isinstance(d, dict):
                    raise TypeError("not an object")
                rec = RequestRecord.from_dict(d)
            except (ValueError, TypeError):
                bad += 1
                last_bad = not ended
                continue
            last_bad = False
            latest[rec.key] = rec
    return RecordsRead(list(latest.values()), bad, last_bad, lines)


def read_records(path: str | Path) -> tuple[list[RequestRecord], int]:
    """The last snapshot of every server in a ``requests.jsonl`` file, in first-seen order, and
    the number of lines that could not be read (a line cut by a kill, say)."""
    r = read_records_checked(path)
    return r.records, r.bad_lines


def to_frame(records: Iterable[RequestRecord]) -> pl.DataFrame:
    """The canonical ``requests`` table of ``records`` (durations derived from timestamps)."""
    rows = []
    for r in records:
        d = {f.name: getattr(r, f.name) for f in _FIELDS}
        d.update(api_s=r.api_s, create_s=r.create_s, delete_s=r.delete_s)
        rows.append(d)
    if not rows:
        return pl.DataFrame(schema=REQUESTS)
    df = pl.DataFrame(rows, schema_overrides={k: REQUESTS[k] for k in rows[0] if k in REQUESTS},
                      infer_schema_length=None)
    return conform(df, "requests")
