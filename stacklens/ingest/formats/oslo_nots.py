"""``oslo_nots``: oslo lines whose timestamp was not kept (a ``logging_context_format_string``
without ``%(asctime)s``, or a collector that stored only the message): ``[<pid> ]<LEVEL> <logger>
[<ctx>] msg``. The level must be one of :data:`stacklens.vocab.LEVELS` (Python logging's and
oslo.log's level names, ``oslo_log/log.py``), since without a timestamp nothing else anchors the
line. Records get no time (``ts_ns`` null) and keep their file order (``line_no``); the native
tokenizer has no untimed records, so the Polars path reads these (rare) files.
"""

from __future__ import annotations

from stacklens.ingest.formats.base import LineFormat, Prefix
from stacklens.vocab import LEVELS

FORMAT = LineFormat(
    name="oslo_nots",
    header=r"^(?:(?P<pid>\d+) )?(?P<level>" + "|".join(LEVELS) + r") (?P<logger>[A-Za-z_][\w.\-]*)"
    r"(?: \[(?P<ctx>[^\]]*)\])?(?: |$)",
    trace=r"^(?:\d+ )?TRACE ",
    tb_line=r"^(?P<k>(?:\d+ )?)(?P<lvl>[A-Z]+) (?P<lg>\S+)(?P<rest>.*)$",
    prefix=Prefix(placeholder=True),  # a placeholder date so one parser serves; ts_ns stays null
    timestamp="none",
    native=False,
)
