"""Operation, outcome, latency breakdown and phases of each trace.

Operation: the root API request's method and path, normalized (project ids, uuids and numbers
become ``{id}``, the query string is dropped), with friendly names for the requests that matter
at scale (``server.create`` for ``POST /v2.1/servers`` ...). ``server.action`` is renamed after
the action its records reveal (``server.live_migrate``, ``server.resize``,
``server.confirm_resize``; see :mod:`stacklens.trace.completion`). Traces without an API request
are named after their first RPC topic (``rpc compute``) or ``background``.

Outcome (every trace gets exactly one), from the protocol, never from the mere presence of an
ERROR line:

``success``   a synchronous request answered 2xx, or an asynchronous one (create, delete,
              live-migration, resize, volume create/attach) whose completion marker is logged;
``retried``   completed after at least one reschedule;
``failed``    HTTP 5xx, or a failure marker: error state set (``Setting instance to ERROR
              state``, ``Build of instance .. aborted``, cinder ``create failed``), NoValidHost,
              reschedule limit (MaxRetriesExceeded), or a spawn failure that nothing followed;
``rejected``  the API answered 4xx (bad request, quota, not found, a poll of a deleted server):
              the cloud refused, it did not fail;
``unknown``   an asynchronous operation whose completion and failure are both absent from the
              logs (``outcome_reason`` says why), or a trace without an API response.

ERROR/CRITICAL records are annotations: ``n_error_records`` and ``first_error`` on every trace.
A failed trace gets one root cause (``error``, ``error_service``, ``error_file``,
``error_line_no``): the first error in causal (time) order of the failing chain, i.e. the
earliest ERROR/CRITICAL record at or before the failure that is tagged with the trace's
instance, or logged by the span that recorded the failure, or by another service while that
span ran; without one, the failure marker itself (e.g. the conductor's ``Failed to
compute_task_build_instances: No valid host was found``) or ``HTTP 5xx on <op>``.

End of a trace: for asynchronous operations the last completion (``done``) or work record
(delete: lock waits, deallocation, allocations deleted), else the API access line.

Breakdown (event-gap attribution, a log-based critical-path approximation): the trace's events,
sorted by time, cut its end-to-end time into gaps; a gap between two records of the same service
is that service's time. A gap from another service's record to a record that continues its
own span (not the span's first record: no RPC receipt or API request started it) is that
service's time too, unless the span's previous record was an RPC call it sent (within
``CALL_BURST_NS`` of it: it waits for the reply); every other gap between records of different
services is ``between components`` (RPC and HTTP transit, queues, work no log line shows). Why:
a process waiting silently inside its own span (nova-compute for a build slot: the semaphore of
``_locked_do_build_and_run_instance`` logs nothing, 2025.1) while another service logs the
trace's last lines of its own work (the conductor's "Replied success message" of the cast) was
booked to 'between components' by which of two records came last, 0 to 100 s per boot
between identical lab runs. The rows of one trace sum to its ``dur_s``.

Phases of nova-compute (markers logged by ``nova/compute/manager.py`` since Liberty):
claim ``Attempting claim`` -> ``Claim successful``; network ``Start building networks
asynchronously`` -> ``Instance network_info:``; block_device ``Start building block device
mappings`` -> ``Start spawning the instance``; spawn ``Start spawning`` -> ``Took N seconds to
spawn``; build: ``Took N seconds to build instance``. Delete: teardown ``Terminating instance``
-> the last of ``Took N seconds to deallocate network`` / ``to detach N volumes`` (the instance
is then saved DELETED, what a polling client sees); resource_cleanup from there to ``Deleted
allocations for instance`` (resource tracker under the ``compute_resources`` lock, placement).
"""

from __future__ import annotations

import polars as pl
import polars.selectors as cs

from stacklens.trace.completion import marker_frame, marker_hits
from stacklens.trace.link import id_lookup
from stacklens.vocab import ERROR_LEVELS, UUID_LOOSE, Outcome, RpcKind, is_client

__all__ = ["BETWEEN", "adopt_orphan_markers", "breakdown", "classify_traces", "normalize_path", "phases"]

BETWEEN = "between components"
# (method, normalized path regex) -> operation; first match wins
_NAMES: list[tuple[str, str, str]] = [
    ("POST", r"^/v2(\.1)?/servers$", "server.create"),
    ("GET", r"^/v2(\.1)?/servers/detail$", "server.list"),
    ("GET", r"^/v2(\.1)?/servers$", "server.list"),
    ("GET", r"^/v2(\.1)?/servers/\{id\}$", "server.show"),
    ("DELETE", r"^/v2(\.1)?/servers/\{id\}$", "server.delete"),
    ("POST", r"^/v2(\.1)?/servers/\{id\}/action$", "server.action"),
    ("POST", r"^/v2(\.1)?/servers/\{id\}/os-volume_attachments$", "server.volume_attach"),
    ("DELETE", r"^/v2(\.1)?/servers/\{id\}/os-volume_attachments/\{id\}$", "server.volume_detach"),
    ("POST", r"^/v[123](\.0)?/volumes$", "volume.create"),
    ("DELETE", r"^/v[123](\.0)?/volumes/\{id\}$", "volume.delete"),
    ("POST", r"^/v[123](\.0)?/volumes/\{id\}/action$", "volume.action"),
    ("POST", r"^/v2\.0/ports$", "port.create"),
    ("DELETE", r"^/v2\.0/ports/\{id\}$", "port.delete"),
    ("POST", r"^/v2\.0/networks$", "network.create"),
    ("POST", r"^/v2\.0/floatingips$", "floatingip.create"),
    ("POST", r"^/v[23](\.0)?/auth/tokens$", "token.issue"),
    ("POST", r"^/v2\.0/tokens$", "token.issue"),
    ("POST", r"^/v2/images$", "image.create"),
]
#: operations whose API answer only accepts the work: they end at a completion marker
_ASYNC = ("server.create", "server.delete", "volume.create", "server.volume_attach")
#: server.action once its records name the action (see completion.MARKERS)
_ACTIONS = ("server.live_migrate", "server.resize", "server.confirm_resize")


def normalize_path(path: pl.Expr) -> pl.Expr:
    """``/v2/<project>/servers/<uuid>?x=1`` -> ``/v2/servers/{id}``; numbers become ``{id}``."""
    p = path.str.replace(r"\?.*$", "").str.replace(r"\.json$", "")
    p = p.str.replace(r"^(/v[\d.]+)/[0-9a-f]{32}(/|$)", "${1}${2}")
    p = p.str.replace_all(UUID_LOOSE, "{id}").str.replace_all(r"/\d+(/|$)", "/{id}${1}")
    return p.str.replace(r"/$", "")


def _operation(method: pl.Expr, norm: pl.Expr) -> pl.Expr:
    expr = pl.concat_str([method, pl.lit(" "), norm])
    for m, rx, name in reversed(_NAMES):
        expr = pl.when((method == m) & norm.str.contains(rx)).then(pl.lit(name)).otherwise(expr)
    return expr


def _root_requests(tev: pl.DataFrame) -> pl.DataFrame:
    """Per trace, the request id of its root API request: the access line whose request id is
    the trace's, else the one that started first (its time minus its duration). A trace holds
    the API lines of the calls its request made downstream too (nova-api's and nova-compute's
    calls to neutron and placement carry the caller's global request id, Pike on): those name
    neither the operation nor its HTTP outcome (a 404 of nova's floating-IP lookup does not
    reject the server create)."""
    api = tev.filter(pl.col("http_status").is_not_null() & pl.col("request_id").is_not_null())
    start = pl.col("ts_ns") - (pl.col("http_dur_s").fill_null(0.0) * 1e9).cast(pl.Int64)
    return (
        api.with_columns(_own=(pl.col("request_id") != pl.col("trace_id")).cast(pl.Int8),
                         _start=start)
        .sort(["trace_id", "_own", "_start", "ts_ns"], maintain_order=True)
        .group_by("trace_id", maintain_order=True)
        .agg(pl.col("request_id").first().alias("_root_rid"))
    )


def _base(tev: pl.DataFrame) -> pl.DataFrame:
    """Per-trace facts that do not need the markers."""
    is_err = pl.col("level").is_in(ERROR_LEVELS) & pl.col("synthetic").not_()
    tev = tev.join(_root_requests(tev), on="trace_id", how="left", maintain_order="left")
    # the root request's API lines (server and client side); traces whose API lines carry no
    # request id keep every API line, as before
    api_line = pl.col("http_status").is_not_null() & (
        pl.col("_root_rid").is_null() | (pl.col("request_id") == pl.col("_root_rid")))
    server_api = api_line & ~is_client()
    t = (
        tev.group_by("trace_id", maintain_order=True)
        .agg(
            pl.col("http_method").filter(api_line).first().alias("_m"),
            pl.col("http_path").filter(api_line).first().alias("_p"),
            pl.col("http_status").filter(api_line).max().alias("http_status"),
            pl.col("rpc_topic").drop_nulls().first().alias("_topic"),
            is_err.sum().cast(pl.Int32).alias("n_error_records"),
            pl.col("message").filter(is_err).first().alias("first_error"),
            pl.col("instance_uuid").drop_nulls().first().alias("instance_uuid"),
            pl.col("ts_ns").min().alias("start_ns"),
            pl.col("ts_ns").max().alias("_last_ts"),
            pl.col("ts_ns").filter(api_line).max().alias("_api_ts"),
            pl.col("http_dur_s").filter(is_client())
            .drop_nulls()
            .first()
            .alias("client_dur_s"),
            pl.col("service").unique(maintain_order=True).str.join(",").alias("services"),
        )
        .with_columns(_norm=normalize_path(pl.col("_p")))
    )
    # the line that answered with the worst status, server side first, the earliest of equals
    # (a stable sort of the API lines: a sort_by within each group took 0.11 of 0.29 s and
    # broke ties as its sort happened to): 5xx evidence
    worst = (
        tev.filter(api_line)
        .select("trace_id", "ts_ns", "span_id", "service", _s=server_api, _h="http_status")
        .sort("trace_id", "_s", "_h", descending=[False, True, True], maintain_order=True)
        .group_by("trace_id", maintain_order=True)
        .agg(pl.struct("ts_ns", "span_id", "service").first().alias("_api5"))
    )
    t = t.join(worst, on="trace_id", how="left", maintain_order="left")
    op = (
        pl.when(pl.col("_m").is_not_null())
        .then(_operation(pl.col("_m"), pl.col("_norm")))
        .when(pl.col("_topic").is_not_null())
        .then(pl.concat_str([pl.lit("rpc "), pl.col("_topic")]))
        .otherwise(pl.lit("background"))
    )
    return t.with_columns(operation=op)


def _marker_facts(tev: pl.DataFrame, t: pl.DataFrame) -> pl.DataFrame:
    """Per trace, from the completion markers of its operation: ``_action``, ``_done_ts``,
    ``_end_ts``, ``_fail`` (struct of the first failure record), ``_retries``."""
    mf = marker_frame().select("marker", "operation", "meaning", "action")
    hits = (
        marker_hits(tev)
        .join(mf, on="marker")
        .join(t.select("trace_id", "operation"), on=["trace_id", "operation"])
        .sort("trace_id", "ts_ns", "eid", maintain_order=True)
    )
    m = pl.col("meaning")
    # a spawn failure is a failure only when nothing follows it (no reschedule, no build on
    # another host, no completion): Havana's run_instance sets ERROR without a log line
    later = (m.is_in(["retry", "attempt", "done"])).cast(pl.Int32).reverse().cum_sum().reverse()
    hits = hits.with_columns(_later=later.over("trace_id") - m.is_in(["retry", "attempt", "done"]).cast(pl.Int32))
    terminal = (m == "failed") | ((m == "spawn_failed") & (pl.col("_later") == 0))
    fail = pl.struct("ts_ns", "span_id", "service", "message", "file", "line_no")
    # reschedules per instance (a multi-instance create builds on several hosts at once):
    # logged reschedules, or claims on N distinct hosts = N-1 reschedules; the trace's count is
    # that of its most rescheduled instance
    per_instance = (
        hits.filter(m.is_in(["retry", "attempt"]))
        .group_by("trace_id", pl.col("instance_uuid").fill_null(""))
        .agg(pl.max_horizontal(
            (m == "retry").sum().cast(pl.Int64),
            pl.col("host").filter(m == "attempt").n_unique().cast(pl.Int64) - 1,
        ).alias("_r"))
        .group_by("trace_id")
        .agg(pl.col("_r").max().cast(pl.Int32).alias("_retries"))
    )
    return hits.group_by("trace_id").agg(
        pl.col("action").drop_nulls().first().alias("_action"),
        pl.col("ts_ns").filter(m == "done").max().alias("_done_ts"),
        pl.col("ts_ns").filter(m.is_in(["done", "work"])).max().alias("_end_ts"),
        fail.filter(terminal).first().alias("_fail"),
        pl.col("ts_ns").filter(terminal).max().alias("_fail_end_ts"),
    ).join(per_instance, on="trace_id", how="left")


def _root_causes(tev: pl.DataFrame, failed: pl.DataFrame) -> pl.DataFrame:
    """First error of each failing chain. ``failed`` has ``trace_id``, ``instance_uuid``,
    ``_f_ts``, ``_f_span``, ``_f_service``; returns ``trace_id``, ``_root`` (struct of message,
    service, file, line_no)."""
    spans = tev.group_by("span_id").agg(pl.col("ts_ns").min().alias("_f_span_start"))
    errs = tev.filter(pl.col("level").is_in(ERROR_LEVELS) & ~pl.col("synthetic")).select(
        "trace_id", "ts_ns", "eid", "span_id", "service", "instance_uuid", "message", "file",
        "line_no",
    )
    f = failed.join(spans.rename({"span_id": "_f_span"}), on="_f_span", how="left")
    j = errs.join(f, on="trace_id", suffix="_t").filter(
        (pl.col("ts_ns") <= pl.col("_f_ts"))
        & (
            (pl.col("instance_uuid") == pl.col("instance_uuid_t")).fill_null(False)
            | (pl.col("span_id") == pl.col("_f_span")).fill_null(False)
            | ((pl.col("service") != pl.col("_f_service"))
               & (pl.col("ts_ns") >= pl.col("_f_span_start"))).fill_null(False)
        )
    )
    return (
        j.sort("trace_id", "ts_ns", "eid")
        .group_by("trace_id")
        .agg(pl.struct("message", "service", "file", "line_no").first().alias("_root"))
    )


def classify_traces(tev: pl.DataFrame, spans: pl.DataFrame) -> pl.DataFrame:
    """One row per trace (:data:`stacklens.schema.TRACES`) from :func:`timed_events` output
    (which must carry ``eid`` and ``span_id``). Outcomes, ends and root causes as in the module
    docstring; completion markers from :data:`stacklens.trace.completion.MARKERS`."""
    t = _base(tev)
    facts = _marker_facts(tev, t)
    t = t.join(facts, on="trace_id", how="left", maintain_order="left").with_columns(
        operation=pl.when((pl.col("operation") == "server.action") & pl.col("_action").is_not_null())
        .then(pl.col("_action"))
        .otherwise(pl.col("operation"))
    )
    status = pl.col("http_status")
    ok2xx = status.is_between(200, 399)
    fail_ts = pl.col("_fail").struct.field("ts_ns")
    # an action whose records name no known action is judged by its API answer, unless it
    # reached an error state
    is_async = ok2xx & (
        pl.col("operation").is_in(_ASYNC) | pl.col("operation").is_in(_ACTIONS)
        | ((pl.col("operation") == "server.action") & fail_ts.is_not_null())
    )
    # failure markers are final (see completion.MARKERS): a later "done" does not undo them
    done = pl.col("_done_ts").is_not_null() & fail_ts.is_null()
    failed_async = is_async & fail_ts.is_not_null() & ~done
    retries = pl.col("_retries").fill_null(0)
    outcome = (
        pl.when(status >= 500).then(pl.lit(Outcome.FAILED))
        .when(status.is_between(400, 499)).then(pl.lit(Outcome.REJECTED))
        .when(failed_async).then(pl.lit(Outcome.FAILED))
        .when(is_async & done & (retries > 0)).then(pl.lit(Outcome.RETRIED))
        .when(is_async & done).then(pl.lit(Outcome.SUCCESS))
        .when(is_async).then(pl.lit(Outcome.UNKNOWN))
        .when(ok2xx).then(pl.lit(Outcome.SUCCESS))
        .otherwise(pl.lit(Outcome.UNKNOWN))
    )
    reason = (
        pl.when(status >= 500).then(pl.concat_str([pl.lit("HTTP "), status.cast(pl.String)]))
        .when(status.is_between(400, 499)).then(pl.concat_str([pl.lit("HTTP "), status.cast(pl.String)]))
        .when(failed_async).then(pl.lit("failure logged"))
        .when(is_async & done).then(pl.lit("completion logged"))
        .when(is_async & (pl.col("n_error_records") > 0))
        .then(pl.lit("no completion or failure logged (errors logged)"))
        .when(is_async).then(pl.lit("no completion or failure logged"))
        .when(ok2xx).then(pl.lit("HTTP 2xx"))
        .when(status.is_not_null()).then(pl.concat_str([pl.lit("HTTP "), status.cast(pl.String)]))
        .otherwise(pl.lit("no API response logged"))
    )
    t = t.with_columns(outcome=outcome, outcome_reason=reason, _is_async=is_async, _done=done)
    # failure evidence: the 5xx answer, else the first failure marker
    api5 = pl.col("_api5")
    t = t.with_columns(
        _f_ts=pl.when(status >= 500).then(api5.struct.field("ts_ns")).otherwise(fail_ts),
        _f_span=pl.when(status >= 500).then(api5.struct.field("span_id"))
        .otherwise(pl.col("_fail").struct.field("span_id")),
        _f_service=pl.when(status >= 500).then(api5.struct.field("service"))
        .otherwise(pl.col("_fail").struct.field("service")),
    )
    failed = t.filter(pl.col("outcome") == Outcome.FAILED).select(
        "trace_id", "instance_uuid", "_f_ts", "_f_span", "_f_service"
    )
    t = t.join(_root_causes(tev, failed), on="trace_id", how="left", maintain_order="left")
    is_failed = pl.col("outcome") == Outcome.FAILED
    http_err = pl.concat_str([pl.lit("HTTP "), status.cast(pl.String), pl.lit(" on "), pl.col("_m"),
                              pl.lit(" "), pl.col("_norm")])
    root, fm = pl.col("_root"), pl.col("_fail")
    nspans = spans.group_by("trace_id").agg(pl.len().cast(pl.Int32).alias("n_spans"))
    return (
        t.with_columns(
            error=pl.when(~is_failed).then(None)
            .otherwise(pl.coalesce(root.struct.field("message"), fm.struct.field("message"), http_err)),
            error_service=pl.when(~is_failed).then(None)
            .otherwise(pl.coalesce(root.struct.field("service"), fm.struct.field("service"))),
            error_file=pl.when(~is_failed).then(None)
            .otherwise(pl.coalesce(root.struct.field("file"), fm.struct.field("file"))),
            error_line_no=pl.when(~is_failed).then(None)
            .otherwise(pl.coalesce(root.struct.field("line_no"), fm.struct.field("line_no"))),
            retries=pl.when(pl.col("_is_async")).then(retries).otherwise(0).cast(pl.Int32),
            # the end is a logged completion: the last done/work record for asynchronous
            # operations, or their last failure record (records logged after it, such as a
            # reused thread context, do not stretch the request), else the access line
            end_exact=pl.when(pl.col("_is_async"))
            .then(pl.col("_done") | (is_failed & pl.col("_f_ts").is_not_null()))
            .otherwise(status.is_not_null()),
            end_ns=pl.when(pl.col("_is_async") & pl.col("_done"))
            .then(pl.max_horizontal("_end_ts", "_done_ts", "_api_ts"))
            # a failed operation ends at its last failure record (error state set)
            .when(pl.col("_is_async") & is_failed & pl.col("_f_ts").is_not_null())
            .then(pl.max_horizontal("_f_ts", "_fail_end_ts", "_api_ts"))
            .when(~pl.col("_is_async") & pl.col("_api_ts").is_not_null())
            .then(pl.col("_api_ts"))
            .otherwise(pl.col("_last_ts")),
            request_id=pl.col("trace_id"),
        )
        .with_columns(dur_s=(pl.col("end_ns") - pl.col("start_ns")) / 1e9)
        .join(nspans, on="trace_id", how="left", maintain_order="left")
        .drop(cs.starts_with("_"))
    )


#: How long after an RPC call it sent (oslo.messaging's ``CALL msg_id`` line) a process's
#: records are still the call's own lines ("Sending topic", "Expecting reply"): ns.
CALL_BURST_NS = 50_000_000


def breakdown(tev: pl.DataFrame, traces: pl.DataFrame) -> pl.DataFrame:
    """Event-gap attribution of each trace's time (:data:`stacklens.schema.BREAKDOWN`), over
    the records between the trace's start and its end (``traces.end_ns``); ``tev`` as
    :func:`stacklens.trace.spans.timed_events` returns it (``span_id``, ``rpc_kind``; sorted by
    trace and time). Rules: module docstring."""
    # the five columns it reads, before the join: a join of the whole records copied them all
    tev = tev.select("trace_id", "ts_ns", "service", "span_id", "rpc_kind").join(
        traces.select("trace_id", pl.col("end_ns").alias("_end")), on="trace_id",
        maintain_order="left")
    tev = tev.filter(pl.col("ts_ns") <= pl.col("_end"))
    # rows are sorted by trace and time: the next row is the trace's next record unless the
    # trace ends there (a plain shift, no group-by)
    same = pl.col("trace_id").shift(-1) == pl.col("trace_id")
    nxt = pl.when(same).then(pl.col("ts_ns").shift(-1))
    nxt_svc = pl.when(same).then(pl.col("service").shift(-1))
    return (
        tev.select("trace_id", "ts_ns", "service")
        .with_columns(_cont=_continues(tev))
        .with_columns(
            gap=(nxt - pl.col("ts_ns")) / 1e9,
            component=pl.when(nxt_svc == pl.col("service"))
            .then(pl.col("service"))
            .when(same & pl.col("_cont").shift(-1))
            .then(nxt_svc)
            .otherwise(pl.lit(BETWEEN)),
        )
        .filter(pl.col("gap").is_not_null())
        .group_by("trace_id", "component", maintain_order=True)
        .agg(pl.col("gap").sum().alias("dur_s"))
    )


def _continues(tev: pl.DataFrame) -> pl.Series:
    """Per row of ``tev`` (``ts_ns``, ``span_id``, ``rpc_kind``), in its order: the record goes
    on its span's work (Boolean): the span has a previous record and no RPC call of the span
    at or before that record was sent within :data:`CALL_BURST_NS` of it.

    Computed on the rows sorted by span (stable), with each span's first row and last call
    carried forward by index: the same as ``shift(1).over("span_id")`` and ``forward_fill()
    .shift(1).over("span_id")`` on ``tev``'s order, which ran group by group (0.54 -> 0.07 s
    on 430 k records)."""
    k = pl.col("_k")
    s = (
        tev.select("ts_ns", "span_id", "rpc_kind").with_row_index("_i")
        .sort("span_id", maintain_order=True)
        .with_columns(_k=pl.int_range(pl.len(), dtype=pl.Int64))
    )
    new = pl.col("span_id").ne_missing(pl.col("span_id").shift(1)).fill_null(True)
    s = s.with_columns(
        _start=pl.when(new).then(k).forward_fill(),
        # the row of the last call up to the previous row (any span: checked against _start)
        _ci=pl.when(pl.col("rpc_kind") == RpcKind.CALL.value).then(k).forward_fill().shift(1),
    )
    prev_ns = pl.when(k - 1 >= pl.col("_start")).then(pl.col("ts_ns").shift(1))
    call_ns = pl.when(pl.col("_ci") >= pl.col("_start")).then(
        pl.col("ts_ns").gather(pl.col("_ci").fill_null(0)))
    awaiting = call_ns >= prev_ns - CALL_BURST_NS
    return (
        s.select("_i", _cont=prev_ns.is_not_null() & ~awaiting.fill_null(False))
        .sort("_i")
        .get_column("_cont")
    )


_TORN = r"Took \d+(\.\d+)? seconds to (deallocate network|detach \d+ volumes)"
# phase -> (start regex, end regex, start is the first (min) or the last (max) match)
_MARKS = {
    "claim": (r"Attempting claim", r"Claim successful|Claim failed", "min"),
    "network": (r"Start building networks asynchronously", r"Instance network_info:", "min"),
    "block_device": (r"Start building block device mappings", r"Start spawning the instance", "min"),
    "spawn": (r"Start spawning the instance", r"Took \d+(\.\d+)? seconds to spawn", "min"),
    # delete (nova/compute/manager.py _shutdown_instance, _delete_instance, 12.0.0-31.0.0):
    # teardown ends when the guest, network and volumes are gone; the instance is then saved
    # as DELETED (what a polling client sees). resource_cleanup is what follows
    # (_complete_deletion: resource tracker under the compute_resources lock, placement
    # allocations deleted) before the capacity is free again.
    "teardown": (r"Terminating instance", _TORN, "min"),
    "resource_cleanup": (_TORN, r"Deleted allocations? for (instance|consumer) ", "max"),
}


def phases(tev: pl.DataFrame) -> pl.DataFrame:
    """nova-compute phases per trace (:data:`stacklens.schema.PHASES`): build phases (claim,
    network, block_device, spawn, build) and delete phases (teardown, resource_cleanup)."""
    cpu = tev.select("trace_id", "service", "ts_ns", "message", "took_what", "took_s").filter(
        pl.col("service") == "nova-compute")
    frames = []
    for name, (start_rx, end_rx, first) in _MARKS.items():
        st = pl.col("ts_ns").filter(pl.col("message").str.contains(start_rx))
        frames.append(
            cpu.group_by("trace_id", "service", maintain_order=True)
            .agg(
                (st.min() if first == "min" else st.max()).alias("start_ns"),
                pl.col("ts_ns").filter(pl.col("message").str.contains(end_rx)).max().alias("end_ns"),
            )
            .with_columns(phase=pl.lit(name))
        )
    build = (
        cpu.filter(pl.col("took_what").str.starts_with("build instance"))
        .group_by("trace_id", "service", maintain_order=True)
        .agg(pl.col("ts_ns").max().alias("end_ns"), pl.col("took_s").max().alias("_t"))
        .with_columns(
            start_ns=pl.col("end_ns") - (pl.col("_t") * 1e9).cast(pl.Int64), phase=pl.lit("build")
        )
        .drop("_t")
    )
    out = pl.concat(frames + [build], how="diagonal_relaxed")
    return out.filter(
        pl.col("start_ns").is_not_null()
        & pl.col("end_ns").is_not_null()
        & (pl.col("end_ns") >= pl.col("start_ns"))
    ).with_columns(dur_s=(pl.col("end_ns") - pl.col("start_ns")) / 1e9)


def _starts(traced: pl.LazyFrame, more: pl.DataFrame | None) -> pl.LazyFrame:
    """Per trace of ``traced``: ``_t0``, its records' earliest ``ts_ns``, and ``more``'s."""
    t0 = traced.group_by("trace_id").agg(_t0=pl.col("ts_ns").min())
    if more is None:
        return t0
    return (pl.concat([t0, more.lazy().select("trace_id", "_t0")])
            .group_by("trace_id").agg(pl.col("_t0").min()))


def adopt_orphan_markers(linked: pl.DataFrame, starts: pl.DataFrame | None = None) -> pl.DataFrame:
    """Give context-less completion records to the operation they complete.

    Some markers are logged without a request context but with the instance tag, e.g. the
    libvirt driver's ``[-] [instance: X] Instance spawned successfully.`` (its ``_wait_for_boot``
    looping call runs without the request's context, nova 2013.2-31.0.0). Such a record
    (unlinked, or linked only by the instance window to, say, a lifecycle-event trace) joins
    the latest trace of the same instance that started before it and whose operation the
    marker applies to (:data:`~stacklens.trace.completion.
    MARKERS`). ``linked`` is :func:`stacklens.trace.link.link_events` output; returns it with
    ``trace_id`` filled for those records (same columns and order). ``linked`` may also come
    unsorted (``link_events(..., sort=False)``): the same result. ``starts`` (``trace_id``,
    ``_t0``: Int64 ns): earliest times of traces' records left out of ``linked`` (records that
    are no orphans; the bounded stage's :mod:`~stacklens.trace.reqonly`), read as if those
    records were in it."""
    from stacklens.trace.completion import MARKERS, message_body

    # no context of its own: unlinked, or linked only by the instance window (link rule 4)
    orphan = (pl.col("request_id").is_null() & pl.col("rpc_kind").is_null()
              & pl.col("instance_uuid").is_not_null())
    # the candidates, filtered once (few of all records); ``message`` may come categorical
    # (the bounded trace stage's global pass: only these records' messages are kept)
    orphans = linked.filter(orphan).with_columns(pl.col("message").cast(pl.String))
    if not orphans.height:
        return linked
    # per trace of a request: its first API line's method and path and its first instance,
    # in time order, and its start. Read from the few columns and records each needs, each
    # subset sorted alone (``linked`` may come unsorted, and a filter or sort of it copied
    # every column of most records); the traces without an API method or an instance drop out
    traced = linked.lazy().filter(pl.col("trace_id").is_not_null() & ~orphan)

    def first(keep: pl.Expr, *cols: str) -> pl.LazyFrame:
        return (traced.filter(keep).select("trace_id", *cols, "ts_ns", "eid")
                .sort("ts_ns", "eid").group_by("trace_id").agg(pl.col(*cols).first()))

    ops = (
        first(pl.col("http_status").is_not_null(), "http_method", "http_path")
        .filter(pl.col("http_method").is_not_null())
        .join(first(pl.col("instance_uuid").is_not_null(), "instance_uuid"), on="trace_id")
        .join(_starts(traced, starts), on="trace_id")
        .select("trace_id", _m="http_method", _p=pl.col("http_path").cast(pl.String),
                instance_uuid="instance_uuid", _t0="_t0")
        .collect()
        .with_columns(_op=_operation(pl.col("_m"), normalize_path(pl.col("_p"))))
    )
    # the tags stripped once, and only the orphans some marker matches kept (not per marker)
    markers = [m for m in MARKERS if m.meaning in ("done", "work", "failed", "spawn_failed")]
    any_rx = "|".join(f"(?:{m.regex})" for m in markers)
    orphans = (orphans.select("eid", "instance_uuid", "ts_ns", _body=message_body())
               .filter(pl.col("_body").str.contains(any_rx)))
    found = []
    for m in markers:
        cand = (orphans.filter(pl.col("_body").str.contains(m.regex))
                .select("eid", "instance_uuid", "ts_ns"))
        tr = ops.filter(pl.col("_op").is_in(list(m.ops))).select("trace_id", "instance_uuid", "_t0")
        if cand.height and tr.height:
            found.append(
                cand.sort("ts_ns")
                .join_asof(tr.sort("_t0"), left_on="ts_ns", right_on="_t0", by="instance_uuid",
                           strategy="backward", check_sortedness=False)
                .filter(pl.col("trace_id").is_not_null())
                .select("eid", pl.col("trace_id").alias("_adopt"))
            )
    if not found:
        return linked
    adopt = pl.concat(found).unique("eid", keep="first")
    # a new column, not a join (which copied every column of ``linked``)
    return linked.with_columns(trace_id=pl.coalesce(id_lookup("eid", adopt, "_adopt"), "trace_id"))
