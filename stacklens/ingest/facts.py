"""Facts extracted from well-known OpenStack messages, as extra ``events`` columns.

Sources of the formats (read in the OpenStack code):

* API access lines (one per HTTP request a server answered), each release's writer:

  - oslo.service ``wsgi.py`` / nova ``wsgi.py`` ``wsgi_log_format`` (Kilo..), written by eventlet:
    ``%(client_ip)s "%(request_line)s" status: %(status_code)s  len: %(body_length)s time:
    %(wall_seconds).7f`` (oslo.service has two spaces before ``len:``, nova one);
  - eventlet ``wsgi.py`` default ``log_format`` (glance, neutron ``neutron.wsgi``, keystone
    under eventlet): ``%(client_ip)s - - [%(date_time)s] "%(request_line)s" %(status_code)s
    %(body_length)s %(wall_seconds).6f``;
  - nova ``api/openstack/requestlog.py`` (nova-api under uwsgi, Pike..2025.1): ``"POST
    /v2.1/servers" status: 202 len: 372 microversion: 2.37 time: 0.520000``; placement's
    ``requestlog.py`` writes the same without ``time:`` (so no duration);
  - Apache combined logs of devstack's keystone vhost (``%D(us)`` appended): ``"GET /v3/x
    HTTP/1.1" 200 343 "-" "python-keystoneclient" 11209(us)``;
  - cinder (and nova faults) ``api/openstack/wsgi.py``: ``GET http://h:8776/v2/p/volumes`` at
    the start and ``http://h:8776/v2/p/volumes returned with HTTP 200`` at the end. Used only in
    files without any access line (cinder-api under uwsgi/apache), where they are the only
    record of the request; the method comes from the start line, the duration is end - start.

  Durations that are not finite, negative or above :data:`MAX_DUR_S` become null and are
  counted (``ingest_stats`` kind ``duration_out_of_range``).
* tempest ``rest_client``: ``Request (Test:test_x): 202 POST http://.../servers 1.301s``.
* nova compute timing: ``Took 12.3 seconds to spawn the instance on the hypervisor.``
* oslo.messaging amqpdriver DEBUG lines: ``CALL msg_id: <32 hex> exchange 'nova' topic
  'conductor'``, ``CAST unique_id: ...``, ``received message msg_id: ... reply to ...``,
  ``received message with unique_id: ...``, ``sending reply msg_id: ...``, ``received reply
  msg_id: ...``.
* oslo.concurrency lockutils: ``Lock "x" acquired by "f" :: waited 0.001s`` and
  ``Lock "x" released by "f" :: held 0.010s`` (quoted ``"released"`` in newer releases).
"""

from __future__ import annotations

import re

import polars as pl

from stacklens.vocab import RpcKind
from stacklens.vocab import is_client as vocab_is_client

__all__ = ["MAX_DUR_S", "add_facts"]

#: longest duration (s) an access/client/``Took`` line may state; beyond, the value is garbage
#: (an overflowed or corrupted field) and becomes null (counted in ``ingest_stats``)
MAX_DUR_S = 7 * 86400.0

_M = r"(GET|POST|PUT|DELETE|PATCH|HEAD|OPTIONS|COPY)"
_REQ = r"\"" + _M + r" (\S+)(?: HTTP/\d\.\d)?\""
_NUM = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|[Nn]a[Nn]|[Ii]nf(?:inity)?))"
# oslo.service / nova wsgi_log_format, nova and placement requestlog (time optional)
_WSGI_OSLO = _REQ + r" status: (\d{3}) +len: (?:\d+|-)(?: +microversion: \S+)?(?: +time: " + _NUM + ")?"
# eventlet default log_format: ... "GET / HTTP/1.1" 200 4344 0.125997
_WSGI_EVENTLET = _REQ + r" (\d{3}) (?:\d+|-) " + _NUM + r"\s*$"
# Apache combined + %D(us) (devstack keystone vhost)
_WSGI_APACHE = _REQ + r" (\d{3}) (?:\d+|-) \"[^\"]*\" \"[^\"]*\" (\d+)\(us\)"
# cinder / nova api/openstack/wsgi.py
_RETURNED = r"^(https?://\S+) returned with HTTP (\d{3})"
_STARTED = r"^" + _M + r" (https?://\S+)$"
_CLIENT = r"^Request \([^)]*\): (\d{3}) " + _M + r" (\S+)(?: " + _NUM + r"s)?"
_TOOK = r"Took " + _NUM + r" seconds to ([^.]*)"
_RPC = (
    r"(CALL msg_id|CAST unique_id|received message msg_id|received message with unique_id"
    r"|sending reply msg_id|received reply msg_id): ([0-9a-f]{32})"
)
_RPC_TOPIC = r"(?:CALL msg_id|CAST unique_id): [0-9a-f]{32} (?:exchange '[^']*'|FANOUT) topic '([^']*)'"
_RPC_KIND = {
    "CALL msg_id": RpcKind.CALL.value,
    "CAST unique_id": RpcKind.CAST.value,
    "received message msg_id": RpcKind.RECV_CALL.value,
    "received message with unique_id": RpcKind.RECV_CAST.value,
    "sending reply msg_id": RpcKind.REPLY_SEND.value,
    "received reply msg_id": "reply_recv",  # the caller's side; not in vocab.RpcKind
}
_LOCK = r"Lock \"([^\"]+)\" \"?(?:acquired|released)\"? by \"[^\"]+\" :: (waited|held) (\d+\.\d+)s"
#: Literals of which every fact pattern above needs one: access lines ``"``, a method and a
#: space (:data:`_REQ`); locks ``Lock "``; cinder's end lines `` returned with HTTP `` and its
#: start lines a method, a space and ``http`` (:data:`_STARTED`); client lines ``Request (``;
#: ``Took ``; RPC ids ``msg_id: `` or ``unique_id: ``. The regexes run only on messages
#: holding one, found by a literal scan; the others have no fact. Keep in step with the
#: patterns. ``"`` and ``://`` in their place gated 15 % of the records of the 10 M-line bench
#: corpus (JSON, quoted names, URLs), these 12.5 % (session 32).
_METHODS = _M.strip("()").split("|")
_GATES = (
    *(f'"{m} ' for m in _METHODS), 'Lock "', " returned with HTTP ",
    *(f"{m} http" for m in _METHODS), "Request (", "Took ", "msg_id: ", "unique_id: ",
)
_GATE_RX = "|".join(re.escape(g) for g in _GATES)
#: the columns :func:`_add_facts_all` reads
_READ = ("message", "logger", "file", "line_no", "ts_ns", "request_id")


def _num(e: pl.Expr) -> pl.Expr:
    return e.cast(pl.Float64, strict=False)


def _valid(e: pl.Expr) -> pl.Expr:
    """True where a parsed duration is usable: finite, >= 0 and <= MAX_DUR_S."""
    return e.is_finite() & (e >= 0) & (e <= MAX_DUR_S)


def _returned_lines(ev: pl.DataFrame) -> pl.DataFrame:
    """Method, path, status and duration of cinder's ``<url> returned with HTTP <status>``
    lines, in files that have no access line: columns ``_row``, ``_rm``, ``_rp``, ``_rs``,
    ``_rd`` (only matched rows)."""
    m = pl.col("message")
    files_with_access = ev.filter(pl.col("_w_status").is_not_null())["file"].unique()
    pool = ev.filter(~pl.col("file").is_in(files_with_access.implode()))
    ret = pool.filter(m.str.contains(_RETURNED)).select(
        "_row", "file", "line_no", "ts_ns", pl.col("request_id").fill_null("-").alias("_rq"),
        m.str.extract(_RETURNED, 1).alias("_url"),
        m.str.extract(_RETURNED, 2).cast(pl.Int32, strict=False).alias("_rs"),
    )
    if not ret.height:
        return ret.select("_row", "_rs").with_columns(
            _rm=pl.lit(None, pl.String), _rp=pl.lit(None, pl.String), _rd=pl.lit(None, pl.Float64)
        )
    started = pool.filter(m.str.contains(_STARTED)).select(
        "file", "line_no", pl.col("request_id").fill_null("-").alias("_rq"),
        m.str.extract(_STARTED, 2).alias("_url"),
        m.str.extract(_STARTED, 1).alias("_rm"),
        pl.col("ts_ns").alias("_t0"),
    )
    hit = ret.sort("line_no").join_asof(
        started.sort("line_no"), on="line_no", by=["file", "_rq", "_url"], strategy="backward",
        check_sortedness=False,
    )
    return hit.select(
        "_row", "_rs", "_rm",
        pl.col("_url").str.replace(r"^https?://[^/]+", "").alias("_rp"),
        ((pl.col("ts_ns") - pl.col("_t0")) / 1e9).alias("_rd"),
    )


def add_facts(events: pl.DataFrame, stats: list | None = None) -> pl.DataFrame:
    """Add the fact columns of :data:`stacklens.schema.EVENTS` (``http_*``, ``took_*``,
    ``rpc_*``, ``lock_*``) to a frame with ``message`` and ``logger`` columns (and ``file``,
    ``line_no``, ``ts_ns``, ``request_id`` for cinder's start/end pairs); null where absent.

    ``stats``: when given, a list that receives ``(file, "duration_out_of_range", "warn",
    count, detail)`` rows for durations that were not finite, negative or above
    :data:`MAX_DUR_S` (those become null; the line keeps its method, path and status).

    The patterns run only on the records whose message holds one of :data:`_GATES` (a literal
    scan); the result is the same as :func:`_add_facts_all` on every record."""
    m = pl.col("message")
    # one scan for all the literals (an alternation of escaped literals runs as a literal
    # searcher in Rust's regex: 0.41 s against 0.67 s for six scans, 3.5 M records)
    gate = events.select(m.str.contains(_GATE_RX).fill_null(False)).to_series()
    n_sub = int(gate.sum())
    if n_sub * 2 > events.height:  # most records may hold a fact: no gain in splitting
        return _add_facts_all(events, stats)
    # only the columns the facts are read from are filtered (not the continuation text, ...)
    read = [c for c in _READ if c in events.columns]
    facts = _add_facts_all(events.select(read).filter(gate), stats)
    new = [c for c in facts.columns if c not in read]
    # each record's row in ``facts`` (null: no fact): the new columns are gathered to full
    # length and put beside the existing ones, which are not copied (a join copied them all)
    pos = pl.select(pl.when(gate).then(gate.cum_sum() - 1)).to_series().cast(pl.UInt32)
    return events.hstack([facts.get_column(c).gather(pos) for c in new])


def _add_facts_all(events: pl.DataFrame, stats: list | None = None) -> pl.DataFrame:
    """Add the fact columns of :data:`stacklens.schema.EVENTS` (``http_*``, ``took_*``,
    ``rpc_*``, ``lock_*``) to a frame with ``message`` and ``logger`` columns (and ``file``,
    ``line_no``, ``ts_ns``, ``request_id`` for cinder's start/end pairs); null where absent.

    ``stats``: when given, a list that receives ``(file, "duration_out_of_range", "warn",
    count, detail)`` rows for durations that were not finite, negative or above
    :data:`MAX_DUR_S` (those become null; the line keeps its method, path and status)."""
    m = pl.col("message")
    is_client = vocab_is_client()  # null logger -> False: the same rows as when(null)
    # each pattern runs once; its groups are read from the struct (``extract(p, i)`` is group
    # i of the first match, as ``extract_groups(p)``'s field i)
    ev = events.with_row_index("_row").with_columns(
        _o=m.str.extract_groups(_WSGI_OSLO),
        _e=m.str.extract_groups(_WSGI_EVENTLET),
        _a=m.str.extract_groups(_WSGI_APACHE),
        _c=pl.when(is_client).then(m.str.extract_groups(_CLIENT)),
        _t=m.str.extract_groups(_TOOK),
        _r=m.str.extract_groups(_RPC),
        _rt=m.str.extract(_RPC_TOPIC, 1),
        _l=m.str.extract_groups(_LOCK),
    )
    t, r, lk = (pl.col(x).struct for x in ("_t", "_r", "_l"))
    lock_kind = lk[1]
    ev = ev.with_columns(
        took_s=_num(t[0]),
        took_what=t[1],
        rpc_kind=r[0].replace_strict(_RPC_KIND, default=None),
        rpc_id=r[1],
        rpc_topic=pl.col("_rt"),
        lock_name=lk[0],
        lock_waited_s=pl.when(lock_kind == "waited").then(_num(lk[2])),
        lock_held_s=pl.when(lock_kind == "held").then(_num(lk[2])),
    )
    o, e, a, c = (pl.col(x).struct for x in ("_o", "_e", "_a", "_c"))
    ev = ev.with_columns(
        _w_method=pl.coalesce(o[0], e[0], a[0]),
        _w_path=pl.coalesce(o[1], e[1], a[1]),
        _w_status=pl.coalesce(o[2], e[2], a[2]).cast(pl.Int32, strict=False),
        _w_dur=pl.coalesce(_num(o[3]), _num(e[3]), _num(a[3]) / 1e6),
    )
    if {"file", "line_no", "ts_ns", "request_id"} <= set(ev.columns) and ev.height:
        ev = ev.join(_returned_lines(ev), on="_row", how="left", maintain_order="left")
    else:
        ev = ev.with_columns(
            _rm=pl.lit(None, pl.String), _rp=pl.lit(None, pl.String),
            _rs=pl.lit(None, pl.Int32), _rd=pl.lit(None, pl.Float64),
        )
    ev = ev.with_columns(
        http_method=pl.coalesce(c[1], pl.col("_w_method"), pl.col("_rm")),
        http_path=pl.coalesce(c[2].str.replace(r"^https?://[^/]+", ""), pl.col("_w_path"), pl.col("_rp")),
        http_status=pl.coalesce(c[0].cast(pl.Int32, strict=False), pl.col("_w_status"), pl.col("_rs")),
        http_dur_s=pl.coalesce(_num(c[3]), pl.col("_w_dur"), pl.col("_rd")),
    )
    bad = (pl.col("http_dur_s").is_not_null() & ~_valid(pl.col("http_dur_s"))) | (
        pl.col("took_s").is_not_null() & ~_valid(pl.col("took_s"))
    )
    if stats is not None and "file" in ev.columns:
        for f, n in ev.filter(bad).group_by("file").len().iter_rows():
            stats.append((f, "duration_out_of_range", "warn", n,
                          f"durations not finite, negative or above {MAX_DUR_S:.0f} s set to null"))
    return (
        ev.with_columns(
            http_dur_s=pl.when(_valid(pl.col("http_dur_s"))).then(pl.col("http_dur_s")),
            took_s=pl.when(_valid(pl.col("took_s"))).then(pl.col("took_s")),
        )
        .drop("_row", "_o", "_e", "_a", "_c", "_t", "_r", "_rt", "_l", "_w_method", "_w_path",
              "_w_status", "_w_dur", "_rm", "_rp", "_rs", "_rd")
    )
