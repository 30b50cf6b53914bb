"""The order in which renderers walk a report, from the section declarations it carries.

A report of format 2 or later (:mod:`stacklens.analyze.build`) lists its sections in
``report["sections"]``: ``[{name, key, title, doc, terminal, columns: [{name, unit, doc,
label}]}]``, in report order. Several sections may fill one report key (``ingest``,
``client_server``). A renderer walks the keys in that order: a key it has its own code for is
drawn by that code; any other key is drawn as a table from the declared columns
(:func:`table_rows`), so a section added to the analyses appears without renderer changes.
Reports without declarations (format 1, hand-made dicts) are walked in a renderer's default
order. Pure: no I/O; this module imports nothing of the analyses (it reads only the dict).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "Decl",
    "NUMERIC_UNITS",
    "cells",
    "sections_by_key",
]

#: Units whose values are numbers (right-aligned, formatted per unit).
NUMERIC_UNITS = ("s", "count", "fraction", "1/s")

Decl = dict[str, Any]


def _valid(d: Any) -> bool:
    return (isinstance(d, dict) and isinstance(d.get("name"), str) and isinstance(d.get("key"), str)
            and isinstance(d.get("columns"), list)
            and all(isinstance(c, dict) and isinstance(c.get("name"), str) for c in d["columns"]))


def sections_by_key(report: dict[str, Any], default: tuple[str, ...]) -> list[tuple[str, list[Decl]]]:
    """``[(report key, [declarations filling it])]`` in declared order; ``default`` keys with no
    declarations when the report carries none (or only malformed ones)."""
    decls = report.get("sections")
    out: dict[str, list[Decl]] = {}
    if isinstance(decls, list):
        for d in decls:
            if _valid(d):
                out.setdefault(d["key"], []).append(d)
    if not out:
        return [(k, []) for k in default]
    return list(out.items())


def cells(decl: Decl, data: Any) -> tuple[list[Decl], list[list[Any]]]:
    """The declared columns and the rows of ``data`` (a list of row dicts, or one row dict) as
    lists of raw values in column order; rows that are not dicts are left out."""
    cols = [c for c in decl["columns"] if isinstance(c, dict)]
    rows = data if isinstance(data, list) else [data] if isinstance(data, dict) else []
    return cols, [[r.get(c["name"]) for c in cols] for r in rows if isinstance(r, dict)]
