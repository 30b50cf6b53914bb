"""The declaration of one report section: a named SQL query over the canonical tables, with its
output columns declared (unit and a comment each), as Perfetto's trace processor declares its
tables and views.

A :class:`Section` is everything the report needs to know about one analysis: the builder
(:mod:`stacklens.analyze.build`) runs its ``sql``, converts the columns declared as instants
(``iso_key``) to ISO 8601, places the rows in the report dict (``place``), and writes the
declaration itself into ``report["sections"]`` (:func:`Section.describe`), so that the
renderers (:mod:`stacklens.report`) can show a section they have no special code for as a
table, with headers and number formats from the column units.

Units (``Column.unit``): ``s`` (seconds, float), ``ns`` (nanoseconds since the Unix epoch, UTC,
int), ``count`` (int), ``fraction`` (float in [0, 1]), ``1/s`` (per second), ``iso8601`` (text,
an instant in UTC), ``bool``, ``text`` (free text, may be long), ``name`` (a short label: host,
service, operation), ``id`` (an identifier).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

__all__ = [
    "Column",
    "Section",
    "UNITS",
    "iso",
]

#: The units a column may declare (see the module docstring).
UNITS = ("s", "ns", "count", "fraction", "1/s", "iso8601", "bool", "text", "name", "id")

Rows = list[dict[str, Any]]


def iso(ns: int | None) -> str | None:
    """An instant in ns since the epoch as ISO 8601 UTC with milliseconds
    (``2016-10-05T11:02:03.123Z``); None stays None."""
    if ns is None:
        return None
    return datetime.fromtimestamp(ns / 1e9, UTC).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )


@dataclass(frozen=True)
class Column:
    """One output column of a section's SQL.

    ``name``: the SQL column name; ``unit``: one of :data:`UNITS`; ``doc``: what it means;
    ``label``: the header renderers show (default ``name``); ``iso_key``: for a ``ns`` instant,
    the report holds it as ISO 8601 text under this key instead of ``name``."""

    name: str
    unit: str
    doc: str
    label: str | None = None
    iso_key: str | None = None

    def __post_init__(self) -> None:
        if self.unit not in UNITS:
            raise ValueError(f"column {self.name}: unknown unit {self.unit!r}; known: {UNITS}")
        if self.iso_key is not None and self.unit != "ns":
            raise ValueError(f"column {self.name}: iso_key needs unit 'ns'")

    def describe(self) -> dict[str, str]:
        """The column as ``report.json`` declares it (after the ISO conversion)."""
        if self.iso_key is not None:
            return {"name": self.iso_key, "unit": "iso8601", "doc": self.doc,
                    "label": self.label or self.iso_key}
        return {"name": self.name, "unit": self.unit, "doc": self.doc,
                "label": self.label or self.name}


def _as_rows(name: str) -> Callable[[Rows], dict[str, Any]]:
    return lambda rows: {name: rows}


@dataclass(frozen=True)
class Section:
    """One analysis and its place in the report.

    ``name``: unique; ``title``: what renderers print above it; ``doc``: what it says;
    ``sql``: DuckDB SQL in the subset Spark SQL shares (:mod:`stacklens.analyze.sql`);
    ``columns``: the SQL's output columns, in order (a test runs every section and checks);
    ``needs``: tables the SQL reads that a run may lack (then the report holds ``absent``);
    ``key``: the report key the section fills (default ``name``); ``place``: rows -> {report key:
    value}, merged into the report one level deep (default ``{key: rows}``); ``terminal``:
    whether the terminal summary shows it (the HTML page shows every section)."""

    name: str
    title: str
    doc: str
    sql: str
    columns: tuple[Column, ...]
    needs: tuple[str, ...] = ()
    key: str = ""
    place: Callable[[Rows], dict[str, Any]] | None = None
    absent: dict[str, Any] = field(default_factory=dict)
    terminal: bool = True

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(self, "key", self.name)
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"section {self.name}: duplicate column names")

    def shape(self, rows: Rows) -> dict[str, Any]:
        """Rows of the SQL -> the report keys this section fills (instants converted to ISO)."""
        conv = [c for c in self.columns if c.iso_key is not None]
        if conv:
            for r in rows:
                for c in conv:
                    v = r.pop(c.name)
                    r[c.iso_key] = iso(None if v is None else int(v))  # type: ignore[index]
        return (self.place or _as_rows(self.key))(rows)

    def describe(self) -> dict[str, Any]:
        """The declaration as ``report.json`` carries it (``report["sections"]`` items)."""
        return {"name": self.name, "key": self.key, "title": self.title, "doc": self.doc,
                "terminal": self.terminal, "columns": [c.describe() for c in self.columns]}
