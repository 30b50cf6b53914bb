"""Report sections on what ingest read: totals of the ``ingest_stats`` table, its entries, and a
sample of quarantined lines (:mod:`stacklens.schema`). They fill the report's ``ingest`` object;
the builder adds ``files``, ``files_skipped`` and ``lines`` from the run manifest.
"""

from __future__ import annotations

from stacklens.analyze.section import Column, Section

__all__ = ["INGEST_SECTIONS", "QUARANTINE_SAMPLE"]

#: Quarantined lines shown in the report.
QUARANTINE_SAMPLE = 200

INGEST_COUNTS = Section(
    "ingest_counts", "Ingest", "Records parsed and lines quarantined (one row).",
    """
        SELECT (SELECT count(*) FROM events) AS records,
               (SELECT count(*) FROM quarantine) AS quarantined
    """,
    (
        Column("records", "count", "log records parsed"),
        Column("quarantined", "count", "lines that could not be parsed and were set aside"),
    ),
    key="ingest", place=lambda rows: {"ingest": dict(rows[0])},
)

INGEST_TOTALS = Section(
    "ingest_totals", "Ingest statistics by kind",
    "Entries of the ingest_stats table summed per kind and severity.",
    """
        SELECT kind, severity, sum("count") AS count, count(*) AS files
        FROM ingest_stats GROUP BY kind, severity ORDER BY severity, kind
    """,
    (
        Column("kind", "name", "what ingest counted (e.g. untimed, quarantined)"),
        Column("severity", "name", "info | error | data_loss"),
        Column("count", "count", "occurrences"),
        Column("files", "count", "files with this entry"),
    ),
    key="ingest", place=lambda rows: {"ingest": {"totals": rows}},
)

INGEST_STATS = Section(
    "ingest_stats", "Ingest statistics",
    "The 500 largest ingest_stats entries (format detections left out).",
    """
        SELECT file, kind, severity, "count", detail FROM ingest_stats
        WHERE kind NOT IN ('format') ORDER BY severity DESC, "count" DESC, file, kind, detail LIMIT 500
    """,
    (
        Column("file", "name", "input file"),
        Column("kind", "name", "what ingest counted"),
        Column("severity", "name", "info | error | data_loss"),
        Column("count", "count", "occurrences in the file"),
        Column("detail", "text", "an example or explanation"),
    ),
    key="ingest", place=lambda rows: {"ingest": {"stats": rows}},
)

QUARANTINE = Section(
    "quarantine_sample", "Quarantine sample",
    f"The first {QUARANTINE_SAMPLE} quarantined lines by file and line number.",
    f"""
        SELECT file, line_no, reason, raw FROM quarantine ORDER BY file, line_no
        LIMIT {QUARANTINE_SAMPLE}
    """,
    (
        Column("file", "name", "input file"),
        Column("line_no", "count", "line number in the file (1-based)", "line"),
        Column("reason", "name", "why the line was set aside"),
        Column("raw", "text", "the line as read", "raw line"),
    ),
    key="ingest", place=lambda rows: {"ingest": {"quarantine_sample": rows}},
)

#: The ingest sections, in report order.
INGEST_SECTIONS = (INGEST_COUNTS, INGEST_TOTALS, INGEST_STATS, QUARANTINE)
