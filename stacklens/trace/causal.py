"""Cross-host causal pairs that need no oslo.messaging DEBUG ids (HTTP ids, request origins,
scheduling order), as :data:`stacklens.trace.skew.CONSTRAINTS` rows.

Every rule below holds by the protocol, whatever the clocks say; each row says "the record at
``src_ts_ns`` on ``src_host`` happened before the one at ``dst_ts_ns`` on ``dst_host``".

* ``http_callee``: an HTTP client logs the callee's request id only after the response came
  back. keystoneauth1 ``Session.request`` (keystoneauth1/session.py, 2.18.0 on, Newton..2025.1)
  logs at DEBUG ``<METHOD> call to <service> for <url> used request id <req-id>`` (older:
  ``<METHOD> call to <url> used request id``) after ``send``; the sessions of keystoneauth,
  keystoneclient and the older neutronclient log ``RESP: [<status>] <headers>`` carrying
  ``x-openstack-request-id``/``x-compute-request-id`` after the response. The callee created
  that id when the request reached it (oslo.middleware request_id, every service), and started
  handling it at ``access time - time:`` (eventlet.wsgi access line, ``http_dur_s``) or, for
  placement, logged its request line (placement/requestlog.py, written at ``start_response``,
  before the body is returned). So the callee's start precedes the caller's line.
* ``http_caller``: the reverse bound. keystoneauth logs ``REQ: curl -g -i ... -X <METHOD> <url>``
  before sending (``_http_log_request``); its ``used request id`` line for the same method and
  URL, same host, pid and request context follows the response. When these lines strictly
  alternate for that key (one request in flight at a time), the REQ line precedes every record
  of the returned request id on any other host. Ambiguous sequences are skipped.
* ``http_origin``: a service's request id is created by its own middleware on receipt (Pike
  on, a caller's id arrives as ``global_request_id``, never as ``request_id``). Its access line
  gives the receipt time ``ts - http_dur_s``; every record on another host with that id as
  ``request_id`` or ``global_request_id`` descends from that request (RPC contexts and the
  X-OpenStack-Request-ID header carry it onwards) and so comes after it. Ids with access lines
  on more than one host are skipped.
* ``schedule_build``: nova's scheduler works for request R in ``select_destinations`` before
  the conductor casts ``build_and_run_instance``/``prep_resize``/``rebuild_instance`` with R's
  context to the chosen compute (nova/conductor/manager.py ``schedule_and_build_instances``,
  ``build_instances``, ``_cold_migrate``; nova/conductor/tasks/live_migrate.py; Kilo..2025.1),
  so the scheduler's first record of R written inside ``select_destinations`` (loggers in
  ``_SELECT_LOGGERS``, "Starting to schedule for instances") precedes each compute host's first
  record of R (a reschedule's second scheduling comes later still, which keeps the bound true).
  Other scheduler records are not used: the scheduler also logs under contexts a compute made
  (``sync_instance_info``, Kilo's "Successfully synced instances from host").

Pure functions: canonical ``events`` columns in, rows out.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from stacklens.vocab import REQ_ID, is_client

__all__ = [
    "MIN_ENGINE", "REQUEST_IDS", "caller_lines", "categorical_ids", "http_callee_rows",
    "http_caller_rows", "origin_rows", "schedule_rows",
]

_RID = f"({REQ_ID})"
#: keystoneauth1 session.py: "%(method)s call to [%(service_name)s for ]%(url)s used request id"
USED = r"^([A-Z]+) call to (?:\S+ for )?(\S+) used request id " + _RID
#: "RESP: [200] ... x-openstack-request-id: req-..." (keystoneauth, keystoneclient, neutronclient)
RESP = r"(?i)^RESP: .*?x-(?:openstack|compute)-request-id: " + _RID
#: keystoneauth1/keystoneclient session ``_http_log_request``: "REQ: curl -g -i [...] -X GET url"
REQ = r"^REQ: curl .*?-X ([A-Z]+) (\S+)"


#: loggers that write only inside nova's select_destinations: nova/scheduler/filter_scheduler.py
#: (Havana..Xena "Filtered"/"Weighed"/"Selected host"), nova/scheduler/request_filter.py (Stein
#: on), nova/filters.py and nova/weights.py (the filter and weigher handlers, every release)
_SELECT_LOGGERS = [
    "nova.scheduler.filter_scheduler",
    "nova.scheduler.request_filter",
    "nova.filters",
    "nova.weights",
]

#: The request id columns, categorical in every rule (each distinct id stored once, compared and
#: grouped as a 4-byte code; as strings, the rules of the 100 M-line bench corpus's clock frame
#: took 21.4 -> 13.7 s and peaked 1.28 -> 0.94 GiB above it, same constraints): ids cut out of
#: messages are cast to match before a join.
REQUEST_IDS = ("request_id", "global_request_id")
#: Engine of the rules' group-bys that take a minimum per (id, host): Polars' streaming engine
#: keeps one running minimum per group where the in-memory one builds each group's row list
#: (2.5 M (request id, host) groups of the 100 M-line corpus's clock frame: +476 -> +113 MiB,
#: 2.4 -> 0.8 s; Polars 2.1). A minimum does not depend on the rows' order.
MIN_ENGINE: Literal["streaming"] = "streaming"


def categorical_ids(ev: pl.DataFrame) -> pl.DataFrame:
    """``ev`` with its :data:`REQUEST_IDS` categorical (the same frame when they are)."""
    return ev.with_columns(pl.col(REQUEST_IDS).cast(pl.Categorical))


def caller_lines() -> pl.Expr:
    """True for the lines :func:`http_caller_rows` reads: keystoneauth's ``REQ: curl`` and
    ``used request id`` lines (null where ``message`` is)."""
    msg = pl.col("message")
    return msg.str.starts_with("REQ: curl") | msg.str.contains(" used request id ", literal=True)


def _out(df: pl.DataFrame, kind: str, slack_s: float) -> pl.DataFrame:
    return df.filter(pl.col("src_host") != pl.col("dst_host")).select(
        "src_host",
        "dst_host",
        lower_s=(pl.col("src_ts_ns") - pl.col("dst_ts_ns")) / 1e9 - slack_s,
        kind=pl.lit(kind),
        key="key",
        src_ts_ns="src_ts_ns",
        dst_ts_ns="dst_ts_ns",
    )


def _server_access(ev: pl.DataFrame) -> pl.DataFrame:
    """Server access lines (not tempest's client lines): request_id, host, ts_ns, start_ns."""
    # ingest's facts read every release's access line (stacklens.ingest.facts)
    log = pl.col("logger").fill_null("")
    acc = ev.filter(
        pl.col("http_status").is_not_null()
        & pl.col("request_id").is_not_null()
        & ~is_client()
    )
    dur = (pl.col("http_dur_s") * 1e9).round().cast(pl.Int64)
    return acc.select(
        "request_id",
        "host",
        "ts_ns",
        start_ns=pl.when(pl.col("http_dur_s").is_not_null()).then(pl.col("ts_ns") - dur),
        placement=log.str.starts_with("placement"),
    )


def _first_by_host(ev: pl.DataFrame, col: str) -> pl.DataFrame:
    """Earliest record per (id in ``col``, host): key, dst_host, dst_ts_ns."""
    return (
        ev.lazy().filter(pl.col(col).is_not_null())
        .group_by(col, "host")
        .agg(dst_ts_ns=pl.col("ts_ns").min())
        .select(key=col, dst_host="host", dst_ts_ns="dst_ts_ns")
        .collect(engine=MIN_ENGINE)
    )


def http_callee_rows(ev: pl.DataFrame, res: float) -> pl.DataFrame | None:
    """``http_callee`` rows: callee's start of handling precedes the caller's response line."""
    ev = categorical_ids(ev)
    msg = pl.col("message")
    got = (
        ev.filter(msg.str.contains("request id|request-id"))
        .select(
            "host", "ts_ns",
            key=pl.coalesce(msg.str.extract(USED, 3), msg.str.extract(RESP, 1))
            .cast(pl.Categorical),
        )
        .filter(pl.col("key").is_not_null())
    )
    if not got.height:
        return None
    acc = _server_access(ev).filter(pl.col("request_id").is_in(got["key"].unique().implode()))
    acc = acc.filter(pl.col("host").n_unique().over("request_id") == 1)
    # time known to be inside the handling: receipt (ts - dur), or placement's request line
    acc = acc.filter(pl.col("start_ns").is_not_null() | pl.col("placement"))
    first = (
        ev.filter(pl.col("request_id").is_in(acc["request_id"].unique().implode()))
        .group_by("request_id", "host")
        .agg(first_ns=pl.col("ts_ns").min())
    )
    src = (
        acc.group_by("request_id", "host")
        .agg(a=pl.coalesce("start_ns", "ts_ns").min())
        .join(first, on=["request_id", "host"], how="left")
        .select(
            key="request_id",
            src_host="host",
            src_ts_ns=pl.min_horizontal("a", "first_ns"),
        )
    )
    pairs = src.join(got.rename({"host": "dst_host", "ts_ns": "dst_ts_ns"}), on="key")
    return _out(pairs, "http_callee", 2 * res)


def http_caller_rows(ev: pl.DataFrame, res: float) -> pl.DataFrame | None:
    """``http_caller`` rows: a REQ line precedes every record, elsewhere, of the id its
    request returned (only where REQ/used lines alternate per host, pid, context, method, url)."""
    ev = categorical_ids(ev)
    msg = pl.col("message")
    lines = (
        ev.filter(caller_lines())
        .with_row_index("_i")
        .select(
            "_i",
            "host",
            "pid",
            "ts_ns",
            ctx=pl.col("request_id").fill_null("-"),
            method=pl.coalesce(msg.str.extract(REQ, 1), msg.str.extract(USED, 1)),
            url=pl.coalesce(msg.str.extract(REQ, 2), msg.str.extract(USED, 2)),
            got=msg.str.extract(USED, 3),
            is_req=msg.str.starts_with("REQ: curl"),
        )
        .filter(pl.col("method").is_not_null() & pl.col("url").is_not_null())
    )
    if not (lines["is_req"].any() and lines["got"].is_not_null().any()):
        return None
    by = ["host", "pid", "ctx", "method", "url"]
    seq = lines.sort([*by, "ts_ns", "_i"]).with_columns(
        prev_req=pl.col("is_req").shift(1).over(by),
        prev2_req=pl.col("is_req").shift(2).over(by),
        req_ts=pl.col("ts_ns").shift(1).over(by),
    )
    # a used line right after its REQ, and that REQ not preceded by another unanswered REQ
    ok = seq.filter(
        pl.col("got").is_not_null()
        & pl.col("prev_req").fill_null(False)
        & ~pl.col("prev2_req").fill_null(False)
    ).select("host", key=pl.col("got").cast(pl.Categorical), src_ts_ns="req_ts")
    dst = _first_by_host(ev.filter(pl.col("request_id").is_in(ok["key"].unique().implode())),
                         "request_id")
    pairs = ok.rename({"host": "src_host"}).join(dst, on="key")
    return _out(pairs, "http_caller", res)


def origin_rows(ev: pl.DataFrame, res: float) -> pl.DataFrame | None:
    """``http_origin`` rows: a request's receipt (its access line minus its duration) precedes
    every record of its id on other hosts, as request_id or global_request_id."""
    ev = categorical_ids(ev)
    acc = _server_access(ev).filter(pl.col("start_ns").is_not_null())
    # ids with access lines on one host only (then their first host is that host, whatever
    # the rows' order): one streaming group-by, not a window and a group-by in memory
    src = (
        acc.lazy().group_by("request_id")
        .agg(n=pl.col("host").n_unique(), src_host=pl.col("host").first(),
             src_ts_ns=pl.col("start_ns").min())
        .filter(pl.col("n") == 1).drop("n")
        .collect(engine=MIN_ENGINE)
    )
    del acc
    if not src.height:
        return None
    ids = src["request_id"].unique()
    # each id column with host and time only: a filter of the whole records copied the messages
    down = (
        pl.concat(
            [
                _first_by_host(
                    ev.select(c, "host", "ts_ns").filter(pl.col(c).is_in(ids.implode())), c)
                for c in ("request_id", "global_request_id")
            ]
        )
        .group_by("key", "dst_host")
        .agg(pl.col("dst_ts_ns").min())
    )
    pairs = src.rename({"request_id": "key"}).join(down, on="key")
    return _out(pairs, "http_origin", 2 * res)


def schedule_rows(ev: pl.DataFrame, res: float) -> pl.DataFrame | None:
    """``schedule_build`` rows: the scheduler's first record of a request precedes each compute
    host's first record of it."""
    ev = categorical_ids(ev)
    log = pl.col("logger").fill_null("")
    svc = pl.col("service").fill_null("")
    msg = pl.col("message").fill_null("")
    # only records written inside select_destinations: the scheduler also logs under contexts
    # that computes made (sync_instance_info, update_instance_info casts from the compute)
    inside = (
        log.is_in(_SELECT_LOGGERS)
        | log.str.starts_with("nova.scheduler.filters.")
        | log.str.starts_with("nova.scheduler.weights.")
        | ((log == "nova.scheduler.manager") & msg.str.starts_with("Starting to schedule"))
    )
    sched = ev.filter(pl.col("request_id").is_not_null() & inside & (svc != "nova-compute"))
    if not sched.height:
        return None
    src = (
        sched.group_by("request_id")
        .agg(
            src_host=pl.col("host").first(),
            n=pl.col("host").n_unique(),
            src_ts_ns=pl.col("ts_ns").min(),
        )
        .filter(pl.col("n") == 1)
        .select(key="request_id", src_host="src_host", src_ts_ns="src_ts_ns")
    )
    comp = ev.filter(
        pl.col("request_id").is_in(src["key"].implode())
        & ((svc == "nova-compute") | (log.str.starts_with("nova.compute.") & (svc == "")))
    )
    pairs = src.join(_first_by_host(comp, "request_id"), on="key")
    return _out(pairs, "schedule_build", res)
