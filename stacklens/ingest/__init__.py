"""Ingest: log files -> canonical events, ingest_stats and quarantine tables."""
