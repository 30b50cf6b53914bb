"""The database report sections on tiny hand-built tables: deltas between snapshots (a digest
new in the run, a counter reset), CUID shares that add to 1 per schema, server schemas left
out, lock counters over time, and the log-only path (oslo.db retry and MySQL deadlock lines
in ``events``, per service and per request). A report without database tables holds empty
sections."""

from __future__ import annotations

import duckdb
import polars as pl
import pytest

from stacklens.analyze.build import section_rows
from stacklens.analyze.db_sections import DB_SECTIONS
from stacklens.schema import conform

S = {s.name: s for s in DB_SECTIONS}
T0 = 1_700_000_000_000_000_000


def _digest(snap: int, schema: str | None, digest: str, kind: str, n: int, t_s: float,
            **kw: int) -> dict:
    return {"ts_ns": T0 + snap * 5_000_000_000, "snapshot": snap, "schema": schema,
            "digest": digest, "digest_text": f"{kind.upper()} ... {digest}", "kind": kind,
            "count_star": n, "sum_timer_wait_s": t_s, **kw}


def _con(**tables: pl.DataFrame) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    for name, df in tables.items():
        con.register(name, conform(df, name))
    return con


DIGESTS = pl.DataFrame([
    # snapshot 0: before the run
    _digest(0, "nova", "s1", "select", 100, 1.0, sum_rows_examined=1000),
    _digest(0, "nova", "u1", "update", 10, 0.5),
    _digest(0, "nova_api", "i1", "insert", 50, 0.2),  # reset later: counts from zero again
    _digest(0, "mysql", "x", "select", 5, 0.1),
    # snapshot 1: only changed digests
    _digest(1, "nova", "s1", "select", 150, 1.5, sum_rows_examined=1500),
    # snapshot 2 (last): every digest
    _digest(2, "nova", "s1", "select", 160, 1.6, sum_rows_examined=1600),
    _digest(2, "nova", "u1", "update", 30, 1.5),
    _digest(2, "nova", "d1", "delete", 10, 0.1),  # new during the run
    _digest(2, "nova", "c1", "other", 70, 0.01),  # COMMIT
    _digest(2, "nova_api", "i1", "insert", 8, 0.08),
    _digest(2, "nova_api", "s2", "select", 24, 0.3),
    _digest(2, "mysql", "x", "select", 9, 0.2),  # a server schema: left out
    _digest(2, None, "own", "select", 40, 0.4),  # no default database (the recorder): left out
], infer_schema_length=None)


def test_cuid_shares_add_to_one_per_schema():
    rows = {r["schema"]: r for r in section_rows(_con(db_digests=DIGESTS), S["db_cuid"])}
    assert set(rows) == {"nova", "nova_api"}
    nova = rows["nova"]
    assert (nova["select_n"], nova["insert_n"], nova["update_n"], nova["delete_n"],
            nova["other_n"]) == (60, 0, 20, 10, 70)
    assert nova["statements"] == 160
    assert nova["select_share"] == pytest.approx(60 / 90)
    assert nova["time_s"] == pytest.approx(0.6 + 1.0 + 0.1 + 0.01)
    assert nova["update_time_share"] == pytest.approx(1.0 / 1.7)
    api = rows["nova_api"]
    assert (api["select_n"], api["insert_n"]) == (24, 8)  # the reset insert counts from zero
    for r in rows.values():
        assert sum(r[f"{k}_share"] for k in ("select", "insert", "update", "delete")) == (
            pytest.approx(1.0))
        assert sum(r[f"{k}_time_share"] for k in ("select", "insert", "update", "delete")) == (
            pytest.approx(1.0))


def test_top_digests_by_time():
    top = section_rows(_con(db_digests=DIGESTS), S["db_top_digests"])
    assert [r["statement"].split()[-1] for r in top[:2]] == ["u1", "s1"]
    s1 = next(r for r in top if r["statement"].endswith("s1"))
    assert (s1["calls"], s1["rows_examined"]) == (60, 600)
    assert s1["mean_s"] == pytest.approx(0.6 / 60)


def _samples() -> pl.DataFrame:
    rows = []
    for i, (dl, waits, ms, thr) in enumerate([(3, 10, 100, 5), (3, 12, 400, 40),
                                               (5, 20, 900, 12)]):
        ts = T0 + i * 5_000_000_000
        rows += [{"ts_ns": ts, "metric": "Innodb_deadlocks", "object": "", "value": dl},
                 {"ts_ns": ts, "metric": "Innodb_row_lock_waits", "object": "", "value": waits},
                 {"ts_ns": ts, "metric": "Innodb_row_lock_time", "object": "", "value": ms},
                 {"ts_ns": ts, "metric": "Threads_connected", "object": "", "value": thr},
                 {"ts_ns": ts, "metric": "Max_used_connections", "object": "", "value": 77},
                 {"ts_ns": ts, "metric": "user_threads", "object": "nova", "value": thr - 1},
                 {"ts_ns": ts, "metric": "user_threads", "object": "root", "value": 1},
                 {"ts_ns": ts, "metric": "snapshot_s", "object": "", "value": 0.01}]
    return pl.DataFrame(rows)


def test_deadlocks_and_lock_waits_over_the_run():
    con = _con(db_samples=_samples())
    s = section_rows(con, S["db_summary"])[0]
    assert (s["snapshots"], s["deadlocks"], s["lock_waits"]) == (3, 2, 10)
    assert s["lock_wait_s"] == pytest.approx(0.8)
    assert (s["peak_threads_connected"], s["max_used_connections"]) == (40, 77)
    assert s["lock_timeouts"] is None and s["cert_failures"] is None  # not sampled: unknown
    tl = section_rows(con, S["db_lock_timeline"])
    assert [r["deadlocks"] for r in tl] == [None, 0, 2]
    assert [r["lock_wait_s"] for r in tl][1:] == [pytest.approx(0.3), pytest.approx(0.5)]
    th = section_rows(con, S["db_threads"])
    assert th[0] == {"per": "user", "name": "nova", "peak": 39, "mean": pytest.approx(18)}


def _ev(service: str, rid: str | None, level: str, msg: str, cont: str | None = None,
        i: int = 0) -> dict:
    return {"ts_ns": T0 + i, "host": "c1", "service": service, "level": level,
            "request_id": rid, "message": msg, "continuation": cont}


EVENTS = pl.DataFrame([
    _ev("nova-api", "req-1", "DEBUG", "Performing DB retry for function "
        "nova.db.main.api.quota_reserve", i=1),
    _ev("nova-api", "req-1", "DEBUG", "DB error: (pymysql.err.OperationalError) (1213, "
        "'Deadlock found when trying to get lock; try restarting transaction')", i=2),
    _ev("nova-api", "req-1", "DEBUG", "Performing DB retry for function "
        "nova.db.main.api.quota_reserve", i=3),
    _ev("nova-api", "req-2", "ERROR", "DB exceeded retry limit.",
        "Traceback (most recent call last):\noslo_db.exception.DBDeadlock: (pymysql.err."
        "OperationalError) (1213, 'Deadlock found when trying to get lock; try restarting "
        "transaction')", i=4),
    _ev("cinder-volume", None, "WARNING", "Deadlock detected when running 'reservation_commit':"
        " Retrying...", i=5),
    _ev("neutron-server", "req-3", "ERROR", "DB exception wrapped.",
        "pymysql.err.OperationalError: (1205, 'Lock wait timeout exceeded; try restarting "
        "transaction')", i=6),
    _ev("nova-api", "req-9", "INFO", "GET /v2.1/servers status: 200", i=7),
    _ev("nova-conductor", "req-9", "DEBUG", "Lock \"compute_resources\" acquired", i=8),
])


def test_retry_and_deadlock_lines_per_service_and_request():
    con = _con(events=EVENTS)
    per = {r["service"]: r for r in section_rows(con, S["db_retries"])}
    assert set(per) == {"nova-api", "cinder-volume", "neutron-server"}
    api = per["nova-api"]
    assert (api["retries"], api["deadlock_lines"], api["retry_limit"], api["requests"]) == (
        2, 2, 1, 2)
    assert per["cinder-volume"]["retries"] == 1
    assert per["neutron-server"]["lock_timeout_lines"] == 1
    reqs = section_rows(con, S["db_retry_requests"])
    assert [r["request_id"] for r in reqs] == ["req-1", "req-2", "req-3"]
    assert (reqs[0]["retries"], reqs[0]["deadlock_lines"]) == (2, 1)


def test_a_report_without_database_tables_has_empty_sections():
    for s in DB_SECTIONS:
        if s.needs:
            assert all(v == [] for v in s.absent.values()), s.name


def test_the_renderers_draw_the_sections_from_their_declarations():
    from rich.console import Console

    from stacklens.report.html import render_html
    from stacklens.report.terminal import render_terminal

    con = _con(db_digests=DIGESTS, db_samples=_samples(), events=EVENTS)
    report: dict = {"sections": [s.describe() for s in DB_SECTIONS]}
    for s in DB_SECTIONS:
        report.update(s.shape(section_rows(con, s)))
    doc = render_html(report)
    assert "Database statements per schema" in doc and "nova_api" in doc
    out = Console(record=True, width=160)
    for r in render_terminal(report):
        out.print(r)
    text = out.export_text()
    assert "Database: deadlocks, lock waits, connections" in text
    assert "66.7%" in text  # nova's select share of the CUID statements


def test_long_statements_go_under_a_wide_table_at_80_columns():
    """At 80 columns the top-statements table (11 columns) leaves a text column a few letters
    wide, which folded each statement one word fragment per line (a 300-character statement took
    ~90 lines): the statements go under the table instead, numbered, and the table keeps one
    line per row."""
    from rich.console import Console

    from stacklens.report.terminal import render_terminal

    long = "SELECT " + ", ".join(f"`anon_1`.`instances_col{i}`" for i in range(12)) + " FROM x"
    dg = DIGESTS.with_columns(digest_text=pl.when(pl.col("digest") == "s1").then(pl.lit(long))
                              .otherwise(pl.col("digest_text")))
    s = S["db_top_digests"]
    report: dict = {"sections": [s.describe()], **s.shape(section_rows(_con(db_digests=dg), s))}
    out = Console(record=True, width=80)
    for r in render_terminal(report):
        out.print(r)
    lines = out.export_text().splitlines()
    at = lines.index("Top statements by server time")
    table = lines[at + 3:at + 9]
    assert [ln.split()[0] for ln in table] == ["1", "2", "3", "4", "5", "6"]
    assert any(ln.startswith("#2  statement: SELECT `anon_1`.`instances_col0`") for ln in lines)
    assert len(lines) - at < 30


def test_columns_beyond_80_characters_go_under_the_table():
    """A table wider than 80 characters lost its last columns (rich cut them off: the config
    advice showed no option, value or advice): those columns go under the table, numbered."""
    from rich.console import Console

    from stacklens.analyze.section import Column, Section
    from stacklens.report.terminal import render_terminal

    cols = tuple(Column(f"c{i}", "name", f"column {i}", f"c{i}") for i in range(8))
    s = Section("wide", "A wide table", "eight name columns", "SELECT 1", cols)
    row = {f"c{i}": f"value-{i}-" + "x" * 8 for i in range(8)}
    report: dict = {"sections": [s.describe()], **s.shape([row, row])}
    out = Console(record=True, width=80)
    for r in render_terminal(report):
        out.print(r)
    text = out.export_text()
    assert "value-0-" in text and "#2  c4: value-4-xxxxxxxx  c5: value-5-xxxxxxxx" in text
    assert all(len(ln) <= 80 for ln in text.splitlines())
