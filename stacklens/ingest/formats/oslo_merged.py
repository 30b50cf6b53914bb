"""``oslo_merged``: os-log-merger output, ``2016-01-29 15:38:19.690000 [NEUTRONSRV] 26926 INFO
...``; the alias may be a path (its default, ``[node1/var/log/nova/nova-api.log]``), decoded to
host and service by :mod:`stacklens.ingest.layout`; known aliases name the service
(:data:`~stacklens.ingest.names.MERGER_ALIASES`).

os-log-merger (oslogmerger/oslogmerger.py, ``LogEntry.__str__``: ``'%s [%s] %s' % (dt_str, alias,
data)``) writes every entry of every merged file as ``<its own timestamp text> [ALIAS] <data>``:
oslo files' ``2016-02-01 10:22:59.239``, syslog ``Oct 15 14:11:19[.525234]``, libvirt
``2017-09-18 18:08:49.163+0000``, qemu ``2017-09-18T18:08:49.216429Z``, raw syslog
``2017-04-03T21:48:21.781459-03:30``, kernel-style ``[275514.814982]``; older releases wrote
``strftime('%Y-%m-%d %H:%M:%S.%f')``. An entry that is neither an oslo header nor an old TRACE
line is another program's (ping, tcpdump, syslog neighbours): it and its padded extra lines (40
spaces, ``EXTRALINES_PADDING``) are kept apart, in quarantine as ``merged_other`` (:data:`OTHER`).
"""

from __future__ import annotations

from stacklens.ingest.formats.base import DATE, TAIL, LineFormat, Prefix
from stacklens.ingest.names import MERGER_ALIASES

OTHER = (
    r"^(?:\d{4}-\d{2}-\d{2}[ T]\S+|[A-Z][a-z]{2} +\d+ \d{2}:\d{2}:\d{2}(?:\.\d+)?"
    r"|\[ *\d+(?:\.\d+)?\]) \[[^\]]+\] "
)


def _service(alias: str) -> str:
    return MERGER_ALIASES.get(alias.upper(), alias.lower())


FORMAT = LineFormat(
    name="oslo_merged",
    header="^" + DATE + r" \[(?P<alias>[\w./:@\-]+)\] " + TAIL,
    trace=r" \d+ TRACE [\w.]+ ",
    tb_line=r"^(?P<k>\S+ \S+ \[[^\]]+\] (?:\d+ )?)(?P<lvl>[A-Z]+) (?P<lg>\S+)(?P<rest>.*)$",
    prefix=Prefix(
        extract=(("alias", r"^\S+ \S+ \[([^\]]+)\] "),),
        strip=r"^(\S+ \S+) \[[^\]]+\] ",
        strip_rep="${1} ",
    ),
    service_from="alias",
    service_name=_service,
    other=OTHER,
)
