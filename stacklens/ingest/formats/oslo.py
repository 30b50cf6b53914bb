"""``oslo``: plain oslo.log lines, as every service writes its own file.

``2016-06-28 13:56:12.360 29140 DEBUG nova.api.openstack.wsgi [req-... u p] msg``; the pid may be
missing (some cinder lines); the context is ``[req-X user tenant]`` (Havana-Liberty),
``[req-X user project domain user_domain project_domain]`` (Mitaka on), ``[None req-X ...]`` /
``[req-G req-X ...]`` (global request id, Pike on) or ``[-]``. Old releases log traceback lines
with level ``TRACE`` and the same prefix; those are continuation lines.
"""

from __future__ import annotations

from stacklens.ingest.formats.base import DATE, TAIL, LineFormat

FORMAT = LineFormat(
    name="oslo",
    header="^" + DATE + " " + TAIL,
    trace=r"^\S+ \S+ (?:\d+ )?TRACE ",
    tb_line=r"^(?P<k>\S+ \S+ (?:\d+ )?)(?P<lvl>[A-Z]+) (?P<lg>\S+)(?P<rest>.*)$",
)
