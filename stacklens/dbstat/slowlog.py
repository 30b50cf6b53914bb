"""MariaDB/MySQL slow query log -> ``db_digests``, for clouds where only log files exist.

With ``long_query_time = 0`` the slow log holds every statement, which makes it a full
statement log with timings. Format (MariaDB 10.x and MySQL 5.7+, ``log_output = FILE``)::

    # Time: 241124 13:20:01                     (MySQL 5.7+: # Time: 2024-11-24T13:20:01.123Z)
    # User@Host: nova[nova] @  [127.0.0.1]
    # Thread_id: 8  Schema: nova  QC_hit: No    (MariaDB only; MySQL: "use nova;" lines)
    # Query_time: 0.000123  Lock_time: 0.000045  Rows_sent: 1  Rows_examined: 1
    # Rows_affected: 0  Bytes_sent: 123         (MariaDB only)
    SET timestamp=1700000000;
    SELECT ... ;

Statements are normalized the way the server's digests are meant to be (string and number
literals -> ``?``, ``IN (?, ?, ...)`` -> ``IN (...)``) so no literal (a password in an
``UPDATE users``) is stored, and grouped per schema x normalized text (``digest``: the first
32 hex digits of its SHA-1, not the server's digest). The table has two snapshots, 0 (every
digest at zero, at the first statement's time) and 1 (the totals, at the last), so the
sections' last-minus-first deltas are the log's totals.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from stacklens.dbstat.snapshot import statement_kind
from stacklens.schema import TABLES, conform

__all__ = ["normalize", "read_slow_log"]

_STR = re.compile(r"'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"")
_NUM = re.compile(r"(?<![\w`.])-?(?:0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\b")
_LIST = re.compile(r"\(\s*\?(?:\s*,\s*\?)+\s*\)")
_WS = re.compile(r"\s+")
_FIELD = re.compile(r"(\w+): (\S+)")
_TS = re.compile(r"^SET timestamp=(\d+);", re.I)
_USE = re.compile(r"^use `?(\w+)`?;", re.I)


def normalize(sql: str) -> str:
    """Statement text with literals replaced: strings and numbers -> ``?``, lists of them ->
    ``(...)``, whitespace collapsed, a trailing ``;`` dropped."""
    s = _NUM.sub("?", _STR.sub("?", sql))
    s = _LIST.sub("(...)", s)
    return _WS.sub(" ", s).strip().rstrip(";").strip()


def _records(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    """One dict per statement record: its header fields, ``_sql`` (the statement, or
    ``administrator command: Quit`` for those), ``_ts`` (``SET timestamp``, epoch s),
    ``_schema`` (the record's ``Schema:``, else its ``use`` line, else the last ``use`` seen:
    MySQL logs name the database only when it changes)."""
    fields: dict[str, str] = {}
    sql: list[str] = []
    ts: int | None = None
    use: str | None = None
    rec_use: str | None = None

    use_line = ""  # a record whose only statement is a USE logs just that line

    def flush() -> dict[str, Any]:
        schema = fields.get("Schema") or rec_use or use
        return {**fields, "_sql": " ".join(sql) or use_line, "_ts": ts, "_schema": schema}

    for raw in lines:
        line = raw.rstrip("\n")
        if line.startswith("# "):
            if line.startswith("# administrator command:"):
                sql.append(line[2:])
                continue
            if sql or line.startswith(("# Time:", "# User@Host:")):
                if (sql or use_line) and "Query_time" in fields:
                    yield flush()
                if sql or "Query_time" in fields:
                    sql, fields, rec_use, use_line = [], {}, None, ""
            if not line.startswith(("# Time:", "# User@Host:")):
                fields.update(_FIELD.findall(line))
            continue
        if (m := _TS.match(line)) is not None:
            ts = int(m.group(1))
            continue
        if (m := _USE.match(line)) is not None:
            use = rec_use = m.group(1)
            use_line = line
            continue
        if line and "Query_time" in fields:
            sql.append(line)
    if (sql or use_line) and "Query_time" in fields:
        yield flush()


def read_slow_log(path: str | Path) -> tuple[pl.DataFrame, list[str]]:
    """``(db_digests frame, notes)`` from one slow log file (plain text). Records without a
    ``Query_time`` header are skipped and counted in the notes; lines the server writes at
    startup (version banner, column header) are ignored. Raises OSError for an unreadable
    file."""
    agg: dict[tuple[str | None, str], dict[str, Any]] = {}
    t_min = t_max = None
    n = skipped = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for r in _records(f):
            try:
                q_s, lock_s = float(r["Query_time"]), float(r.get("Lock_time", 0))
                sent, exam = int(r.get("Rows_sent", 0)), int(r.get("Rows_examined", 0))
                aff = int(r.get("Rows_affected", 0))
            except (KeyError, ValueError):
                skipped += 1
                continue
            text = normalize(r["_sql"])
            key = (r["_schema"], text)
            a = agg.setdefault(key, {"count_star": 0, "sum_timer_wait_s": 0.0,
                                     "sum_lock_time_s": 0.0, "sum_rows_sent": 0,
                                     "sum_rows_examined": 0, "sum_rows_affected": 0})
            a["count_star"] += 1
            a["sum_timer_wait_s"] += q_s
            a["sum_lock_time_s"] += lock_s
            a["sum_rows_sent"] += sent
            a["sum_rows_examined"] += exam
            a["sum_rows_affected"] += aff
            n += 1
            if r["_ts"] is not None:
                t_min = r["_ts"] if t_min is None else min(t_min, r["_ts"])
                t_max = r["_ts"] if t_max is None else max(t_max, r["_ts"])
    rows = []
    t0, t1 = (t_min or 0) * 10**9, (t_max or 0) * 10**9
    for (schema, text), a in agg.items():
        base = {"schema": schema, "digest": hashlib.sha1(text.encode()).hexdigest()[:32],
                "digest_text": text, "kind": statement_kind(text)}
        rows.append({**base, "ts_ns": t0, "snapshot": 0, **{k: 0 for k in a}})
        rows.append({**base, "ts_ns": t1, "snapshot": 1, **a})
    notes = [f"{n} statements read from {path}"]
    if skipped:
        notes.append(f"{skipped} records without readable timings skipped")
    df = pl.DataFrame(rows or None, schema=TABLES["db_digests"])
    return conform(df, "db_digests"), notes
