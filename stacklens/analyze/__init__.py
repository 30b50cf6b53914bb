"""Analyze: analyses as SQL over the canonical tables, error templates, report assembly."""
