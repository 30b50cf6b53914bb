"""What a log format declares (:class:`LineFormat`, :class:`Prefix`) and the pieces the oslo.log
formats share.

A format module (one per format, listed in :data:`stacklens.ingest.formats.REGISTRY`) builds one
:class:`LineFormat`. Both tokenizers read it: the Polars path in
:mod:`stacklens.ingest.tokenize` / :mod:`stacklens.ingest.fields`, and the native one
(``native/``), which receives every regular expression and constant as data at call time
(:func:`stacklens.ingest.tokenize.native_patterns`). Regexes are written for Rust's ``regex``
crate (Polars and the native tokenizer): no look-around, no back-references.

Sources: oslo.log ``logging_context_format_string`` / ``logging_default_format_string`` (Havana
to 2025.1) for the record header and context (field-notes section 3).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

__all__ = [
    "DATE",
    "LineFormat",
    "OSLO_DATE",
    "PLACEHOLDER",
    "Prefix",
    "TAIL",
]

#: the oslo timestamp as named groups ``date`` and ``time`` (``YYYY-MM-DD HH:MM:SS[.,]fff``)
DATE = r"(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)"
#: what follows the timestamp: ``[<pid> ]<LEVEL> <logger>[ [<ctx>]]`` then a space or the end
TAIL = (
    r"(?:(?P<pid>\d+) )?(?P<level>[A-Z]{4,8}) (?P<logger>[A-Za-z_][\w.\-]*)"
    r"(?: \[(?P<ctx>[^\]]*)\])?(?: |$)"
)
#: the oslo timestamp without groups
OSLO_DATE = r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:[.,]\d+)?"
#: put in front of a line's oslo part that has no timestamp of its own, so one field splitter
#: serves every format (the record's time then comes from elsewhere, or is null)
PLACEHOLDER = "0000-00-00 00:00:00 "

TimestampKind = Literal["oslo", "syslog", "none"]


@dataclass(frozen=True)
class Prefix:
    """A wrapper prefix in front of the oslo part (``core``) of a header line.

    ``extract``: ``(column, regex)`` pairs; the regex's first group, on the whole line, gives the
    column (``prog``, ``alias``, ``host``, ``spid``, ``sysdate``). ``strip``: a regex whose first
    match is replaced by ``strip_rep`` (``${1}`` refers to its groups) to give ``core``.
    ``placeholder``: put :data:`PLACEHOLDER` in front of ``core`` unless it starts with an oslo
    timestamp (journald lines without their own, or a format without timestamps)."""

    extract: tuple[tuple[str, str], ...] = ()
    strip: str | None = None
    strip_rep: str = ""
    placeholder: bool = False


def _own_name(name: str) -> str:
    return name


@dataclass(frozen=True)
class LineFormat:
    """One record-header format.

    ``header`` matches the start of a header line; its named groups are a subset of ``date``,
    ``time`` (oslo timestamp), ``sysdate`` (syslog ``Mon DD HH:MM:SS[.us]``, no year), ``host``,
    ``prog`` (syslog program or collector's source file), ``alias`` (os-log-merger), ``pid``,
    ``level``, ``logger``, ``ctx`` (request context without brackets). The message is what follows
    the match.

    ``trace``: old releases' ``TRACE`` lines, which look like headers but continue the record
    above. ``tb_line``: cuts a header candidate into the record key (named groups ``k``, ``lvl``,
    ``lg``, ``rest``) for the modern-traceback rule (:mod:`stacklens.ingest.assembly`).
    ``prefix``: the wrapper prefix (:class:`Prefix`). ``timestamp``: which parser gives
    ``ts_ns`` (``oslo``: the oslo timestamp; ``syslog``: the oslo one, or the syslog date plus the
    file's year when the line has none; ``none``: null). ``service_from``: the prefix column that
    names the service per line (None: the file name does), mapped by ``service_name``.
    ``per_line_host``: the line names its host (column ``host``). ``other``: on a line that is
    not a header (nor a header the traceback rule folded), the mark of another program's entry
    (os-log-merger's, a syslog prefix): it and its extra lines are quarantined as
    ``merged_other``, never a record's continuation. ``native``: the native tokenizer handles
    this format (else the Polars path runs).
    """

    name: str
    header: str
    trace: str
    tb_line: str
    prefix: Prefix = field(default_factory=Prefix)
    timestamp: TimestampKind = "oslo"
    service_from: str | None = None
    service_name: Callable[[str], str] = _own_name
    per_line_host: bool = False
    other: str | None = None
    native: bool = True

    @property
    def per_line_service(self) -> bool:
        """The service comes from the line (``prog``/``alias``), not the file name."""
        return self.service_from is not None

    @property
    def groups(self) -> tuple[str, ...]:
        """The named groups of :attr:`header`."""
        return tuple(re.compile(self.header).groupindex)
