"""What is captured *during* a run beside the logs (broker messages, database statement
digests, resource samples), as one shape: a :class:`Recorder` is started when the load starts
and stopped when it ends, and returns canonical tables (:mod:`stacklens.schema`) that the run
folder stores like the tables made from logs. Report and compare then read them without asking
where they came from.

A recorder never raises out of :meth:`Recorder.stop` for a problem with what it observed (a
broker that went away, a sample that failed): it counts the problem in its ``notes`` and returns
what it has. :func:`recording` starts a list of recorders and always stops every one of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Protocol, runtime_checkable

import polars as pl

__all__ = ["Recorder", "Recording", "recording"]


@runtime_checkable
class Recorder(Protocol):
    """One source captured during a run.

    ``name``: short label (``broker``, ``db``, ``resources``) used in progress lines and the
    manifest. :meth:`start` returns at once (work happens on the recorder's own bounded thread
    or task); :meth:`stop` ends it, waits at most ``timeout_s`` seconds, and returns
    ``{table name: frame}`` for :meth:`stacklens.store.RunStore.write` plus a list of
    plain-words notes (problems counted, what was not captured and why)."""

    name: str

    def start(self) -> None: ...

    def stop(self, timeout_s: float = 30.0) -> tuple[dict[str, pl.DataFrame], list[str]]: ...


class Recording:
    """What :func:`recording` yields; after the ``with`` block, ``tables`` holds every
    recorder's tables (later recorders win on a name clash, which is a declaration error) and
    ``notes`` maps recorder name -> its notes."""

    def __init__(self) -> None:
        self.tables: dict[str, pl.DataFrame] = {}
        self.notes: dict[str, list[str]] = {}


@contextmanager
def recording(recorders: Sequence[Recorder], timeout_s: float = 30.0) -> Iterator[Recording]:
    """Start every recorder, run the block, then stop every started recorder (also when the
    block raises). A recorder whose ``start`` raises is stopped no further and its error becomes
    its note; the others go on."""
    out = Recording()
    started: list[Recorder] = []
    for r in recorders:
        try:
            r.start()
            started.append(r)
        except Exception as e:  # noqa: BLE001 - a recorder must not stop the run
            out.notes[r.name] = [f"not started: {e}"]
    try:
        yield out
    finally:
        for r in started:
            try:
                tables, notes = r.stop(timeout_s)
            except Exception as e:  # noqa: BLE001 - keep the others' tables
                tables, notes = {}, [f"stop failed: {e}"]
            out.tables.update(tables)
            out.notes[r.name] = notes
