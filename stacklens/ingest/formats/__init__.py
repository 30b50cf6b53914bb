"""Line formats of OpenStack service logs: one module per format, one explicit registry, and
per-file format detection.

A *format* says how to find the oslo.log record header in a physical line, what wraps it and
where a record's time, host and service come from (:class:`~stacklens.ingest.formats.base.
LineFormat`). Each format is one module of this package; :data:`REGISTRY` lists them, in the
order that breaks detection ties. Both tokenizers read the registry: the Polars path
(:mod:`stacklens.ingest.tokenize`) and the native one, which receives the format's regexes and
constants as data (:func:`stacklens.ingest.tokenize.native_patterns`).

Formats (field-notes section 3; oslo.log defaults since Havana): :mod:`.oslo`,
:mod:`.oslo_prefixed` (loghub's collector prefix), :mod:`.oslo_merged` (os-log-merger),
:mod:`.syslog` (syslog/journald wrapper), :mod:`.oslo_nots` (no timestamps).

Adding a format: a module here that builds ``FORMAT`` (a :class:`LineFormat`), one line in
:data:`REGISTRY`, and its test. The native tokenizer needs no change as long as the format's
timestamp is ``oslo``, ``syslog`` (or the format says ``native=False``).
"""

from __future__ import annotations

import re

from stacklens.ingest.formats import oslo, oslo_merged, oslo_nots, oslo_prefixed, syslog
from stacklens.ingest.formats.base import LineFormat, Prefix

__all__ = [
    "FORMATS",
    "LineFormat",
    "Prefix",
    "REGISTRY",
    "by_name",
    "detect_format",
]

#: Every format, in detection-tie order. One line per format module.
REGISTRY: list[LineFormat] = [
    oslo.FORMAT,
    oslo_prefixed.FORMAT,
    oslo_merged.FORMAT,
    syslog.FORMAT,
    oslo_nots.FORMAT,
]


def _check(formats: list[LineFormat]) -> tuple[LineFormat, ...]:
    """The registry as a tuple; raises ValueError on a duplicate name or a header regex that does
    not compile."""
    seen: set[str] = set()
    for f in formats:
        if f.name in seen:
            raise ValueError(f"log format {f.name!r} is registered twice")
        seen.add(f.name)
        re.compile(f.header)
    return tuple(formats)


FORMATS: tuple[LineFormat, ...] = _check(REGISTRY)
_BY_NAME = {f.name: f for f in FORMATS}
_COMPILED = [(f, re.compile(f.header)) for f in FORMATS]


def by_name(name: str) -> LineFormat:
    """The registered format called ``name``; KeyError if there is none."""
    return _BY_NAME[name]


def detect_format(sample_lines: list[str], min_share: float = 0.05) -> LineFormat | None:
    """Pick the format that matches most of ``sample_lines`` (the first lines of one file).

    Returns ``None`` when no format matches at least ``min_share`` of the non-empty lines (and at
    least one line): the file is not an oslo.log-family log. Ties go to the earlier format in
    :data:`REGISTRY`. Detection is per file because one deployment mixes eras and wrappers.
    """
    lines = [ln for ln in sample_lines if ln.strip()]
    if not lines:
        return None
    best, best_n = None, 0
    for fmt, rx in _COMPILED:
        n = sum(1 for ln in lines if rx.match(ln))
        if n > best_n:
            best, best_n = fmt, n
    if best is None or best_n < max(1, min_share * len(lines)):
        return None
    return best
