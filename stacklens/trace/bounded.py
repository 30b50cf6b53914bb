"""The trace stage in bounded memory: :func:`stacklens.trace.build_traces`'s tables from a run
folder's ``events`` Parquet file, the working set of spans, flows and classification capped by a
budget instead of growing with the input (issue 12).

Pass 1 (global, narrow columns): clock correction, linking and orphan adoption (what
:func:`~stacklens.trace.link_all` does) over the columns they read (:data:`~stacklens.trace.
LINK_COLUMNS`), ``message`` only where a rule reads it (clock rules:
:func:`~stacklens.trace.skew.clock_messages`; orphan markers: records with an instance tag but
no request id or RPC kind), every other message null, in two reads: the clock columns for
the offsets (:func:`~stacklens.trace.clocks.correct_clocks` with ``apply=False``), then the
linking columns (the ids linking compares held as categoricals: :data:`_IDS`), to which the
offsets are applied as ``correct_clocks`` would. The outcome per
record is kept: corrected ``ts_ns``, ``trace_id``, ``req_local``, ``eid``. Records without a trace are dropped here:
no trace-stage table reads them after linking (spans, flows, traces, breakdown and phases are
all built from :func:`~stacklens.trace.spans.timed_events`, which keeps only records of a
trace). Records that linking reads through their request id alone (most records: 5.65 M of
the 6.60 M with an id at 30 M lines) are linked as one row per request id
(:mod:`~stacklens.trace.reqonly`) and get their keys in pass 2, batch by batch.

Buckets. Every step after linking works within one trace, except flows, which pair an RPC
sender and its receiver by ``rpc_id`` (the receiver of a message can sit in another trace, for
example a receipt logged under a stale context). Traces sharing an ``rpc_id`` (sends,
receipts, replies sent) are joined into one component (union-find), and the components are
packed into ``B`` buckets by size (largest first into the least filled bucket).

Pass 2 (per bucket): the events file is read once, a record batch at a time, and each traced
record (all of :func:`trace_step`'s columns, ``ts_ns`` corrected) is written to its bucket's
temporary Parquet files; then each bucket is read alone and run through
:func:`~stacklens.trace.trace_tables`. The bucket outputs are concatenated and put in the row
order of the whole-frame path (spans, traces, breakdown: by ``trace_id``, stable; phases: by
phase, then ``trace_id``; flows: RPC flows by ``trace_id``, then HTTP flows by ``send_ns``,
``trace_id``), so the tables are identical to :func:`~stacklens.trace.build_traces`'s.

Setting: ``STACKLENS_TRACE_MEM_MIB`` (MiB, default :data:`DEFAULT_MEM_MIB`) sets
``B = ceil(records * BYTES_PER_EVENT / budget)``; ``B = 1`` (small input) is exactly the
whole-frame path. ``STACKLENS_TRACE_BUCKETS`` forces ``B``. ``STACKLENS_TRACE_THREADS``
(default: the cores, at most 2) buckets run at once, each in its share of the budget (``B``
grows by that factor): on 2 cores, 10 M lines, the trace command 33.8 -> 27.6 s, peak RSS the
same (1,029 vs 1,053 MiB; 8 buckets one at a time vs 16 two at a time). What the budget does not bound:
pass 1 (narrow, but the clock frame holds a row per record that can change the offsets,
0.60 M rows of the 35.2 M records of the 100 M-line bench corpus, 9.0 M before it left out
the records of ids seen on one host (:mod:`~stacklens.trace.clockframe`), and linking a row
per record that has an id other than a request id alone, 3.1 M there, plus a row per request
id of the others, 1.0 M: the stage's peak of 1.10 GiB for the 10.5 M records of the 30 M-line
bench corpus and 1.51 GiB for the 100 M-line one, 2026-11-29, the clock phase and linking's
phases 1.2-1.4 GiB each there (3.0 GiB before, in the clock frame and its rules; linking 3.0
before it left the records of a request id alone out; 3.9 GiB there before the clock rules
held request ids categorical; 2.2 GiB at 30 M lines before session 22, 3.7 GiB before
session 12), the
keys it hands to the split (~30 B a record of linking's), the trace ids of an output table and the
phases and flows tables whole (small: 1.8 k and 49 k rows at 30 M lines), and a single
component larger than a bucket's share (a long-lived periodic-task request id makes one
trace of 233 k records there). The buckets' outputs go to temporary files as they are made,
so the working set through the buckets stays at ~0.7 GiB whatever their number; spans,
traces and breakdown are merged from those files a range of trace ids at a time
(:func:`~stacklens.trace.bucketmerge.ranged`) and written part by part: merging whole tables peaked at 1.16-1.21 GiB at
30 M lines and 2.5-2.7 GiB at 100 M, by ranges 0.81 GiB at 30 M and 1.06 GiB at 100 M
(same tables at 30 M).
Time: about the same as the whole-frame path (one more read of the narrow columns and one of
the traced columns, less copying), whatever ``B``.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from stacklens.schema import TABLES, conform
from stacklens.settings import positive_int
from stacklens.trace import LINK_COLUMNS, build_traces, trace_tables
from stacklens.trace.bucketmerge import RANGED, merged, ranged
from stacklens.trace.classify import adopt_orphan_markers
from stacklens.trace.clockframe import clock_frame
from stacklens.trace.clocks import correct_clocks
from stacklens.trace.columnwise import column_wise, in_order
from stacklens.trace.link import global_ids, id_lookup, link_events
from stacklens.trace.reqonly import (
    READS,
    REQ_ONLY,
    ReqOnlyMap,
    day_ranks,
    order_key,
    req_only_ids,
    req_only_keys,
    shifted,
)
from stacklens.vocab import RPC_SENDS, RpcKind

__all__ = [
    "BUCKETS_ENV", "BYTES_PER_EVENT", "DEFAULT_MEM_MIB", "MEM_ENV", "THREADS_ENV", "bucket_count",
    "build_traces_bounded", "iter_traces_bounded", "link_pass", "trace_threads",
]

MEM_ENV = "STACKLENS_TRACE_MEM_MIB"
BUCKETS_ENV = "STACKLENS_TRACE_BUCKETS"
THREADS_ENV = "STACKLENS_TRACE_THREADS"
#: Budget of the trace stage's per-bucket working set, MiB.
DEFAULT_MEM_MIB = 2048
#: Bytes of budget per record. The whole-frame stage peaks at ~2 KB per record (6.8 GB over
#: the 3.5 M records of the 10 M-line bench corpus); the bounded stage also keeps memory that
#: does not shrink with more buckets (pass 1's residue), so a bucket gets less than the whole
#: budget. Set when the buckets' outputs stayed in memory (8 buckets, ~1.96 GB, on that corpus);
#: since they go to files, ``stacklens trace`` of that corpus on 2 cores (15 buckets, two at a
#: time) peaks at 0.97-0.99 GB, and with 8 / 6 / 5 buckets at 1.07-1.15 / 1.19-1.24 / 1.39 GB
#: in no less time (2026-11-27): the margin is kept for logs with longer messages.
BYTES_PER_EVENT = 4500
#: Name prefix of the temporary bucket folders beside the events file (a run killed during
#: the trace stage leaves one; the next trace of that run folder removes it).
_TMP_PREFIX = ".trace-buckets-"
#: Records per batch, at most, of the pass that splits the events into buckets: a row group a
#: batch (the bench corpora's hold 213 k records), a larger one cut into equal slices.
_BATCH = 500_000
#: RPC records whose ``rpc_id`` :func:`~stacklens.trace.spans.build_flows` pairs.
_FLOW_KINDS = [*RPC_SENDS, RpcKind.RECV_CALL.value, RpcKind.RECV_CAST.value,
               RpcKind.REPLY_SEND.value]
#: Records whose message orphan adoption reads (classify.adopt_orphan_markers' ``orphan``).
_ORPHAN = (pl.col("request_id").is_null() & pl.col("rpc_kind").is_null()
           & pl.col("instance_uuid").is_not_null())
#: What linking and orphan adoption read besides ``ts_ns`` and ``message``.
_LINKED = ("request_id", "global_request_id", "instance_uuid", "http_method", "http_path",
           "http_status", "rpc_kind", "rpc_id")
#: Of those, the identifiers linking only compares (equality, joins, first non-null): held as
#: categoricals in pass 1, each distinct id stored once instead of once per record.
_IDS = ("request_id", "global_request_id", "instance_uuid", "rpc_id")
#: Of :data:`_LINKED`, the columns of few distinct values that linking only compares:
#: categorical in pass 1 too (4 bytes a record where a string's view is 16, null or not).
_FEW = ("http_method", "rpc_kind")
#: Of :data:`_LINKED`, the columns no clock rule reads.
_LINK_ONLY = ("instance_uuid", "http_method", "http_path")
#: Columns no rule of :func:`~stacklens.trace.trace_tables` reads (``global_request_id``
#: only linking reads, in pass 1): left out of the buckets (less to split, write, read and
#: sort). If a rule comes to read one, the identity tests against
#: :func:`~stacklens.trace.build_traces` (which keeps every column) fail.
_NOT_IN_BUCKETS = ("user", "project", "global_request_id", "n_lines", "lock_name",
                   "lock_waited_s", "lock_held_s")
#: Rows per row group of the tables a bucket writes sorted by ``trace_id``, with statistics
#: (:data:`~stacklens.trace.bucketmerge.RANGED`), read back by ranges of trace ids.
_BUCKET_ROW_GROUP = 4096


def trace_threads() -> int:
    """Buckets run at once: ``STACKLENS_TRACE_THREADS``, default the machine's cores, at most
    2 (the one size measured: 2 cores). Raises :class:`~stacklens.errors.UserError` on a
    setting that is not a positive integer."""
    return positive_int(THREADS_ENV, min(2, os.cpu_count() or 1))


def bucket_count(n_events: int, mem_mib: int | None = None, threads: int = 1) -> int:
    """Buckets for ``n_events`` records: ``STACKLENS_TRACE_BUCKETS`` when set, else 1 when
    ``n_events * BYTES_PER_EVENT`` fits the budget (``mem_mib``, else
    ``STACKLENS_TRACE_MEM_MIB``, else :data:`DEFAULT_MEM_MIB`), else ``ceil(n_events *
    BYTES_PER_EVENT * threads / budget)``: ``threads`` buckets run at once, each within its
    share of the budget. Raises :class:`~stacklens.errors.UserError` on a setting that is
    not a positive integer."""
    if os.environ.get(BUCKETS_ENV, "").strip():
        return positive_int(BUCKETS_ENV, 1)
    mib = mem_mib if mem_mib is not None else positive_int(MEM_ENV, DEFAULT_MEM_MIB, unit="MiB")
    need = n_events * BYTES_PER_EVENT / (mib * 2**20)
    return 1 if need <= 1 else math.ceil(need * max(1, threads))


def build_traces_bounded(
    events_path: Path,
    columns: Sequence[str],
    buckets: int | None = None,
    on_bucket: Callable[[int, int], None] | None = None,
) -> dict[str, pl.DataFrame]:
    """:func:`~stacklens.trace.build_traces` of the ``columns`` of the events Parquet file
    ``events_path`` (canonical ``events`` columns; ``continuation`` may be left out), in
    ``buckets`` buckets (None: :func:`bucket_count` of the file's rows). Returns the same
    dict of conformed frames, identical to the whole-frame path's (all of them in memory at
    once: :func:`iter_traces_bounded` hands them over one at a time). ``on_bucket(done,
    total)`` is called after each bucket. Raises as :func:`iter_traces_bounded`."""
    parts: dict[str, list[pl.DataFrame]] = {}
    for name, df in iter_traces_bounded(events_path, columns, buckets, on_bucket):
        parts.setdefault(name, []).append(df)
    return {name: dfs[0] if len(dfs) == 1 else pl.concat(dfs) for name, dfs in parts.items()}


def iter_traces_bounded(
    events_path: Path,
    columns: Sequence[str],
    buckets: int | None = None,
    on_bucket: Callable[[int, int], None] | None = None,
    after_clocks: Callable[[], None] | None = None,
) -> Iterator[tuple[str, pl.DataFrame]]:
    """:func:`build_traces_bounded`'s ``(name, part)`` pairs (the ``clock_offsets`` first,
    then ``spans``, ``traces``, ``breakdown``, ``phases``, ``flows``): a table's parts come one
    after another, in row order, and concatenated are the table. ``spans``, ``traces`` and
    ``breakdown`` come in parts of about :data:`~stacklens.trace.bucketmerge.MERGE_ROWS` rows
    (:func:`~stacklens.trace.bucketmerge.ranged`), the other
    tables whole; each part is merged from the buckets' files only when asked for, so a caller
    that writes and drops each (:class:`~stacklens.store.TableWriter`) holds one part at a
    time, not the tables (~0.6 GB of outputs at 30 M lines; merging whole tables peaked at
    2.7 GiB at 100 M lines). Temporary bucket files go to a folder beside ``events_path``,
    removed when the iteration ends or is abandoned (and those of a killed earlier run, at the
    start). ``after_clocks()`` is called once pass 1's clock offsets, the stage's peak, are
    done (at the start when there is one bucket): other work can start then without adding to
    that peak.
    Raises ``OSError`` on unreadable or unwritable files,
    :class:`~stacklens.errors.UserError` on a bad setting."""
    import pyarrow.parquet as papq

    n_rows = papq.ParquetFile(events_path).metadata.num_rows
    threads = trace_threads()
    b = buckets if buckets is not None else bucket_count(n_rows, threads=threads)
    if b <= 1:
        if after_clocks is not None:
            after_clocks()
        out = build_traces(pl.read_parquet(events_path, columns=list(columns)))
        if on_bucket is not None:
            on_bucket(1, 1)
        yield "clock_offsets", out.pop("clock_offsets")
        yield from out.items()
        return
    keys, offsets, ids, days = _link_pass(events_path, columns, b, after_clocks)
    for stale in events_path.parent.glob(_TMP_PREFIX + "*"):  # of a killed earlier run
        shutil.rmtree(stale, ignore_errors=True)
    tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=events_path.parent))
    try:
        _split(events_path, [c for c in columns if c not in _NOT_IN_BUCKETS], keys, tmp,
               ReqOnlyMap.of(ids, days, offsets))
        del keys, ids
        # each bucket's tables go to files and are read back table by table at the end: held
        # in memory, their strings would keep the bucket's string buffers alive (a gathered or
        # filtered string column shares its source's buffers), ~80 MB per bucket at 30 M lines
        made: dict[str, list[Path]] = {}

        def one(i: int) -> dict[str, Path]:
            files = sorted((tmp / str(i)).glob("*.parquet"))
            got: dict[str, Path] = {}
            if files:
                linked = pl.read_parquet(files).sort("ts_ns", "eid")
                for name, df in trace_tables(linked).items():
                    f = tmp / "out" / name / f"{i:06d}.parquet"
                    f.parent.mkdir(parents=True, exist_ok=True)
                    if name in RANGED:  # sorted, with statistics: read back by ranges
                        df.sort("trace_id", maintain_order=True).write_parquet(
                            f, compression="lz4", statistics=True,
                            row_group_size=_BUCKET_ROW_GROUP)
                    else:
                        df.write_parquet(f, compression="lz4", statistics=False)
                    got[name] = f
                del linked
            return got

        # buckets share nothing: ``threads`` at once (Polars releases the GIL), in order
        with ThreadPoolExecutor(max(1, min(threads, b))) as ex:
            for i, got in enumerate(ex.map(one, range(b))):
                for name, f in got.items():
                    made.setdefault(name, []).append(f)
                if on_bucket is not None:
                    on_bucket(i + 1, b)
        yield "clock_offsets", conform(offsets, "clock_offsets")
        for name in RANGED:
            for part in ranged(name, made.get(name, [])):
                yield name, part
        yield from merged(lambda name: [pl.read_parquet(f) for f in made.get(name, [])],
                           names=("phases", "flows"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def link_pass(path: Path, columns: Sequence[str], b: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Global linking on narrow columns. Returns ``(keys, clock_offsets)``: ``keys`` has one
    row per record of a trace, sorted by ``_row`` (UInt32, the row in the events file):
    ``eid`` (UInt64, :func:`~stacklens.trace.reqonly.order_key`: the record's place in
    :func:`~stacklens.trace.link_all`'s order on equal time), ``ts_ns`` (Int64, corrected),
    ``req_local``, ``trace_id`` (Categorical), ``_b`` (UInt32 bucket). The records linked by
    their request id alone get theirs in one streaming read (memory: ~30 B a record; the
    bounded stage's split makes them batch by batch instead)."""
    keys, offsets, ids, days = _link_pass(path, columns, b)
    lf = pl.scan_parquet(path, row_index_name="_row").select("_row", *READS)
    plain = req_only_keys(lf, ReqOnlyMap.of(ids, days, offsets)).collect(engine="streaming")
    held = [pl.concat([keys, plain.select(keys.columns)])]
    del keys, plain
    return in_order(held, pl.col("_row")), offsets


def _link_pass(path: Path, columns: Sequence[str], b: int,
               after_clocks: Callable[[], None] | None = None,
               ) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame | None]:
    """Global linking on narrow columns, the records linked by their request id alone
    (:data:`~stacklens.trace.reqonly.REQ_ONLY`) held as one row per request id. Returns
    ``(keys, clock_offsets, ids, days)``: ``keys`` as :func:`link_pass`'s for the other records
    of a trace; ``ids`` the request ids of those records, ``request_id``, ``trace_id``
    (Categorical), ``_b`` (UInt32 bucket); ``days``:
    :func:`~stacklens.trace.reqonly.day_ranks`. ``after_clocks()`` is called once the offsets
    are found."""
    offsets = _offsets(path, columns)
    if after_clocks is not None:
        after_clocks()
    days = day_ranks(path, offsets)
    # a record with no request id, global request id, instance or RPC id is linked by no rule
    # (nor adopted: orphans have an instance): left out (37 % of the records of the 30 M-line
    # bench corpus), and so are those linked by their request id alone (another 54 %: a row
    # per request id, below); the rest keep their relative order among all records
    keyed = pl.any_horizontal(pl.col(c).is_not_null() for c in _IDS) & ~REQ_ONLY
    # unsorted: nothing below reads the records in time order but orphan adoption, which
    # sorts the few columns it reads that way (a sort of the whole frame copied it)
    linked = link_events(_corrected(path, offsets, keyed, days), sort=False)
    ids = req_only_ids(path, offsets)
    ids = ids.with_columns(trace_id=pl.coalesce(
        id_lookup("request_id", global_ids(linked), "global_request_id"), "request_id"))
    linked = adopt_orphan_markers(
        linked, starts=ids.group_by("trace_id").agg(_t0=pl.col("t0").min()))
    # the ids stay categorical (each distinct id stored once): as strings, the traced
    # records' trace and request ids were ~0.7 GB more at 30 M lines; _split makes them strings
    # a batch at a time
    # only what the keys and the components read, the other columns let go before the
    # filter, which copies the kept ones a column at a time (columnwise.column_wise)
    held = [linked.select("_row", "eid", "ts_ns", "req_local", "trace_id", "rpc_id", "rpc_kind")
            .with_columns(pl.col("trace_id", "req_local").cast(pl.Categorical))]
    del linked
    traced = held[0].get_column("trace_id").is_not_null()
    linked = held.pop() if traced.all() else column_wise(held, lambda s: s.filter(traced))
    # the component and bucket maps applied as new columns (a join copied every column)
    comps = _components(linked)
    comp = pl.coalesce(id_lookup("trace_id", comps, "_comp"), "trace_id")
    keys = linked.select("_row", "eid", "ts_ns", "req_local", "trace_id").with_columns(_comp=comp)
    del linked
    ids = ids.with_columns(_comp=comp)
    sizes = pl.concat([keys.group_by("_comp").agg(n=pl.len().cast(pl.UInt64)),
                       ids.group_by("_comp").agg(pl.col("n").sum().cast(pl.UInt64))])
    bmap = _pack(sizes.group_by("_comp").agg(pl.col("n").sum()), b)
    ids = ids.select("request_id", "trace_id", _b=id_lookup("_comp", bmap, "_b"))
    held = [keys.with_columns(_b=id_lookup("_comp", bmap, "_b")).drop("_comp")]
    del keys
    return in_order(held, pl.col("_row")), offsets, ids, days


def _offsets(path: Path, columns: Sequence[str]) -> pl.DataFrame:
    """The ``clock_offsets`` of :func:`~stacklens.trace.clocks.correct_clocks` (conformed),
    from the columns the clock rules read, of the records that can change them
    (:func:`~stacklens.trace.clockframe.clock_frame`). A single host is found from the
    ``host`` column alone (no offsets)."""
    if pl.scan_parquet(path).select(pl.col("host").drop_nulls().n_unique()).collect().item() < 2:
        return pl.DataFrame(schema=TABLES["clock_offsets"])
    cols = [c for c in columns if c in LINK_COLUMNS and c not in _LINK_ONLY]
    return correct_clocks(clock_frame(path, cols), apply=False)[1]


def _corrected(path: Path, offsets: pl.DataFrame, keep: pl.Expr,
               days: pl.DataFrame | None) -> pl.DataFrame:
    """What linking and orphan adoption read, on corrected time, in ``correct_clocks``' row
    order (grouped by UTC day, days in order of first record, when there are offsets):
    ``_row`` (UInt32, the row in the file), ``eid`` (UInt64,
    :func:`~stacklens.trace.reqonly.order_key` of ``days``), ``ts_ns`` and the columns of
    :data:`_LINKED`, ``message`` only for orphan candidates; only the records ``keep`` is true
    of, in the relative order they have among all records. The offsets are applied per (host,
    day) as :func:`~stacklens.trace.skew.apply_offsets` does, and ``keep`` filters, inside the
    streaming read (a join of the few (host, day) shifts per batch, not of the whole frame,
    and no filtered copy), and the day order is restored a column at a time (a frame's sort
    copies every column at once): 2.3 -> 1.2 GiB peak on its own for the 10.5 M records of
    the 30 M-line bench corpus."""
    scan = pl.scan_parquet(path, row_index_name="_row")  # streams, unlike with_row_index
    # the orphans' messages in a read of their own: a filtered scan decodes only their pages,
    # where a column expression would decode every record's message (~0.5 GB more at 10 M lines)
    said = scan.filter(_ORPHAN).select("_row", "message").collect(engine="streaming")
    # ``http_path`` categorical too: set on access lines only, as a string it was a 16-byte
    # view on every record (the 6.6 M keyed records of the 30 M-line bench corpus: 163 MiB
    # resident); orphan adoption, its one reader here, casts it back to text
    lf = shifted(scan.select("_row", "ts_ns", "host", *_LINKED), offsets)
    ev = (lf.with_columns(order_key(days)).filter(keep)
          .select("_row", "eid", "ts_ns", *_LINKED)
          .with_columns(pl.col(*_IDS, *_FEW, "http_path").cast(pl.Categorical))
          .collect(engine="streaming"))
    # put in place by row number: a join would copy every column for these few messages;
    # categorical, as http_method and rpc_kind: a string column holds a 16-byte view per
    # record, null or not (linking and orphan adoption of the 6.6 M keyed records of the 30 M
    # line bench corpus: 1.48 -> 1.02 GB peak above their input, jemalloc purging at once)
    ev = ev.with_columns(message=pl.col("_row").replace_strict(
        said.get_column("_row"), said.get_column("message"), default=None,
        return_dtype=pl.Categorical))
    # correct_clocks' order (eid's): grouped by UTC day (of the uncorrected time), days in
    # order of their first record among all the file's records (stable; the filter keeps the
    # rest's relative order, so this is the filtered whole-frame order)
    held = [ev]
    del ev
    return in_order(held, pl.col("eid"))


def _pack(sizes: pl.DataFrame, b: int) -> pl.DataFrame:
    """``_comp`` -> ``_b`` (UInt32): components (``sizes``: ``_comp``, ``n`` its records) into
    ``b`` buckets by size, largest first into the least filled bucket, so the buckets hold
    about the same number of records."""
    import heapq

    sizes = sizes.sort(  # ties by the component's name (as text: a categorical sorts otherwise)
        ["n", pl.col("_comp").cast(pl.String)], descending=[True, False])
    heap = [(0, i) for i in range(b)]
    out: list[int] = []
    put, least_to = out.append, heapq.heapreplace  # (load, i) are distinct: the same picks
    for n in sizes.get_column("n").to_list():  # as heappop + heappush, ~1.6x faster
        load, i = heap[0]
        put(i)
        least_to(heap, (load + n, i))
    return sizes.select("_comp", _b=pl.Series(out, dtype=pl.UInt32))


def _components(linked: pl.DataFrame) -> pl.DataFrame:
    """``trace_id`` -> ``_comp`` (a trace id standing for the component) for the traces that
    share an ``rpc_id`` with another trace (union-find); other traces are their own."""
    rp = (
        linked.filter(pl.col("rpc_id").is_not_null() & pl.col("rpc_kind").is_in(_FLOW_KINDS))
        .select(pl.col("rpc_id", "trace_id").cast(pl.String))
        .unique()
        .filter(pl.len().over("rpc_id") > 1)
        .sort("rpc_id", "trace_id")
    )
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while parent.get(x, x) != root:
            parent[x], x = root, parent[x]
        return root

    for _rid, traces in rp.group_by("rpc_id", maintain_order=True).agg("trace_id").iter_rows():
        first = find(traces[0])
        for t in traces[1:]:
            r = find(t)
            if r != first:
                lo, hi = sorted((first, r))
                parent[hi] = lo
                first = lo
    names = sorted(parent)
    return pl.DataFrame(
        {"trace_id": names, "_comp": [find(t) for t in names]},
        schema={"trace_id": pl.String, "_comp": pl.String},
    ).cast(pl.Categorical)


def _split(path: Path, columns: Sequence[str], keys: pl.DataFrame, tmp: Path,
           plain: ReqOnlyMap | None = None) -> None:
    """Write each record of a trace (``eid``, ``columns`` with ``ts_ns`` corrected,
    ``req_local``, ``trace_id``: :func:`~stacklens.trace.link_all`'s columns and order) to
    ``tmp/<bucket>/<batch>.parquet``: the records of ``keys`` (:func:`link_pass`'s) and, with
    ``plain`` (of :func:`_link_pass`), the records linked by their request id alone, their
    keys made a batch at a time (:func:`~stacklens.trace.reqonly.req_only_keys`)."""
    import pyarrow.parquet as papq

    schema = {c: TABLES["events"][c] for c in columns}
    rows = keys.get_column("_row")
    md = papq.ParquetFile(path).metadata
    # a row group at a time (larger ones in slices), read by Polars: pyarrow's ``iter_batches``
    # held ~0.7 GB more through the split of the 30 M-line bench corpus (its reader and its
    # own allocator, which keeps what it freed), and was 1.3 s slower
    sizes = []
    for rg in range(md.num_row_groups):
        n_rg = md.row_group(rg).num_rows
        cut = math.ceil(n_rg / _BATCH)
        sizes += [n_rg // cut + (j < n_rg % cut) for j in range(cut)]
    extra = [c for c in READS if c not in columns] if plain is not None else []
    scan = pl.scan_parquet(path).select(*columns, *extra)
    off = 0
    for i, n in enumerate(sizes):
        lo, hi = int(rows.search_sorted(off)), int(rows.search_sorted(off + n))
        k = keys.slice(lo, hi - lo)
        off += n
        df = scan.slice(off - n, n).collect()
        if plain is not None:
            got = req_only_keys(df.lazy().with_row_index("_row", offset=off - n), plain)
            k = pl.concat([k, got.collect().select(k.columns)])
        if not k.height:
            continue
        idx = (k.get_column("_row").cast(pl.Int64) - (off - n)).alias("_i")
        df = (df.select(columns).cast(schema)  # type: ignore[arg-type]
              .select(pl.all().gather(idx)).with_columns(ts_ns=k.get_column("ts_ns")))
        df = pl.concat([k.select("eid"), df, k.select(
            pl.col("req_local", "trace_id").cast(pl.String), "_b")], how="horizontal")
        for (bk,), g in df.partition_by("_b", as_dict=True, include_key=False).items():
            d = tmp / str(bk)
            d.mkdir(exist_ok=True)
            g.write_parquet(d / f"{i:06d}.parquet", compression="lz4")
