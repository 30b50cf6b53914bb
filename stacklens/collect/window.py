"""The time window of a collection, and the line filter that keeps only its lines.

A :class:`Window` is ``[since, until)`` in whole seconds (``since`` floored, ``until`` ceiled),
on the logs' own clock: oslo.log timestamps carry no zone, and stacklens ingest reads them as
UTC (``--tz-offset`` otherwise), so an ISO time with a zone is converted to UTC and one without
is taken as written. journald is queried with ``TZ=UTC`` for the same reason.

The filter works on oslo.log record headers (``YYYY-MM-DD HH:MM:SS`` at the start of a line,
field-notes section 3) and is a small state machine, the same in three implementations that
tests hold identical on real logs:

* :data:`AWK_FILTER` runs on the remote host (POSIX awk: mawk, gawk, busybox; ``LC_ALL=C`` so
  comparisons are bytewise), the first choice;
* :func:`window_filter`, whose own source text is sent as ``python3 -c`` (:func:`python_command`)
  where a host has python3 but no awk, and which tests call in-process.

Rules: a header line is kept when ``since <= its first 19 characters < until``; a line without a
header (traceback, continuation, wrapped message) goes with the record before it; lines before
the first header in the file (devstack screen logs start with shell traces) are kept, at most
:data:`MAX_LEADING` of them, when the first record is kept. Every line kept ends with ``\\n``.
"""

from __future__ import annotations

import inspect
import re
import shlex
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from stacklens.errors import UserError

__all__ = [
    "AWK_FILTER",
    "HEADER_ERE",
    "MAX_LEADING",
    "Window",
    "awk_command",
    "parse_time",
    "python_command",
    "window_filter",
]

MAX_LEADING = 2000
# ERE of an oslo.log header's timestamp at the start of a line (grep -E; no {n} for old awks)
HEADER_ERE = "^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]"
_FMT = "%Y-%m-%d %H:%M:%S"

AWK_FILTER = r"""
{
  t = substr($0, 1, 19)
  if (t ~ /^[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9] [0-9][0-9]:[0-9][0-9]:[0-9][0-9]$/) {
    keep = (t >= S && t < U)
    if (!seen) {
      seen = 1
      if (keep) for (i = 1; i <= nb; i++) print buf[i]
      nb = 0
    }
  } else if (!seen) {
    if (nb < M) buf[++nb] = $0
    next
  }
  if (keep) print
}
"""


@dataclass(frozen=True)
class Window:
    """``[since, until)``, naive datetimes on the logs' clock (UTC by stacklens's convention),
    whole seconds. Raises :class:`~stacklens.errors.UserError` when ``until <= since``."""

    since: datetime
    until: datetime

    def __post_init__(self) -> None:
        if self.until <= self.since:
            raise UserError(f"empty window: --until {self.until} is not after --since {self.since}")

    @classmethod
    def parse(cls, since: str, until: str) -> Window:
        """From two ISO 8601 strings (``2016-01-29T15:38:00``, ``... 15:38:00+01:00``,
        ``...Z``); ``since`` is floored and ``until`` ceiled to whole seconds."""
        s, u = parse_time(since, "--since"), parse_time(until, "--until")
        s = s.replace(microsecond=0)
        if u.microsecond:
            u = u.replace(microsecond=0) + timedelta(seconds=1)
        return cls(s, u)

    @property
    def since_text(self) -> str:
        """``since`` as an oslo.log timestamp prefix (``YYYY-MM-DD HH:MM:SS``)."""
        return self.since.strftime(_FMT)

    @property
    def until_text(self) -> str:
        """``until`` as an oslo.log timestamp prefix."""
        return self.until.strftime(_FMT)

    @property
    def since_epoch(self) -> float:
        """``since`` as a POSIX time (the window is UTC by convention)."""
        return self.since.replace(tzinfo=UTC).timestamp()

    @property
    def until_epoch(self) -> float:
        """``until`` as a POSIX time (the window is UTC by convention)."""
        return self.until.replace(tzinfo=UTC).timestamp()

    def as_dict(self) -> dict[str, str]:
        """The window as ISO strings, for manifests."""
        return {"since": self.since.isoformat(), "until": self.until.isoformat()}

    def overlaps(self, first: str | None, last: str | None) -> bool:
        """Whether a file whose first/last header timestamps are ``first``/``last`` (19-char
        prefixes, None when unknown) can hold lines of the window."""
        if first is not None and first >= self.until_text:
            return False
        return not (last is not None and last < self.since_text)

    def covers(self, first: str | None, last: str | None) -> bool:
        """Whether every header between ``first`` and ``last`` lies inside the window."""
        return (first is not None and last is not None
                and first >= self.since_text and last < self.until_text)


def parse_time(text: str, what: str = "time") -> datetime:
    """An ISO 8601 string as a naive UTC datetime; raises UserError naming ``what``."""
    t = text.strip()
    if t.endswith(("Z", "z")):
        t = t[:-1] + "+00:00"
    try:
        d = datetime.fromisoformat(t)
    except ValueError:
        raise UserError(f"{what} {text!r} is not an ISO 8601 time (e.g. 2016-01-29T15:38:00)") \
            from None
    if d.tzinfo is not None:
        d = d.astimezone(UTC).replace(tzinfo=None)
    return d


def window_filter(lines: Iterable[bytes], since: bytes, until: bytes,
                  max_leading: int = 2000) -> Iterator[bytes]:
    """Yield the lines of ``lines`` (bytes, with or without ``\\n``) that belong to records whose
    header timestamp ``t`` (first 19 bytes) has ``since <= t < until``. Self-contained: its
    source is shipped to hosts as ``python3 -c`` (:func:`python_command`)."""
    import re as _re

    header = _re.compile(rb"\d\d\d\d-\d\d-\d\d \d\d:\d\d:\d\d$")
    seen = keep = False
    buf: list[bytes] = []
    for line in lines:
        if not line.endswith(b"\n"):
            line += b"\n"
        t = line[:19]
        if header.match(t):
            keep = since <= t < until
            if not seen:
                seen = True
                if keep:
                    yield from buf
                buf = []
        elif not seen:
            if len(buf) < max_leading:
                buf.append(line)
            continue
        if keep:
            yield line


def awk_command(w: Window, awk: str = "awk") -> str:
    """A shell command filtering stdin to stdout with :data:`AWK_FILTER` for window ``w``."""
    return (f"LC_ALL=C {shlex.quote(awk)} -v S={shlex.quote(w.since_text)} "
            f"-v U={shlex.quote(w.until_text)} -v M={MAX_LEADING} {shlex.quote(AWK_FILTER)}")


def python_command(w: Window, python: str = "python3") -> str:
    """A shell command filtering stdin to stdout with :func:`window_filter` run by ``python``."""
    src = inspect.getsource(window_filter)
    src = re.sub(r"^from __future__.*$", "", src, flags=re.M)
    prog = (
        "import sys\n" + src.replace("Iterable[bytes]", "object").replace("Iterator[bytes]", "object")
        + f"\nsys.stdout.buffer.writelines(window_filter(sys.stdin.buffer, "
        f"{w.since_text.encode()!r}, {w.until_text.encode()!r}, {MAX_LEADING}))\n"
    )
    return f"{shlex.quote(python)} -c {shlex.quote(prog)}"
