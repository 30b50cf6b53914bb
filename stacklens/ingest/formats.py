"""Line formats of OpenStack service logs, and per-file format detection.

A *format* says how to find the oslo.log record header in a physical line. Every format is one
anchored regular expression with named groups, written for Rust's ``regex`` crate (Polars), so no
look-around or back-references. Formats covered (field-notes section 3; oslo.log
``logging_context_format_string`` / ``logging_default_format_string`` defaults since Havana):

``oslo``
    ``2016-06-28 13:56:12.360 29140 DEBUG nova.api.openstack.wsgi [req-... u p] msg``; the pid may
    be missing (some cinder lines); the context is ``[req-X user tenant]`` (Havana-Liberty),
    ``[req-X user project domain user_domain project_domain]`` (Mitaka on), ``[None req-X ...]`` /
    ``[req-G req-X ...]`` (global request id, Pike on) or ``[-]``. Old releases log traceback lines
    with level ``TRACE`` and the same prefix; those are continuation lines.
``oslo_prefixed``
    the same after a collector's source-file prefix, as in loghub's OpenStack sample:
    ``nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 25746 INFO ...``.
``oslo_merged``
    os-log-merger output: ``2016-01-29 15:38:19.690000 [NEUTRONSRV] 26926 INFO ...``; the alias
    may be a path (its default, ``[node1/var/log/nova/nova-api.log]``), decoded to host and service
    by :mod:`stacklens.ingest.layout`.
``syslog``
    syslog/journald ``short``/``short-precise`` prefix ``Jan 25 09:29:50[.123456] host prog[pid]: ``
    followed by an oslo line with or without its own timestamp (modern devstack under systemd, with
    the ``{{(pid=1234) function /path/file.py:123}}`` suffix).
``oslo_nots``
    oslo lines whose timestamp was not kept (a ``logging_context_format_string`` without
    ``%(asctime)s``, or a collector that stored only the message):
    ``[<pid> ]<LEVEL> <logger> [<ctx>] msg``. The level must be one of Python logging's / oslo.log's
    level names (``oslo_log/log.py``: DEBUG, INFO, WARNING, ERROR, CRITICAL, plus AUDIT and TRACE
    of older releases), since without a timestamp nothing else anchors the line. Records get no
    time (``ts_ns`` null) and keep their file order (``line_no``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["FORMATS", "LineFormat", "detect_format"]

_DATE = r"(?P<date>\d{4}-\d{2}-\d{2}) (?P<time>\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)"
_TAIL = (
    r"(?:(?P<pid>\d+) )?(?P<level>[A-Z]{4,8}) (?P<logger>[A-Za-z_][\w.\-]*)"
    r"(?: \[(?P<ctx>[^\]]*)\])?(?: |$)"
)


@dataclass(frozen=True)
class LineFormat:
    """One record-header format.

    ``header`` matches the start of a header line; its named groups are a subset of ``date``,
    ``time`` (oslo timestamp), ``sysdate`` (syslog ``Mon DD HH:MM:SS[.us]``, no year), ``host``,
    ``prog`` (syslog program or collector's source file), ``alias`` (os-log-merger), ``pid``,
    ``level``, ``logger``, ``ctx`` (request context without brackets). The message is what follows
    the match.
    """

    name: str
    header: str
    per_line_service: bool = False  # service comes from ``prog``/``alias``, not the file name
    per_line_host: bool = False  # host comes from the line (syslog)

    @property
    def groups(self) -> tuple[str, ...]:
        return tuple(re.compile(self.header).groupindex)


FORMATS: tuple[LineFormat, ...] = (
    LineFormat("oslo", "^" + _DATE + " " + _TAIL),
    LineFormat(
        "oslo_prefixed",
        r"^(?P<prog>[A-Za-z][\w.\-]*\.log[\w.:\-]*) " + _DATE + " " + _TAIL,
        per_line_service=True,
    ),
    LineFormat(
        "oslo_merged",
        "^" + _DATE + r" \[(?P<alias>[\w./:@\-]+)\] " + _TAIL,
        per_line_service=True,
    ),
    LineFormat(
        "syslog",
        r"^(?P<sysdate>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)?) (?P<host>[\w.\-]+) "
        r"(?P<prog>[\w.@\-]+)(?:\[(?P<spid>\d+)\])?: (?:" + _DATE + " )?" + _TAIL,
        per_line_service=True,
        per_line_host=True,
    ),
)

_NOTS_LEVEL = r"(?P<level>DEBUG|INFO|WARNING|ERROR|CRITICAL|AUDIT|TRACE)"
FORMATS = FORMATS + (
    LineFormat(
        "oslo_nots",
        r"^(?:(?P<pid>\d+) )?" + _NOTS_LEVEL + r" (?P<logger>[A-Za-z_][\w.\-]*)"
        r"(?: \[(?P<ctx>[^\]]*)\])?(?: |$)",
    ),
)

_COMPILED = [(f, re.compile(f.header)) for f in FORMATS]


def detect_format(sample_lines: list[str], min_share: float = 0.05) -> LineFormat | None:
    """Pick the format that matches most of ``sample_lines`` (the first lines of one file).

    Returns ``None`` when no format matches at least ``min_share`` of the non-empty lines (and at
    least one line): the file is not an oslo.log-family log. Ties go to the earlier format in
    :data:`FORMATS`. Detection is per file because one deployment mixes eras and wrappers.
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
