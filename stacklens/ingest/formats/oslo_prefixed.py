"""``oslo_prefixed``: oslo lines after a collector's source-file prefix, as in loghub's OpenStack
sample: ``nova-api.log.1.2017-05-16_13:53:08 2017-05-16 00:00:00.008 25746 INFO ...``. The
prefix (``prog``) names the service of each line.
"""

from __future__ import annotations

from stacklens.ingest.formats.base import DATE, TAIL, LineFormat, Prefix
from stacklens.ingest.names import service_from_name

FORMAT = LineFormat(
    name="oslo_prefixed",
    header=r"^(?P<prog>[A-Za-z][\w.\-]*\.log[\w.:\-]*) " + DATE + " " + TAIL,
    trace=r" \d+ TRACE [\w.]+ ",
    tb_line=r"^(?P<k>\S+ \S+ \S+ (?:\d+ )?)(?P<lvl>[A-Z]+) (?P<lg>\S+)(?P<rest>.*)$",
    prefix=Prefix(extract=(("prog", r"^(\S+) "),), strip=r"^\S+ "),
    service_from="prog",
    service_name=service_from_name,
)
