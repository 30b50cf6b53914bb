"""``syslog``: syslog/journald ``short``/``short-precise`` prefix ``Jan 25 09:29:50[.123456] host
prog[pid]: `` followed by an oslo line with or without its own timestamp (modern devstack under
systemd, with the ``{{(pid=1234) function /path/file.py:123}}`` suffix). The line names its host
and program (the service); a line without an oslo timestamp takes the syslog date and the file's
year. Source: systemd ``journalctl -o short-precise``; rsyslog's traditional file format.

Every prefixed line is an entry of its own (journald and rsyslog print an entry's extra lines
unprefixed, indented): a prefixed line whose body is not an oslo header is not part of the record
above it. It is another program's or the service's own non-oslo output: the kernel's or sudo's
lines in a shared syslog file, or uwsgi's request log, which uwsgi writes for every request to
the unit's stderr (``[pid: N|app: N|req: N/N] ADDR (USER) {N vars in N bytes} [DATE] METHOD URI
=> generated N bytes in N msecs (HTTP/1.1 STATUS) ...``, uwsgi ``core/logging.c``
``uwsgi_logit_simple``; devstack runs the APIs under uwsgi without ``disable-logging``). Such a
line and its unprefixed extra lines are kept apart, in quarantine as ``merged_other``
(:data:`OTHER`), instead of being appended to the previous record's continuation.
"""

from __future__ import annotations

import re

from stacklens.ingest.formats.base import DATE, TAIL, LineFormat, Prefix
from stacklens.ingest.names import service_from_name

_MON_DAY = r"^[A-Z][a-z]{2} +\d+ "
#: the syslog/journald prefix ``Mon DD HH:MM:SS[.us] host prog[pid]: ``, its fields named
_PREFIX = (r"^(?P<sysdate>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)?) (?P<host>[\w.\-]+) "
           r"(?P<prog>[\w.@\-]+)(?:\[(?P<spid>\d+)\])?: ")
#: the same prefix on a line that is not a header: another program's entry (module doc)
OTHER = re.sub(r"\(\?P<\w+>", "(?:", _PREFIX)

FORMAT = LineFormat(
    name="syslog",
    header=_PREFIX + "(?:" + DATE + " )?" + TAIL,
    trace=r" \d+ TRACE [\w.]+ ",
    tb_line=r"^[A-Z][a-z]{2} +\d+ \S+ (?P<k>\S+ [^\s:\[]+(?:\[\d+\])?: "
    r"(?:\d{4}-\d{2}-\d{2} \S+ )?(?:\d+ )?)(?P<lvl>[A-Z]+) (?P<lg>\S+)(?P<rest>.*)$",
    prefix=Prefix(
        extract=(
            ("sysdate", r"^([A-Z][a-z]{2} +\d+ \S+) "),
            ("host", _MON_DAY + r"\S+ (\S+) "),
            ("prog", _MON_DAY + r"\S+ \S+ ([^\s:\[]+)"),
            ("spid", _MON_DAY + r"\S+ \S+ [^\s:\[]+\[(\d+)\]"),
        ),
        strip=_MON_DAY + r"\S+ \S+ [^\s:\[]+(?:\[\d+\])?: ",  # prog may hold '@'
        placeholder=True,
    ),
    timestamp="syslog",
    service_from="prog",
    service_name=service_from_name,
    per_line_host=True,
    other=OTHER,
)
