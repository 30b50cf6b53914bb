"""``syslog``: syslog/journald ``short``/``short-precise`` prefix ``Jan 25 09:29:50[.123456] host
prog[pid]: `` followed by an oslo line with or without its own timestamp (modern devstack under
systemd, with the ``{{(pid=1234) function /path/file.py:123}}`` suffix). The line names its host
and program (the service); a line without an oslo timestamp takes the syslog date and the file's
year. Source: systemd ``journalctl -o short-precise``; rsyslog's traditional file format.
"""

from __future__ import annotations

from stacklens.ingest.formats.base import DATE, TAIL, LineFormat, Prefix
from stacklens.ingest.names import service_from_name

_MON_DAY = r"^[A-Z][a-z]{2} +\d+ "

FORMAT = LineFormat(
    name="syslog",
    header=r"^(?P<sysdate>[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)?) (?P<host>[\w.\-]+) "
    r"(?P<prog>[\w.@\-]+)(?:\[(?P<spid>\d+)\])?: (?:" + DATE + " )?" + TAIL,
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
)
