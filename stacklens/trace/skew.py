"""Clock-skew correction between hosts, from causal pairs in the logs.

Hosts' clocks disagree by milliseconds to seconds, so a callee can seem to answer before its
caller asked (field-notes section 3). Every pair of records where one *must* have happened
before the other (Lamport's happened-before: a message is sent before it is received), on two
hosts, bounds the difference of the two hosts' clock offsets; all pairs together form a system
of difference constraints, solved exactly by shortest paths (Cormen, Leiserson, Rivest, Stein,
*Introduction to Algorithms*, 3rd ed., section 24.4 "Difference constraints and shortest
paths"). Offline synchronisation of traces from message causality: Duda, Harrus, Haddad,
Bernard, "Estimating Global Time in Distributed Systems", ICDCS 1987 (the feasible region of
offsets, its midpoint as estimate); Jezequel, "Building a global time on parallel machines",
INRIA 1989; Poirier, Roy, Dagenais, "Accurate offline synchronization of distributed traces
using kernel-level events", ACM SIGOPS OSR 2010 (bounds on accuracy per pair of nodes).

Convention: ``offset[h]`` (seconds) is what to ADD to host ``h``'s timestamps to express them
on the reference host's clock; the reference's offset is 0. A constraint row says
``offset[dst_host] - offset[src_host] >= lower_s``. It comes from a record at ``src_ts_ns``
on ``src_host`` that truly happened before a record at ``dst_ts_ns`` on ``dst_host``:
``src_ts + offset[src] < dst_ts + offset[dst]``, hence
``lower_s = (src_ts - dst_ts) / 1e9 - slack``, where the slack covers the logs' timestamp
resolution (oslo.log truncates to milliseconds). Raw timestamps violate a row when
``lower_s > 0``: the effect is logged before its cause.

Functions are pure: polars in, polars out, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from stacklens.schema import Columns
from stacklens.trace.causal import (
    MIN_ENGINE,
    categorical_ids,
    http_callee_rows,
    http_caller_rows,
    origin_rows,
    schedule_rows,
)
from stacklens.vocab import RPC_SENDS, RpcKind, is_client

__all__ = [
    "CONSTRAINTS", "SkewResult", "apply_offsets", "causal_constraints", "clock_messages",
    "clock_text", "context_dump", "context_dump_text", "estimate_offsets",
]

#: One row per cross-host causal pair (see the module docstring for the meaning of lower_s).
CONSTRAINTS: Columns = {
    "src_host": pl.String,  # host of the record that happened first
    "dst_host": pl.String,  # host of the record that happened after it
    "lower_s": pl.Float64,  # offset[dst] - offset[src] >= lower_s, seconds
    "kind": pl.String,  # rpc_call, rpc_cast, rpc_reply, http_start, http_end, rpc_context,
    # http_callee, http_caller, http_origin, schedule_build (stacklens.trace.causal)
    "key": pl.String,  # rpc_id, or request_id (http_*, rpc_context)
    "src_ts_ns": pl.Int64,  # raw timestamp of the earlier record, on src_host's clock
    "dst_ts_ns": pl.Int64,  # raw timestamp of the later record, on dst_host's clock
}

_SENDS = {k: f"rpc_{k}" for k in RPC_SENDS}  # call -> rpc_call, cast -> rpc_cast
_KILO_SEND = r"^(?:MSG_ID|UNIQUE_ID) is [0-9a-f]{32}"
_KILO_RECV_RID = r"^unpacked context: \{.*'request_id': u?'(req-[0-9a-f-]+)'"
#: one ``'request_id': '<id>'`` item of a dump (:data:`_KILO_RECV_RID` takes the last on the
#: first line: its ``.*`` is greedy). Two items overlap only where one's closing quote opens
#: the next (``...'req-3c'request_id': ...``): :func:`_dump_request_id` doubles that quote
#: first, so that a search of items one after another sees both
_RID_ITEM = r"'request_id': u?'req-[0-9a-f-]+'"


def _dump_request_id(msg: pl.Expr) -> pl.Expr:
    """``msg.str.extract(_KILO_RECV_RID, 1)`` (String, null where there is none), found as the
    last ``'request_id'`` item of a one-line dump by a search without captures: the greedy
    ``.*`` made the capture engines walk every dump (1.27 s against 0.25 s for 562 k dumps,
    same ids). A message with a newline takes the pattern itself (``.`` stops there)."""
    nl = msg.str.contains("\n", literal=True)
    # a quote shared by two items given to each (a doubled quote makes no item and breaks none:
    # an item's other quotes are never followed by ``request_id'``); never seen in real dumps
    shared = msg.str.contains(r"[0-9a-f-]'request_id'")
    items = pl.when(shared).then(msg.str.replace_all("'request_id'", "''request_id'",
                                                      literal=True)).otherwise(msg)
    last = items.str.extract_all(_RID_ITEM).list.last().str.extract(r"'(req-[0-9a-f-]+)'$", 1)
    one_line = pl.when(msg.str.starts_with("unpacked context: {") & ~nl).then(last)
    return pl.coalesce(one_line, pl.when(nl).then(msg).str.extract(_KILO_RECV_RID, 1))


def _rows(src: pl.DataFrame, dst: pl.DataFrame, on: str, kind: str, slack_s: float) -> pl.DataFrame:
    """Join ``src`` (key, src_host, src_ts_ns) to ``dst`` (key, dst_host, dst_ts_ns) on ``on``,
    keep cross-host pairs, compute ``lower_s``."""
    return (
        src.join(dst, on=on)
        .filter(pl.col("src_host") != pl.col("dst_host"))
        .select(
            "src_host",
            "dst_host",
            lower_s=(pl.col("src_ts_ns") - pl.col("dst_ts_ns")) / 1e9 - slack_s,
            kind=pl.lit(kind),
            key=pl.col(on),
            src_ts_ns="src_ts_ns",
            dst_ts_ns="dst_ts_ns",
        )
    )


def _first(ev: pl.DataFrame, by: str, prefix: str, one_host: bool) -> pl.DataFrame:
    """Earliest record per (``by``, host); with ``one_host`` keep keys seen on one host only."""
    g = ev.lazy().group_by(by, "host").agg(pl.col("ts_ns").min()).collect(engine=MIN_ENGINE)
    if one_host:
        g = g.filter(pl.len().over(by) == 1)
    return g.rename({"host": f"{prefix}_host", "ts_ns": f"{prefix}_ts_ns"})


def _rpc_rows(ev: pl.DataFrame, res: float) -> list[pl.DataFrame]:
    kind = pl.col("rpc_kind")
    out = []
    for send, recv, name in (
        (list(RPC_SENDS), [RpcKind.RECV_CALL.value, RpcKind.RECV_CAST.value], None),
        (["reply_send"], ["reply_recv"], "rpc_reply"),
    ):
        s = ev.filter(kind.is_in(send) & pl.col("rpc_id").is_not_null())
        r = ev.filter(kind.is_in(recv) & pl.col("rpc_id").is_not_null())
        if not (s.height and r.height):
            continue
        if name is None:  # call and cast apart, so each row names its kind
            for k, label in _SENDS.items():
                src = _first(s.filter(kind == k), "rpc_id", "src", one_host=True)
                out.append(_rows(src, _first(r, "rpc_id", "dst", False), "rpc_id", label, res))
        else:
            src = _first(s, "rpc_id", "src", one_host=True)
            out.append(_rows(src, _first(r, "rpc_id", "dst", False), "rpc_id", name, res))
    return out


def _http_rows(ev: pl.DataFrame, res: float) -> list[pl.DataFrame]:
    access = ev.filter(pl.col("http_status").is_not_null() & pl.col("request_id").is_not_null())
    cli, srv = access.filter(is_client()), access.filter(~is_client())
    if not (cli.height and srv.height):
        return []
    dur = (pl.col("http_dur_s").fill_null(0.0) * 1e9).round().cast(pl.Int64)
    c_end = cli.select("request_id", dst_host="host", dst_ts_ns="ts_ns")
    s_end = srv.select("request_id", src_host="host", src_ts_ns="ts_ns")
    c_start = cli.filter(pl.col("http_dur_s").is_not_null()).select(
        "request_id", src_host="host", src_ts_ns=pl.col("ts_ns") - dur
    )
    s_start = srv.select("request_id", dst_host="host", dst_ts_ns=pl.col("ts_ns") - dur)
    # a start is a logged time minus a logged duration: two roundings, twice the slack
    return [
        _rows(s_end, c_end, "request_id", "http_end", res),
        _rows(c_start, s_start, "request_id", "http_start", 2 * res),
    ]


def _context_rows(ev: pl.DataFrame, res: float) -> list[pl.DataFrame]:
    msg, log = pl.col("message"), pl.col("logger").fill_null("")
    oslo = log.str.starts_with("oslo_messaging")
    # only the columns _first reads are kept (a filter of the whole frame copied every
    # column of the receipts: +0.67 GiB on the 30 M-line bench corpus's clock frame)
    sends = ev.lazy().filter(
        pl.col("request_id").is_not_null()
        & (
            pl.col("rpc_kind").is_in([*RPC_SENDS, RpcKind.REPLY_SEND.value]).fill_null(False)
            | (oslo & msg.str.contains(_KILO_SEND).fill_null(False))
        )
    ).select("request_id", "host", "ts_ns").collect()
    recv = (
        ev.lazy().filter(context_dump())
        .select(_dump_request_id(msg).cast(pl.Categorical).alias("request_id"), "host", "ts_ns")
        .filter(pl.col("request_id").is_not_null())
        .collect()
    )
    if not (sends.height and recv.height):
        return []
    src = _first(sends, "request_id", "src", one_host=True)
    # only the receipts of ids that pair (the join drops the rest): a group-by of every dump's
    # (id, host) held +0.39 GiB for the 2.1 M dumps of the 100 M-line corpus's clock frame
    recv = recv.filter(pl.col("request_id").is_in(src.get_column("request_id").implode()))
    return [_rows(src, _first(recv, "request_id", "dst", False), "request_id", "rpc_context", res)]


def clock_text() -> pl.Expr:
    """``message`` as the clock rules read it: null where :func:`clock_messages` is false, and
    an oslo.messaging ``unpacked context: {...}`` dump (Kilo and older; ~360 characters, the
    bulk of the messages those rules keep) cut to ``unpacked context: {'request_id': '<id>'}``
    with the id :func:`_context_rows` would extract (null when it finds none). Every rule gives
    the same rows on this text as on the whole message: ``_context_rows`` reads a dump only
    through that id, and every other rule keeps only messages that start with its own pattern
    (``REQ: curl``, ``<METHOD> call to``, ``RESP:``, ``MSG_ID is``, ``Starting to schedule``)."""
    return (pl.when(~clock_messages()).then(None)
            .when(context_dump()).then(context_dump_text())
            .otherwise(pl.col("message")))


def context_dump() -> pl.Expr:
    """True for an oslo.messaging ``unpacked context: {...}`` dump (Kilo and older receipts),
    the records :func:`_context_rows` reads as receipts (false where ``message`` is null)."""
    log = pl.col("logger").fill_null("")
    return (log.str.starts_with("oslo_messaging")
            & pl.col("message").str.starts_with("unpacked context:")).fill_null(False)


def context_dump_text() -> pl.Expr:
    """A dump's ``message`` cut to ``unpacked context: {'request_id': '<id>'}``, the id
    :func:`_context_rows` extracts (null when it finds none): the whole of what the clock rules
    read of a dump."""
    return pl.concat_str([pl.lit("unpacked context: {'request_id': '"),
                          _dump_request_id(pl.col("message")), pl.lit("'}")])


def clock_messages() -> pl.Expr:
    """True for the records whose ``message`` :func:`causal_constraints` reads (every rule
    here and in :mod:`stacklens.trace.causal` filters on one of these texts first): the
    result is the same when every other record's ``message`` is null. Keep it in step with
    the rules (the bounded trace stage reads only these messages in its global pass)."""
    msg, log = pl.col("message"), pl.col("logger").fill_null("")
    return (
        msg.str.contains("request id|request-id")  # http_callee, http_caller (used ...)
        | msg.str.starts_with("REQ: curl")  # http_caller
        | msg.str.starts_with("Starting to schedule")  # schedule_build
        | (log.str.starts_with("oslo_messaging")  # rpc_context
           & (msg.str.contains(_KILO_SEND) | msg.str.starts_with("unpacked context:")))
    ).fill_null(False)


def causal_constraints(
    events: pl.DataFrame, *, resolution_s: float = 0.001, max_skew_s: float = 60.0
) -> pl.DataFrame:
    """Cross-host causal pairs of canonical ``events``, as :data:`CONSTRAINTS` rows.

    Each row: ``offset[dst_host] - offset[src_host] >= lower_s`` (seconds; ``offset[h]`` is
    added to host ``h``'s timestamps). Pairs on one host are skipped. Sources:

    * ``rpc_call`` / ``rpc_cast``: the sender's ``call``/``cast`` record precedes each host's
      first ``recv_call``/``recv_cast`` of the same ``rpc_id`` (earliest send; rpc ids sent
      from more than one host are ambiguous and skipped).
    * ``rpc_reply``: the callee's ``reply_send`` precedes the caller's ``reply_recv``.
    * ``http_end`` / ``http_start``: a client line (``logger`` ending ``rest_client``, logged
      at completion, ``http_dur_s`` the client's time) brackets the server's access line of
      the same ``request_id``: the server's end precedes the client's end, the client's start
      (time minus duration) precedes the server's start (time minus ``http_dur_s``, or the
      line's time when that is null). Slack doubled for starts (two roundings).
    * ``rpc_context`` (inferred, weaker): oslo.messaging of Kilo and older logs no message id
      on receipt, only ``unpacked context: {... 'request_id': ...}``. When every sending
      record of a request id (``MSG_ID is``/``UNIQUE_ID is``, or ``rpc_kind`` call, cast,
      reply_send, under that request context) is on one host S, S made the context and every
      message carrying it descends from S's sends, so S's first send precedes any other
      host's first receipt of it (transitively). Assumes senders log under the context they
      send and S's logs reach back to that first send (``max_skew_s`` catches the worst
      misses); rows it gets wrong show up as cycles in :func:`estimate_offsets`.
    * ``http_callee``, ``http_caller``, ``http_origin``, ``schedule_build``: pairs from HTTP
      request ids (keystoneauth's ``used request id``/``REQ``/``RESP`` lines, access lines,
      ``global_request_id``) and from nova's scheduling order, which need no RPC DEBUG lines;
      each rule and its source in :mod:`stacklens.trace.causal`.

    ``resolution_s`` is subtracted from every bound (timestamps truncated to that unit).
    Rows with ``lower_s > max_skew_s`` would need a clock off by more than ``max_skew_s``;
    they are pairs whose cause is not in the logs (rotated away) and are left out. Returns an
    empty frame with the :data:`CONSTRAINTS` columns when nothing pairs up. Raises
    ``polars.exceptions.ColumnNotFoundError`` when ``events`` lacks canonical columns.
    """
    ev = events.select(
        "ts_ns",
        "host",
        "service",
        "pid",
        "logger",
        "message",
        "request_id",
        "global_request_id",
        "rpc_kind",
        "rpc_id",
        "http_status",
        "http_dur_s",
    ).pipe(categorical_ids).filter(pl.col("host").is_not_null() & pl.col("ts_ns").is_not_null())
    parts = _rpc_rows(ev, resolution_s) + _http_rows(ev, resolution_s)
    parts += _context_rows(ev, resolution_s)
    for rule in (http_callee_rows, http_caller_rows, origin_rows, schedule_rows):
        got = rule(ev, resolution_s)
        if got is not None and got.height:
            parts.append(got)
    out = pl.concat([p.cast(pl.Schema(CONSTRAINTS)) for p in parts]) if parts else None
    if out is None or not out.height:
        return pl.DataFrame(schema=CONSTRAINTS)
    return out.filter(pl.col("lower_s") <= max_skew_s).sort("kind", "key", "src_host", "dst_host")


@dataclass(frozen=True)
class SkewResult:
    """Outcome of :func:`estimate_offsets`.

    * ``reference``: host whose clock the offsets are relative to (None if no hosts).
    * ``offsets``: one row per host: ``host``, ``offset_s`` (seconds to add; midpoint of the
      feasible interval, null unless bounded on both sides), ``lo_s``/``hi_s`` (feasible
      interval, null where unbounded), ``uncertainty_s`` (half-width), ``n_constraints``
      (kept rows touching the host), ``status``: ``reference``, ``bounded``, ``lower_only``,
      ``upper_only``, ``unconnected`` (constraints, none linking it to the reference) or
      ``unconstrained`` (no constraint at all).
    * ``violations_before`` / ``violations_after``: constraint rows (all, dropped included)
      violated by the raw timestamps / by the corrected ones (rows whose hosts both have an
      offset).
    * ``dropped``: rows removed to break infeasible cycles, :data:`CONSTRAINTS` columns plus
      ``cycle`` (the hosts of the negative cycle it closed, ``a > b > a``) and
      ``cycle_excess_s`` (by how much that cycle's bounds could not all hold).
    """

    reference: str | None
    offsets: pl.DataFrame
    violations_before: int
    violations_after: int
    dropped: pl.DataFrame


Edge = tuple[int, int, float]  # (u, v, w): x_v - x_u <= w
#: One host pair's rows: (src_host, dst_host, row ids, lower_s), tightest row first.
PairRows = tuple[str, str, list[int], list[float]]


def _negative_cycle(n: int, edges: list[Edge]) -> list[int] | None:
    """Bellman-Ford from a virtual source joined to every node (Cormen et al. 24.1, 24.4):
    nodes ``v0 .. vk`` with edges ``v_i -> v_(i+1)``, ``vk -> v0`` of negative total weight,
    else None. O(n * edges)."""
    dist, pred = [0.0] * n, [-1] * n
    last = -1
    for _ in range(n + 1):
        last = -1
        for u, v, w in edges:
            if dist[u] + w < dist[v] - 1e-12:
                dist[v], pred[v], last = dist[u] + w, u, v
        if last < 0:
            return None
    for _ in range(n):  # n steps back from a node relaxed in round n + 1: on the cycle
        last = pred[last]
    cycle, v = [last], pred[last]
    while v != last:
        cycle.append(v)
        v = pred[v]
    return cycle[::-1]


def _closure(n: int, edges: list[Edge]) -> list[list[float]]:
    """Floyd-Warshall: ``d[i][j]`` = tightest upper bound on ``x_j - x_i`` (inf: none)."""
    d = [[0.0 if i == j else math.inf for j in range(n)] for i in range(n)]
    for u, v, w in edges:
        d[u][v] = min(d[u][v], w)
    for k in range(n):
        dk = d[k]
        for i in range(n):
            dik = d[i][k]
            if dik < math.inf:
                d[i] = [min(a, dik + b) for a, b in zip(d[i], dk, strict=True)]
    return d


def _graph(rows: pl.DataFrame, index: dict[str, int]) -> tuple[list[Edge], list[PairRows]]:
    """Edges ``dst -> src`` of weight ``-lower_s`` (``x_src - x_dst <= -lower_s``), one per
    host pair (its tightest row); per edge: ``(src, dst, row ids, lower_s)``, tightest first."""
    pairs = (
        rows.sort(["lower_s", "_rid"], descending=[True, False])
        .group_by("src_host", "dst_host", maintain_order=True)
        .agg("_rid", "lower_s")
        .sort("src_host", "dst_host")
    )
    info = list(pairs.iter_rows())
    return [(index[d], index[s], -ls[0]) for s, d, _, ls in info], info


def _cost(edge: PairRows, excess: float) -> tuple[int, float, str, str]:
    """Sort key (smallest first) of a cycle edge ``(src, dst, row ids, lower_s)`` when the
    cycle's bounds overshoot by ``excess``: how many of its rows must go to close the cycle
    alone, then the larger gap to its next row, then names (deterministic, shift-invariant)."""
    src, dst, _, ls = edge
    need = sum(1 for x in ls if x > ls[0] - excess + 1e-9)
    return (need, -(ls[0] - ls[1]) if len(ls) > 1 else -math.inf, src, dst)


def _break_cycles(
    rows: pl.DataFrame, hosts: list[str]
) -> tuple[pl.DataFrame, list[dict[str, object]]]:
    """Drop rows until the system is feasible, one at a time (greedy; the minimum set is a
    maximum feasible subsystem, NP-hard in general). For each negative cycle, among its edges
    take the one that needs the fewest of its rows dropped to close the cycle on its own
    (the side with less evidence), and drop its tightest row."""
    index = {h: i for i, h in enumerate(hosts)}
    dropped: list[dict[str, object]] = []
    while rows.height:
        edges, info = _graph(rows, index)
        cycle = _negative_cycle(len(hosts), edges)
        if cycle is None:
            break
        at = {(u, v): e for e, (u, v, _) in enumerate(edges)}
        which = [at[u, v] for u, v in zip(cycle, cycle[1:] + cycle[:1], strict=True)]
        excess = -sum(edges[e][2] for e in which)
        rid = info[min(which, key=lambda e: _cost(info[e], excess))][2][0]
        names = [hosts[v] for v in cycle[::-1]]  # edges run dst -> src: reverse to causal order
        cyc = " > ".join([*names, names[0]])
        dropped.append({"_rid": rid, "cycle": cyc, "cycle_excess_s": excess})
        rows = rows.filter(pl.col("_rid") != rid)
    return rows, dropped


def estimate_offsets(
    constraints: pl.DataFrame, hosts: Iterable[str] | None = None, reference: str | None = None
) -> SkewResult:
    """Per-host clock offsets (seconds to add) from :func:`causal_constraints` rows.

    ``hosts``: every host to report (hosts only in ``constraints`` are added; None: those).
    ``reference``: host whose clock is kept (offset 0); default the host in most constraint
    rows (ties: name order). Method: each row ``x_dst - x_src >= lower_s`` is the edge
    ``dst -> src`` of weight ``-lower_s`` of a difference-constraint graph (Cormen et al.
    24.4); negative cycles (constraints that cannot all hold) are broken by dropping rows,
    each reported in ``dropped`` with its cycle. All-pairs shortest paths ``d`` (Floyd-Warshall)
    then give the tightest feasible interval ``[-d[h, ref], d[ref, h]]`` of each host; the
    point estimate is its midpoint (midpoints of hosts bounded on both sides satisfy every
    kept row between them) and the uncertainty its half-width. Offsets are constant: clocks
    that drift or step over the logged period give cycles and drops (then estimate per time
    window, filtering ``constraints`` on ``dst_ts_ns``). Raises ``ValueError`` for a
    ``reference`` not among the hosts.
    """
    rows = constraints.select(list(CONSTRAINTS)).with_row_index("_rid")
    names = set(rows["src_host"]) | set(rows["dst_host"])
    hosts = list(dict.fromkeys([*(list(hosts) if hosts is not None else []), *sorted(names)]))
    if reference is not None and reference not in hosts:
        raise ValueError(f"reference host {reference!r} is not among the hosts {hosts}")
    kept, dropped = _break_cycles(rows, hosts)
    count = (
        dict(pl.concat([kept["src_host"], kept["dst_host"]]).value_counts().iter_rows())
        if kept.height
        else {}
    )
    lo: list[float | None] = [None] * len(hosts)
    hi: list[float | None] = [None] * len(hosts)
    if hosts:
        if reference is None:
            reference = min(hosts, key=lambda h: (-count.get(h, 0), h))
        d = _closure(len(hosts), _graph(kept, {h: i for i, h in enumerate(hosts)})[0])
        r = hosts.index(reference)
        hi = [x if x < math.inf else None for x in d[r]]
        lo = [0.0 - row[r] if row[r] < math.inf else None for row in d]
    offsets = pl.DataFrame(
        {"host": hosts, "lo_s": lo, "hi_s": hi, "n_constraints": [count.get(h, 0) for h in hosts]},
        schema={
            "host": pl.String,
            "lo_s": pl.Float64,
            "hi_s": pl.Float64,
            "n_constraints": pl.Int64,
        },
    )
    both = pl.col("lo_s").is_not_null() & pl.col("hi_s").is_not_null()
    offsets = offsets.select(
        "host",
        offset_s=pl.when(both).then((pl.col("lo_s") + pl.col("hi_s")) / 2),
        lo_s="lo_s",
        hi_s="hi_s",
        uncertainty_s=pl.when(both).then((pl.col("hi_s") - pl.col("lo_s")) / 2),
        n_constraints="n_constraints",
        status=pl.when(pl.col("host") == reference)
        .then(pl.lit("reference"))
        .when(both)
        .then(pl.lit("bounded"))
        .when(pl.col("lo_s").is_not_null())
        .then(pl.lit("lower_only"))
        .when(pl.col("hi_s").is_not_null())
        .then(pl.lit("upper_only"))
        .when(pl.col("n_constraints") > 0)
        .then(pl.lit("unconnected"))
        .otherwise(pl.lit("unconstrained")),
    )
    extra = {"cycle": pl.String, "cycle_excess_s": pl.Float64}
    drop_info = pl.DataFrame(dropped, schema={"_rid": pl.UInt32, **extra})
    return SkewResult(
        reference=reference,
        offsets=offsets,
        violations_before=int((rows["lower_s"] > 0).sum()),
        violations_after=_violated(rows, offsets),
        dropped=rows.join(drop_info, on="_rid").sort("_rid").drop("_rid"),
    )


def _violated(rows: pl.DataFrame, offsets: pl.DataFrame) -> int:
    """Rows violated by the corrected timestamps (both hosts with an offset; 1 ns tolerance)."""
    o = offsets.select("host", "offset_s").drop_nulls()
    j = rows.join(o.rename({"host": "src_host", "offset_s": "_os"}), on="src_host").join(
        o.rename({"host": "dst_host", "offset_s": "_od"}), on="dst_host"
    )
    return int((j["_od"] - j["_os"] < j["lower_s"] - 1e-9).sum())


def apply_offsets(
    events: pl.DataFrame, offsets: pl.DataFrame, max_uncertainty_s: float | None = None
) -> pl.DataFrame:
    """``events`` with ``ts_ns`` shifted by its host's ``offset_s`` (rounded to ns) and the
    timestamp before any correction kept as ``ts_raw_ns`` (Int64, appended; an existing
    ``ts_raw_ns`` is kept, so corrections add up). ``offsets``: ``host``, ``offset_s`` and,
    with ``max_uncertainty_s``, ``uncertainty_s`` (e.g. :attr:`SkewResult.offsets`). Hosts
    absent, with a null offset or an uncertainty above ``max_uncertainty_s`` stay unshifted.
    Row order and the other columns are unchanged. Raises ``ValueError`` when ``offsets``
    has two rows for one host (e.g. per-window offsets: apply them window by window)."""
    ok = pl.col("offset_s").is_not_null()
    if max_uncertainty_s is not None:
        ok &= pl.col("uncertainty_s") <= max_uncertainty_s
    shift = offsets.filter(ok).select(
        "host", _shift=(pl.col("offset_s").cast(pl.Float64) * 1e9).round().cast(pl.Int64)
    )
    if shift["host"].is_duplicated().any():
        raise ValueError("offsets has more than one row for a host")
    out = events if "ts_raw_ns" in events.columns else events.with_columns(ts_raw_ns="ts_ns")
    return (
        out.join(shift, on="host", how="left", maintain_order="left")
        .with_columns(ts_ns=pl.col("ts_ns") + pl.col("_shift").fill_null(0))
        .drop("_shift")
    )
