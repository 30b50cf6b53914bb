"""Build ``report.json`` from a traced run's tables: read only.

:func:`build_report` runs every declared section (:data:`stacklens.analyze.queries.SECTIONS`)
on the run's DuckDB views, places their rows in the report dict, runs the findings rules, and
writes the declarations into ``report["sections"]`` so the JSON describes itself. It writes
nothing: Drain3 template mining (tables ``templates`` and ``error_templates``) is a step of its
own, :func:`stacklens.analyze.mining.mine_store`, run after trace.

The report dict has the keys ``format_version``, ``stacklens_version``, ``inputs``,
``timezone_assumption``, ``simulated`` (true for a forecast: the manifest has a ``forecast``
section), ``findings`` (list of {rule, severity, text, evidence}:
:mod:`stacklens.analyze.findings`), ``sections`` (the declarations: [{name, key, title, doc,
terminal, columns: [{name, unit, doc, label}]}]), and the keys the sections fill: ``window``
{start, end (ISO 8601 UTC), dur_s}, ``summary`` {traces, background_traces, by_outcome,
decided, success_rate, failure_rate, retry_rate, rejected_rate, unknown_rate, throughput_rps},
``components``, ``timeline``, ``operations``, ``waterfalls`` {trace_id: [span rows with start_s
and dur_s relative to the trace start]}, ``failed``, ``slowest``, ``errors``, ``client_server``
({summary, rows} for runs of ``stacklens run``, else null), ``phases``, ``locks``, ``rpc``,
``clocks``, ``hosts``, ``ingest`` {files, files_skipped, lines, records, quarantined, totals,
stats, quarantine_sample}. Rates are defined once, in :mod:`stacklens.analyze.queries`.

Format history (``format_version``; pyperf style, readers accept older versions):

- 1: the first report.
- 2: adds ``sections`` (the declared sections and their columns, with units); the keys and values
  of version 1 are unchanged. Summary, window, throughput and the component ranking are
  computed in SQL (the same text runs on Spark). ``simulated`` added (issue 9; readers treat a
  missing key as false).
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import duckdb

from stacklens import __version__
from stacklens.analyze.findings import findings
from stacklens.analyze.forecast_notes import forecast_notes
from stacklens.analyze.local_time import local_time_findings
from stacklens.analyze.queries import SECTIONS
from stacklens.analyze.section import Section
from stacklens.errors import StoreError
from stacklens.store import RunStore

__all__ = [
    "REPORT_FORMAT_VERSION", "REQUIRED_TABLES", "build_report", "capture_notes", "section_rows",
]

#: The version of the report dict; see the format history in the module docstring.
REPORT_FORMAT_VERSION = 2

#: Tables a run needs before its report can be built (optional ones: sections' ``needs``).
REQUIRED_TABLES = ("events", "quarantine", "ingest_stats", "spans", "traces", "breakdown",
                   "phases", "clock_offsets", "error_templates")

_FINDING_TABLES = ("events", "traces", "spans", "breakdown", "requests", "error_templates",
                   "clock_offsets", "ingest_stats", "phases")


def _clean(v: Any) -> Any:
    if isinstance(v, Decimal):  # DuckDB's type of decimal literals and their sums
        v = float(v)
    return None if isinstance(v, float) and not math.isfinite(v) else v


def section_rows(con: duckdb.DuckDBPyConnection, section: Section | str) -> list[dict[str, Any]]:
    """Run one section's SQL on ``con``: rows as dicts (column -> value; decimals -> float; NaN and
    inf -> None), before the section's placing in the report. ``section`` may be given by name.
    Raises duckdb.Error when a table the SQL reads is missing."""
    if isinstance(section, str):
        section = next(s for s in SECTIONS if s.name == section)
    cur = con.execute(section.sql)
    cols = [d[0] for d in cur.description]
    return [{c: _clean(v) for c, v in zip(cols, r, strict=True)} for r in cur.fetchall()]


def _merge(report: dict[str, Any], parts: dict[str, Any]) -> None:
    for k, v in parts.items():
        if isinstance(v, dict) and isinstance(report.get(k), dict):
            report[k].update(v)
        else:
            report[k] = v


def capture_notes(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The notes of what ``stacklens run`` recorded beside the logs (manifest ``run.capture``:
    broker, db, resources; what was not captured and why) as findings of severity ``info``
    (rule ``capture``), so every renderer shows them with the run's other findings."""
    cap = (manifest.get("run") or {}).get("capture") or {}
    out = [{"rule": "capture", "severity": "info", "text": f"capture {name}: {n}",
            "evidence": {"tables": cap.get("tables", {})}}
           for name, notes in (cap.get("notes") or {}).items() for n in notes]
    out += [{"rule": "capture", "severity": "info", "text": f"capture {n}", "evidence": {}}
            for n in cap.get("skipped") or []]
    return out


def build_report(store: RunStore) -> dict[str, Any]:
    """The report dict (module docstring) of a traced run whose templates were mined.

    Reads ``store`` only. Raises :class:`~stacklens.errors.StoreError` when a table of
    :data:`REQUIRED_TABLES` is missing (``error_templates``: run
    :func:`stacklens.analyze.mining.mine_store` first)."""
    missing = [t for t in REQUIRED_TABLES if not store.has(t)]
    if missing:
        raise StoreError(f"{store.path} has no {', '.join(missing)} table: run the stages that "
                         "make them first (ingest, trace, template mining)")
    manifest = store.manifest()
    ing = manifest.get("ingest", {})
    report: dict[str, Any] = {
        "format_version": REPORT_FORMAT_VERSION,
        "stacklens_version": __version__,
        "inputs": manifest.get("inputs", []),
        "timezone_assumption": ing.get("timezone_assumption", "UTC"),
        # a forecast's tables come from the simulator (manifest section 'forecast'), not logs
        "simulated": manifest.get("forecast") is not None,
    }
    with store.connect(read_only=True) as con:
        found = findings(con, {t for t in _FINDING_TABLES if store.has(t)})
        if all(store.has(t) for t in ("requests", "traces", "spans")):
            found += local_time_findings(con)
        report["findings"] = found + capture_notes(manifest) + forecast_notes(manifest)
        for s in SECTIONS:
            if all(store.has(t) for t in s.needs):
                _merge(report, s.shape(section_rows(con, s)))
            else:
                _merge(report, dict(s.absent))
    g = report["ingest"]
    g["files"] = ing.get("files_read", 0)
    g["files_skipped"] = ing.get("files_skipped", 0)
    g["lines"] = int(ing.get("lines", 0)) if g["records"] else 0
    report["sections"] = [s.describe() for s in SECTIONS]
    return report
