"""The clock frame: what the clock rules (:func:`~stacklens.trace.skew.causal_constraints`,
:func:`~stacklens.trace.clocks.correct_clocks`) read of an events Parquet file, without the
records that cannot change the offsets, for the bounded trace stage's global pass.

**Which records can change the offsets.** Every constraint pairs two records on two hosts that
share a key: an RPC id (``rpc_call``, ``rpc_cast``, ``rpc_reply``), or a request id, as the
``request_id`` or ``global_request_id`` column or named in a message the rules read
(``http_*``, ``rpc_context``, ``http_callee``, ``http_caller``, ``http_origin``,
``schedule_build``: :mod:`stacklens.trace.causal`). Every group-by and window a rule takes is
over one such key (the earliest record per key and host, the hosts of a key's sends or access
lines), except ``http_caller``'s sequences of ``REQ: curl`` and ``used request id`` lines per
(host, pid, request context, method, URL). So a request id seen on one host only (in either
column or in a message) and an RPC id seen on one host only pair nothing, and a record whose
every key is such an id can leave without changing any constraint, provided it is not one of
``http_caller``'s lines (those stay: dropping one changes which lines alternate).
:func:`~stacklens.trace.clocks.correct_clocks` reads the records besides only through the
hosts, the hosts logging each UTC day and the days' order of first record: the first record
of each (host, UTC day) stays whatever it holds. The offsets are the same; the rules' input is
what a cloud's requests that cross hosts left, not every request it served (a poll of
``GET /servers/<id>`` is handled by nova-api alone).

Ids are compared as 64-bit hashes (Polars ``Expr.hash`` of the text): two ids with the same
hash count each other's hosts, so a collision can only keep a record, never drop one.

**Folding**, as before this module: a record with no RPC kind or id and no HTTP status whose
message no rule reads (:func:`~stacklens.trace.skew.clock_messages`) is read by a rule only
through the earliest time of its (request id or global request id, host) among records of a
service or logger, and a context dump (:func:`~stacklens.trace.skew.context_dump`, Kilo and
older receipts) besides through its dump's request id; so the records of one (host, service,
logger, request id, global request id, UTC day, message as the rules read it) become one row
with their earliest ``ts_ns`` (``pid`` and ``http_dur_s`` null), in the place of the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from stacklens.schema import TABLES
from stacklens.trace.causal import caller_lines
from stacklens.trace.clocks import _DAY_NS
from stacklens.trace.columnwise import in_order, own
from stacklens.trace.skew import clock_messages, clock_text, context_dump
from stacklens.vocab import REQ_ID

__all__ = ["CLOCK_CATS", "clock_frame"]

#: Columns of the clock frame that the clock rules only compare, group and join on, never
#: read as text: categorical there (4 bytes a row where a string column holds a 16-byte view,
#: null or not, plus its text). The 2.69 M rows of the 30 M-line bench corpus's frame before
#: pruning: 827 -> 651 MiB resident, the offsets' peak 1,195 -> 982 MiB (jemalloc purging at
#: once), the same offsets. ``logger`` stays a string: rules read it as text.
CLOCK_CATS = ("host", "service", "rpc_kind", "rpc_id", "request_id", "global_request_id")
#: What a rule takes for a request id in a message: ``req-<uuid>`` (``used request id``,
#: ``RESP:``, :data:`stacklens.vocab.REQ_ID`) and the longest ``req-[0-9a-f-]+`` (a context
#: dump's ``'request_id'``, :func:`stacklens.trace.skew.context_dump_text`); both are taken.
_NAMED = (REQ_ID, r"req-[0-9a-f-]+")
#: The key of a folded row (``_day``: the UTC day of ``ts_ns``).
_FOLD_KEY = ["host", "service", "logger", "request_id", "global_request_id", "message", "_day"]


def clock_frame(path: Path, cols: Sequence[str]) -> pl.DataFrame:
    """What the clock rules read of the events Parquet file ``path`` (canonical ``events``
    columns), in file order: the ``cols`` of the records that can change the offsets (module
    docstring) and of the first record of each (host, UTC day), their plain records and
    context dumps folded, ``message`` as the rules read it
    (:func:`~stacklens.trace.skew.clock_text`), :data:`CLOCK_CATS` categorical.
    ``correct_clocks(clock_frame(...), apply=False)`` gives the whole file's offsets.
    ``cols`` must hold ``ts_ns``, ``host``, ``message``, the id columns, ``rpc_kind``,
    ``rpc_id`` and ``http_status``; raises ``polars.exceptions.ColumnNotFoundError`` otherwise.

    Memory: the records whose message a rule reads are read twice, for the ids they name
    and then, only those kept, whole; the rest are read without ``message``, by row number.
    Each read is a scan of its own (Polars caches a subplan that two branches share, whole:
    ``comm_subplan_elim`` held every record's columns, 3.6 GiB at 30 M lines, session 22),
    with the row number from the Parquet reader (``row_index_name`` streams, where
    ``with_row_index`` on the scan did not).
    The kept strings are copied out of the reader's buffers
    (:func:`~stacklens.trace.columnwise.own`: one kept value keeps a decoded page alive) and
    the id columns made categorical inside the read (as strings, the 731 k kept clock
    messages of the 100 M-line bench corpus held 1.35 GiB resident for 164 MiB of values, in
    203 chunks a column: 378 MiB now, jemalloc purging at once); the id group-bys hold hosts
    as hashes. The parts are put in file order a column at a time
    (:func:`~stacklens.trace.columnwise.in_order`).

    Measured (2026-11-29, same offsets): the 30 M-line bench corpus's frame 2.69 M -> 0.18 M
    rows, its build and rules 5.7 + 1.7 -> 5.3 + 0.2 s, peak 1,463 -> 864 MiB; the 100 M-line
    one's 9.0 M -> 0.60 M rows, peak ~2.9 -> 1.2 GiB (0.73 GiB purging at once);
    ``stacklens trace`` of the two peaks at 1,378 -> 1,130 MiB and 2,956 -> 1,548 MiB, the
    same eight tables."""
    def scan() -> pl.LazyFrame:  # the row number from the reader, which streams
        return pl.scan_parquet(path, row_index_name="_row")

    cat = [c for c in CLOCK_CATS if c in cols]
    owned = [c for c in cols if TABLES["events"][c] == pl.String and c not in cat]
    hosts = (scan().select(pl.col("host").drop_nulls().unique()).collect(engine="streaming")
             .get_column("host"))
    # the request ids the messages a rule reads name, by record: one read of the messages
    # for these few columns, so that the records kept are known before their text is read
    named = (scan().filter(clock_messages()).select("_row", h=_named(), host=_host(hosts))
             .collect(engine="streaming"))
    said_rows = named.get_column("_row")
    named = named.explode("h").drop_nulls("h")
    multi = _multi_host(
        pl.concat([scan().select(h=_hash(c), host=_host(hosts)).drop_nulls("h")
                   for c in ("request_id", "global_request_id")] + [named.lazy().drop("_row")])
    )
    rpc = _multi_host(scan().select(h=_hash("rpc_id"), host=_host(hosts)).drop_nulls("h"))
    firsts = (scan().group_by("host", _day=pl.col("ts_ns") // _DAY_NS)
              .agg(pl.col("_row").min()).collect(engine="streaming").get_column("_row"))
    keep = (pl.col("_row").is_in(firsts.implode()) | _hash("rpc_id").is_in(rpc.implode())
            | pl.any_horizontal(_hash(c).is_in(multi.implode())
                                for c in ("request_id", "global_request_id"))).fill_null(False)
    names = pl.col("_row").is_in(
        named.filter(pl.col("h").is_in(multi.implode())).get_column("_row").implode())
    del named
    said = (scan().filter(clock_messages()).select("_row", *cols)
            .filter(keep | names | caller_lines().fill_null(False))
            .with_columns(_dump=context_dump()).with_columns(message=clock_text())
            .with_columns(own(c) for c in owned).with_columns(pl.col(cat).cast(pl.Categorical))
            .collect(engine="streaming"))
    plain = (pl.col("rpc_kind").is_null() & pl.col("rpc_id").is_null()
             & pl.col("http_status").is_null())
    fold_said = plain & pl.col("_dump")
    kept = [said.filter(~fold_said).drop("_dump").with_columns(own(c) for c in owned)]
    folded = [_fold(said.lazy().filter(fold_said).drop("_dump"), cat)]
    del said
    rows = pl.col("_row").is_in(said_rows.implode())
    rest = [c for c in cols if c != "message"]

    def others() -> pl.LazyFrame:  # the records whose message no rule reads, without it
        return scan().select("_row", *rest).filter(keep & ~rows)

    kept.append(others().filter(~plain).with_columns(own(c) for c in owned if c != "message")
                .with_columns(pl.col(cat).cast(pl.Categorical),
                              message=pl.lit(None, pl.String))
                .select(kept[0].columns).collect(engine="streaming"))
    folded.append(_fold(others().with_columns(message=pl.lit(None, pl.String)).filter(plain),
                        cat))
    schema = kept[0].schema
    done = pl.concat([pl.DataFrame(schema=schema), *(f.collect(engine="streaming")
                                                     for f in folded)],
                     how="diagonal").select(schema.names())
    out = [pl.concat([*kept, done], rechunk=False)]
    del kept, done
    return in_order(out, pl.col("_row")).select(*cols)


def _hash(col: str) -> pl.Expr:
    """``col``'s 64-bit hash, null where ``col`` is (the text's: hash before any cast)."""
    return pl.when(pl.col(col).is_not_null()).then(pl.col(col).hash())


def _host(hosts: pl.Series) -> pl.Expr:
    """``host`` as its 64-bit hash (:func:`_hash`) when ``hosts`` (every host of the file)
    have distinct hashes, else as itself: what a group-by keeps of it is 8 bytes, not a
    string. (Not a categorical's physical code: casts in different reads gave one host
    different codes; nor ``replace_strict`` with the hosts' ranks: 5.5 GiB in the streaming
    read of the 100 M-line bench corpus.)"""
    return _hash("host") if hosts.hash().n_unique() == hosts.len() else pl.col("host")


def _named() -> pl.Expr:
    """The hashes of the request ids ``message`` names (:data:`_NAMED`), a list per record."""
    msg = pl.col("message")
    return pl.concat_list([msg.str.extract_all(p) for p in _NAMED]).list.eval(
        pl.element().hash())


def _multi_host(pairs: pl.LazyFrame) -> pl.Series:
    """The hashes (``h``) of ``pairs`` (``h``, ``host`` as :func:`_host` gives it) seen with two
    hosts or more: one streaming group-by keeping the least and the greatest host of each."""
    return (pairs.group_by("h").agg(lo=pl.col("host").min(), hi=pl.col("host").max())
            .filter(pl.col("lo") != pl.col("hi")).collect(engine="streaming").get_column("h"))


def _fold(records: pl.LazyFrame, cat: Sequence[str]) -> pl.LazyFrame:
    """``records`` (``_row``, ``ts_ns`` and :data:`_FOLD_KEY` but ``_day``) folded: one row per
    key, its earliest ``ts_ns`` at its first ``_row``, in file order."""
    return (records.with_columns(_day=pl.col("ts_ns") // _DAY_NS)
            .group_by(_FOLD_KEY).agg(pl.col("_row").min(), pl.col("ts_ns").min())
            .drop("_day").sort("_row")
            .with_columns(pl.col([c for c in cat if c in _FOLD_KEY]).cast(pl.Categorical)))
