"""Spans (one episode of one process's work for one trace) and flows (causal edges).

Episodes. The records of a trace are first split by process (service, host, pid) and by the
local request the process served (``req_local``: the record's own request id; for an RPC
receipt the sender's; records without one join the process's nearest request). Placement,
neutron, cinder and glance log the caller's global request id (Pike on) beside their own, so
the many HTTP requests nova makes within one trace stay apart. Within each such group, sorted by
time, a new episode (a new span) starts at:

* each RPC message received (``received message msg_id`` / ``with unique_id``, oslo.messaging
  amqpdriver DEBUG): a conductor answering ten calls of one build shows ten spans, as
  OSProfiler would draw them;
* each periodic task run (``Running periodic task``, oslo.service ``periodic_task.py``): the
  periodic context keeps one request id for the life of the process;
* each API request started (``Starting request: ip "GET /x"``, placement and nova
  ``requestlog.py`` DEBUG, Pike..2025.1);
* each connection or server event of an eventlet server (``(pid) accepted ('ip', port)``,
  ``(pid) timed out ('ip', port)``, ``(pid) wsgi starting up on``, ``(pid) wsgi exited``,
  eventlet ``wsgi.py``; logged under whatever context the thread had left over, minutes after
  that request);
* the record after a server's API access line or after an RPC reply sent (``sending reply
  msg_id``): these close the request or call they answer, so a re-entry with the same id (a
  retry, a second call of one global request) is a new span. The access line's request start
  (its time minus its logged duration) belongs to the access line's episode. A client
  (tempest) line does not close: tempest logs the request's details after it. A reply that
  answers a call opened in another episode closes that one (a nested call resumes its caller);
  a reply to a call whose receipt is not in this group is an episode of its own.
  Why cut rather than keep later records in the answered request's span: eventlet and
  oslo.messaging keep the thread-local context of the last request, so records logged
  after a request (the next request's first lines, keep-alive time-outs, replies of other
  calls) carry its id minutes later (seen as 500 s neutron-server and 1000 s conductor spans).

Idle time alone never cuts a span: a build waiting 300 s for ``network-vif-plugged`` is one span.

A span's start is the earliest of: its first record, the receipt of the first RPC message it
handled, and for an access or client (tempest ``rest_client``) line, the line's time minus its
logged duration. Its end is its last record; ``end_exact`` says whether that record marks a
completion (an access line, a client line, an RPC reply sent, a ``Took N seconds to build
instance``) rather than merely the last thing logged.

Flows: one per RPC message id whose sender and receiver spans are both known (``rpc_call``,
``rpc_cast``), and one from each client span to the API span of the trace whose request start
is nearest the client's (``http``). A span's parent is the sender of its earliest incoming
flow, else the trace's root span.
"""

from __future__ import annotations

import polars as pl

from stacklens.settings import native_enabled
from stacklens.vocab import ERROR_LEVELS, RPC_SENDS, RpcKind, is_client

try:  # the native kernel is optional (native/, built by pip install .)
    import stacklens_native as _native
except ImportError:  # pragma: no cover - depends on the installation
    _native = None

__all__ = ["build_flows", "build_spans", "timed_events"]

_COMPLETION = (
    pl.col("http_status").is_not_null()
    | (pl.col("rpc_kind") == RpcKind.REPLY_SEND)
    | pl.col("took_what").str.starts_with("build instance")
)

#: A record of a named server logger. Not the negation of :func:`~stacklens.vocab.is_client`:
#: a record without a logger is neither, and opens no access span nor answers an API call.
_SERVER = pl.col("logger").is_not_null() & ~is_client()


def _span_id() -> pl.Expr:
    """``<trace>:<service>@<host>/<pid>.<n>``: ``n`` numbers the process's episodes of the
    trace in start order (0, 1, ...)."""
    return pl.concat_str(
        [
            pl.col("trace_id"), pl.lit(":"), pl.col("service"), pl.lit("@"), pl.col("host"),
            pl.lit("/"), pl.col("pid").cast(pl.String).fill_null("-"), pl.lit("."),
            pl.col("_episode").cast(pl.String),
        ]
    )


_PROC = ["trace_id", "service", "host", "pid"]
# oslo.service periodic_task.py; eventlet wsgi.py: "(%s) accepted %r", "(%s) wsgi starting up
# on %s", "(%s) wsgi exited, is_accepting=%s" (server()) and "(%s) timed out %r" (keep-alive
# connection closed, handle()); placement
# and nova (Pike..) requestlog.py: 'Starting request: %s "%s %s"'
_STARTS = (
    r"^Running periodic task |^\(\d+\) (?:accepted|timed out|wsgi starting up|wsgi exited)"
    r"|^Starting request: "
)


#: ``rpc_kind`` -> the native kernel's kind code (``native/src/episodes.rs``)
_KIND_CODES = {RpcKind.RECV_CALL.value: 1, RpcKind.RECV_CAST.value: 2,
               RpcKind.REPLY_SEND.value: 3}
_NO_RPC = 2**32 - 1


def _episode_numbers(nar: pl.DataFrame) -> pl.Series:
    """:func:`_assign` of ``nar``'s rows (columns ``_g`` group number, ``_k`` RPC kind, ``_r``
    RPC id, ``_m`` marker, ``_a`` server access; sorted as :func:`_assign` wants), as an Int64
    Series. On the native kernel when ``stacklens_native`` has it (the same state machine on
    integer codes: ~2.5 s of Python for 2.2 M records), else the Python reference."""
    fast = getattr(_native, "episodes", None) if native_enabled() else None
    if fast is None:
        return pl.Series(_assign(*(nar[c].to_list() for c in ("_g", "_k", "_r", "_m", "_a"))),
                         dtype=pl.Int64)
    codes = nar.select(
        pl.col("_g").cast(pl.UInt32),
        pl.col("_k").cast(pl.String).replace_strict(_KIND_CODES, default=0,
                                                    return_dtype=pl.UInt8),
        # equal ids get equal codes within one cast; no id: u32::MAX
        pl.col("_r").cast(pl.String).cast(pl.Categorical).to_physical().cast(pl.UInt32)
        .fill_null(_NO_RPC),
        pl.col("_m").cast(pl.UInt8),
        pl.col("_a").cast(pl.UInt8),
    )
    arrays = [codes.to_series(i).to_numpy().astype(f"<{t}", copy=False).tobytes()
              for i, t in enumerate(("u4", "u1", "u4", "u1", "u1"))]
    return pl.Series(fast(*arrays)).struct.unnest().to_series(0)


def _assign(
    group: list[int],
    kind: list[str | None],
    rpc: list[str | None],
    marker: list[bool],
    access: list[bool],
) -> list[int]:
    """Episode number of each row (rows sorted by key, then time); rules in the module
    docstring. ``group`` changes value where a new (process, local request) key starts. The
    reference of the native kernel (``native/src/episodes.rs``) and its fallback."""
    out = [0] * len(group)
    n_ep = 0
    prev_g = None
    open_: list[tuple[int, str | None]] = []  # (episode, rpc id it handles) still open
    for i, g in enumerate(group):
        if g != prev_g:
            prev_g, open_ = g, []
        k = kind[i]
        opened_here = False
        if k in (RpcKind.RECV_CALL, RpcKind.RECV_CAST):
            n_ep += 1
            open_.append((n_ep, rpc[i] if k == RpcKind.RECV_CALL else None))
        elif marker[i] or not open_:
            # a sequential start: episodes no reply can close end here
            open_ = [e for e in open_ if e[1] is not None]
            n_ep += 1
            open_.append((n_ep, None))
            opened_here = not marker[i]
        if k == RpcKind.REPLY_SEND:
            hit = [j for j, e in enumerate(open_) if e[1] is not None and e[1] == rpc[i]]
            if not hit and opened_here:
                out[i] = open_.pop()[0]  # a reply to a call not handled here: its own episode
                continue
            j = hit[-1] if hit else len(open_) - 1
            out[i] = open_[j][0]
            if hit or open_[j][1] is None:
                del open_[j]
            continue
        out[i] = open_[-1][0]
        if access[i]:
            open_.pop()
    return out


def _episodes(ev: pl.DataFrame) -> pl.DataFrame:
    """``ev`` (real records of traces) plus ``span_id`` (:func:`_span_id`: the process's
    episode number, in start order); rules in the module docstring. Rows stay in ``ev``'s
    order: the episodes are found on a narrow frame (the keys, times and flags), so the wide
    records are never sorted here.

    Each process of a trace (``_PROC``) is one integer ``_p`` for the sorts, windows and
    joins (string keys cost ~40 % of the time). Its numbering is arbitrary: an episode is
    found within one (process, local request) group in time order, and numbered by its start
    within its process, so the groups' order changes nothing."""
    loc = pl.col("req_local") if "req_local" in ev.columns else pl.col("request_id")
    server_access = pl.col("http_status").is_not_null() & _SERVER
    nar = ev.select(
        *_PROC, "ts_ns", "eid", _loc=loc, _k=pl.col("rpc_kind"), _r=pl.col("rpc_id"),
        _m=pl.col("message").str.contains(_STARTS).fill_null(False),
        _a=server_access.fill_null(False),
    ).with_row_index("_row")
    procs = nar.select(_PROC).unique().with_row_index("_p")
    nar = nar.join(procs, on=_PROC, how="left", nulls_equal=True).drop(_PROC)
    nar = nar.sort("_p", "ts_ns", "eid")
    nar = nar.with_columns(_loc=pl.col("_loc").forward_fill().backward_fill().over("_p"))
    nar = nar.sort("_p", "_loc", "ts_ns", "eid", nulls_last=True)
    # a new (process, local request) group where either key differs from the row before
    g = pl.any_horizontal(pl.col(c).ne_missing(pl.col(c).shift(1)) for c in ("_p", "_loc"))
    nar = nar.with_columns(_g=g.fill_null(True).cum_sum())
    nar = nar.with_columns(_ep=_episode_numbers(nar))
    # episode numbers are unique across processes: each one's start, then its rank within
    # its process by (start, first eid): its row minus its process's first row, once sorted
    # (int_range().over("_p") ran process by process: 0.10 -> 0.02 s on 395 k records)
    k = pl.col("_k")
    new_proc = pl.col("_p").ne_missing(pl.col("_p").shift(1)).fill_null(True)
    first = (
        nar.group_by("_ep")
        .agg(pl.col("_p").first(), pl.col("ts_ns").min().alias("_t0"),
             pl.col("eid").min().alias("_e0"))
        .sort("_p", "_t0", "_e0")
        .with_columns(_k=pl.int_range(pl.len(), dtype=pl.Int64))
        .select("_ep", "_p", _episode=k - pl.when(new_proc).then(k).forward_fill())
    )
    # the span id built once per episode (a string per record cost 0.12 s on 445 k records)
    ids = first.join(procs, on="_p", how="left").select("_ep", span_id=_span_id())
    nar = nar.join(ids, on="_ep", how="left")
    return ev.with_columns(nar.sort("_row").get_column("span_id"))


def timed_events(linked: pl.DataFrame) -> pl.DataFrame:
    """Linked events of traces plus one synthetic start event per access/client line (at
    ``ts_ns - http_dur_s``), with ``span_id`` (episodes: module docstring). Columns: those of
    ``linked`` plus ``span_id``, ``synthetic`` (Boolean); sorted by trace, time, ``eid``."""
    ev = linked.filter(pl.col("trace_id").is_not_null()).with_columns(synthetic=pl.lit(False))
    ev = _episodes(ev)
    dur_ns = (pl.col("http_dur_s") * 1e9).cast(pl.Int64, strict=False)
    starts = ev.filter(pl.col("http_dur_s").is_not_null() & dur_ns.is_not_null()).with_columns(
        ts_ns=pl.col("ts_ns") - dur_ns,
        synthetic=pl.lit(True),
        level=pl.lit("START"),
        http_status=pl.lit(None, dtype=pl.Int32),
        http_dur_s=pl.lit(None, dtype=pl.Float64),
        message=pl.lit("(request start = logged time - logged duration)"),
    )
    return pl.concat([ev, starts]).sort("trace_id", "ts_ns", "eid", maintain_order=True)


def build_spans(tev: pl.DataFrame, operation_of_span: pl.Expr) -> pl.DataFrame:
    """Spans from :func:`timed_events` output. ``operation_of_span`` is an aggregation
    expression naming each span's operation. Columns as :data:`stacklens.schema.SPANS` (parent
    filled by :func:`build_flows`)."""
    is_err = pl.col("level").is_in(ERROR_LEVELS)
    return (
        tev.group_by("span_id", maintain_order=True)
        .agg(
            pl.col("trace_id").first(),
            pl.col("request_id").drop_nulls().first(),
            pl.col("host").first(),
            pl.col("service").first(),
            pl.col("pid").drop_nulls().first(),
            operation_of_span.alias("operation"),
            pl.col("ts_ns").min().alias("start_ns"),
            pl.col("ts_ns").max().alias("end_ns"),
            _COMPLETION.sort_by("ts_ns").last().alias("end_exact"),
            is_err.any().alias("_err"),
            pl.col("message").filter(is_err).first().alias("error"),
            (~pl.col("synthetic")).sum().cast(pl.Int64).alias("n_events"),
        )
        .with_columns(
            status=pl.when(pl.col("_err")).then(pl.lit("error")).otherwise(pl.lit("ok")),
            end_exact=pl.col("end_exact").fill_null(False),
        )
        .drop("_err")
    )


def build_flows(tev: pl.DataFrame, spans: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Flows between spans and the spans with ``parent_span_id`` set.

    Returns ``(flows, spans)``; flows have :data:`stacklens.schema.FLOWS` columns."""
    reply = RpcKind.REPLY_SEND
    send = tev.filter(pl.col("rpc_kind").is_in(RPC_SENDS)).select(
        "trace_id",
        "rpc_id",
        pl.col("span_id").alias("src_span_id"),
        pl.col("ts_ns").alias("send_ns"),
        pl.concat_str([pl.lit("rpc_"), pl.col("rpc_kind")]).alias("kind"),
        pl.col("rpc_topic").alias("_topic"),
    )
    # the receiving span: a logged receipt, else the span that sent the reply
    recv = (
        tev.filter(pl.col("rpc_kind").is_in([RpcKind.RECV_CALL, RpcKind.RECV_CAST, reply]))
        .sort(pl.col("rpc_kind") == reply, "ts_ns", maintain_order=True)
        .group_by("rpc_id", maintain_order=True)
        .agg(
            pl.col("span_id").first().alias("dst_span_id"),
            pl.col("ts_ns").filter(pl.col("rpc_kind") != reply).first().alias("recv_ns"),
        )
    )
    rpc = send.join(recv, on="rpc_id", how="inner", maintain_order="left").filter(
        pl.col("src_span_id") != pl.col("dst_span_id")
    )
    client = tev.filter(is_client() & pl.col("synthetic"))
    api = tev.filter(_SERVER & pl.col("synthetic"))
    http = (
        client.select("trace_id", pl.col("span_id").alias("src_span_id"), pl.col("ts_ns").alias("send_ns"))
        .sort("send_ns", maintain_order=True)
        .join_asof(
            api.select("trace_id", pl.col("span_id").alias("dst_span_id"), pl.col("ts_ns").alias("recv_ns"))
            .sort("recv_ns"),
            left_on="send_ns", right_on="recv_ns", by="trace_id", strategy="nearest",
            check_sortedness=False,
        )
        .filter(pl.col("dst_span_id").is_not_null())
        .with_columns(kind=pl.lit("http"), rpc_id=pl.lit(None, dtype=pl.String))
    )
    flows = pl.concat([rpc, http], how="diagonal_relaxed").unique(
        ["src_span_id", "dst_span_id", "rpc_id"], keep="first", maintain_order=True
    )
    first_in = (
        flows.sort("send_ns", maintain_order=True)
        .group_by("dst_span_id", maintain_order=True)
        .agg(
            pl.col("src_span_id").first().alias("parent_span_id"),
            # a span that handles an RPC message is named after it: "call conductor"
            pl.concat_str([pl.col("kind").str.replace("rpc_", ""), pl.lit(" "), pl.col("_topic")])
            .first()
            .alias("_handled"),
        )
        .rename({"dst_span_id": "span_id"})
    )
    root = (
        spans.sort("start_ns", maintain_order=True)
        .group_by("trace_id", maintain_order=True)
        .agg(pl.col("span_id").first().alias("_root"))
    )
    spans = (
        spans.join(first_in, on="span_id", how="left", maintain_order="left")
        .join(root, on="trace_id", how="left", maintain_order="left")
        .with_columns(
            parent_span_id=pl.when(pl.col("span_id") == pl.col("_root"))
            .then(None)
            .otherwise(pl.coalesce("parent_span_id", "_root")),
            operation=pl.when(pl.col("_handled").is_not_null() & (pl.col("operation") != "http"))
            .then(pl.col("_handled"))
            .otherwise(pl.col("operation")),
        )
        .drop("_root", "_handled")
    )
    # a receipt can precede the span's first record: start the span there
    recv_start = (
        flows.filter(pl.col("recv_ns").is_not_null())
        .group_by("dst_span_id")
        .agg(pl.col("recv_ns").min().alias("_r"))
        .rename({"dst_span_id": "span_id"})
    )
    spans = (
        spans.join(recv_start, on="span_id", how="left", maintain_order="left")
        .with_columns(start_ns=pl.min_horizontal("start_ns", "_r"))
        .drop("_r")
    )
    return flows, spans
