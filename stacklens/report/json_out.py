"""``report.json`` text of a report dict (:mod:`stacklens.analyze.build`). Pure: the caller
writes it. The dict is self-describing from format 2 on (``sections``: declared sections and
their columns with units), so the JSON needs no walk of its own."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["render_json"]


def render_json(report: dict[str, Any]) -> str:
    """The report as indented JSON (2 spaces; values JSON cannot hold written with ``str``),
    without a trailing newline: the text ``stacklens report`` writes to ``report.json``."""
    return json.dumps(report, indent=2, default=str)
