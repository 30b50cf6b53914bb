"""Database accounting during a run (issue 8): MariaDB/MySQL statement digests, InnoDB lock
and deadlock counters, connection peaks, as the canonical tables ``db_digests`` and
``db_samples`` (:mod:`stacklens.schema`). :class:`DbRecorder` is the
:class:`~stacklens.recorder.Recorder`; :mod:`stacklens.dbstat.snapshot` says what is read; :func:`read_slow_log` gives the same
``db_digests`` from a slow query log file."""

from stacklens.dbstat.recorder import DbRecorder, DbTarget
from stacklens.dbstat.slowlog import read_slow_log
from stacklens.dbstat.snapshot import KINDS, statement_kind

__all__ = ["DbRecorder", "DbTarget", "KINDS", "read_slow_log", "statement_kind"]
