"""A Rally task (JSON report format 1.2, or the older ``rally task results`` list) as a run.

The reading is :func:`stacklens.drive.rally.records_from_rally` (formats documented there): one
``requests`` row per server-booting iteration. This module adds what makes the rows a *run*
that ``stacklens compare`` and reports can use: the manifest's ``run`` section
(:func:`run_section`) with the task's identity, scenario, time window and outcome counts.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl

from stacklens.drive.rally import records_from_rally
from stacklens.drive.records import to_frame
from stacklens.errors import UserError

__all__ = ["import_rally", "run_section"]


def run_section(doc: Any, requests: pl.DataFrame, path: Path) -> dict[str, Any]:
    """The manifest ``run`` section of an imported Rally task: ``source`` ("rally"),
    ``run_id`` (task uuid), ``scenario`` (workload names, comma-separated), ``inputs``,
    ``rally`` (``format_version``, ``rally_version``, ``env``), ``started_ns`` / ``ended_ns``
    (client clock, ns since epoch), ``state`` ("imported") and ``stats`` (outcome counts)."""
    info = doc.get("info", {}) if isinstance(doc, dict) else {}
    tasks = doc.get("tasks", []) if isinstance(doc, dict) else []
    ends = pl.concat([requests["gone_ns"], requests["active_ns"], requests["submit_ns"]])
    return {
        "source": "rally",
        "run_id": ",".join(sorted(requests["run_id"].unique().to_list())),
        "scenario": ",".join(sorted(requests["scenario"].unique().to_list())),
        "inputs": [str(path)],
        "state": "imported",
        "rally": {"format_version": info.get("format_version", "results list (before 1.2)"),
                  "rally_version": info.get("rally_version"),
                  "env": sorted({t.get("env_name") for t in tasks if t.get("env_name")})},
        "started_ns": requests["submit_ns"].min(),
        "ended_ns": ends.max(),
        "stats": dict(Counter(requests["outcome"].fill_null("pending").to_list())),
    }


def import_rally(path: str | Path) -> tuple[pl.DataFrame, dict[str, Any]]:
    """``(requests table, run section)`` of a Rally results file.

    Raises :class:`~stacklens.errors.UserError` when the file is missing, is not Rally JSON,
    or holds no server-booting iteration (only ``NovaServers.*`` workloads become rows).
    """
    p = Path(path)
    if not p.is_file():
        raise UserError(f"{p}: no such file")
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
        recs = records_from_rally(doc)
    except (ValueError, TypeError, AttributeError, KeyError) as e:
        raise UserError(f"{p}: not Rally results: {e}") from None
    if not recs:
        raise UserError(f"{p}: no server-booting iteration (stacklens reads NovaServers.* "
                        "workloads into requests)")
    df = to_frame(recs)
    return df, run_section(doc, df, p)
