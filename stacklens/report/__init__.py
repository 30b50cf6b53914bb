"""Report: pure renderers of the report dict (terminal tables, self-contained HTML)."""
