"""Operation, outcome, latency breakdown and phases of each trace.

Operation: the root API request's method and path, normalized (project ids, uuids and numbers
become ``{id}``, the query string is dropped), with friendly names for the requests that matter
at scale (``server.create`` for ``POST /v2.1/servers`` ...). Traces without an API request are
named after their first RPC topic (``rpc compute``) or ``background``.

Outcome (every trace gets exactly one):

``success``   completed without error;
``retried``   completed after at least one reschedule;
``failed``    an HTTP 5xx, or an ERROR/CRITICAL record and no completion afterwards; ``error``
              is the *first* error in causal (time) order, so each failed request counts once;
``rejected``  the API answered 4xx (bad request, quota, not found; even when a service logged
              the refusal at ERROR): the cloud refused, it did not fail;
``unknown``   an asynchronous operation (server create/delete) whose completion is not in the
              logs: never counted as a success.

Breakdown (event-gap attribution, a log-based critical-path approximation): the trace's events,
sorted by time, cut its end-to-end time into gaps; a gap between two records of the same service
is that service's time, a gap between records of different services is ``between components``
(RPC transit, queues, and work no log line shows). The rows of one trace sum to its ``dur_s``.

Phases of nova-compute (markers logged by ``nova/compute/manager.py`` since Liberty):
claim ``Attempting claim`` -> ``Claim successful``; network ``Start building networks
asynchronously`` -> ``Instance network_info:``; block_device ``Start building block device
mappings`` -> ``Start spawning the instance``; spawn ``Start spawning`` (or end minus ``Took N
seconds to spawn``) -> that ``Took`` line; build: ``Took N seconds to build instance``.
"""

from __future__ import annotations

import polars as pl

__all__ = ["BETWEEN", "breakdown", "classify_traces", "normalize_path", "phases"]

BETWEEN = "between components"
_ID = r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}"
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
_ASYNC = ("server.create", "server.delete")
# nova/compute/manager.py "Build of instance %s was re-scheduled: %s", conductor retries
_RETRY = r"was re-scheduled|[Rr]etrying build|[Rr]escheduling (?:the )?(?:build|instance)"


def normalize_path(path: pl.Expr) -> pl.Expr:
    """``/v2/<project>/servers/<uuid>?x=1`` -> ``/v2/servers/{id}``; numbers become ``{id}``."""
    p = path.str.replace(r"\?.*$", "").str.replace(r"\.json$", "")
    p = p.str.replace(r"^(/v[\d.]+)/[0-9a-f]{32}(/|$)", "${1}${2}")
    p = p.str.replace_all(_ID, "{id}").str.replace_all(r"/\d+(/|$)", "/{id}${1}")
    return p.str.replace(r"/$", "")


def _operation(method: pl.Expr, norm: pl.Expr) -> pl.Expr:
    expr = pl.concat_str([method, pl.lit(" "), norm])
    for m, rx, name in reversed(_NAMES):
        expr = pl.when((method == m) & norm.str.contains(rx)).then(pl.lit(name)).otherwise(expr)
    return expr


def classify_traces(tev: pl.DataFrame, spans: pl.DataFrame) -> pl.DataFrame:
    """One row per trace (:data:`stacklens.schema.TRACES`) from :func:`timed_events` output."""
    is_err = pl.col("level").is_in(["ERROR", "CRITICAL"])
    real = pl.col("synthetic").not_()
    api_line = pl.col("http_status").is_not_null()
    build_done = pl.col("took_what").str.starts_with("build instance")
    delete_done = pl.col("took_what").str.contains(r"^(deallocate network|destroy the instance)")
    t = (
        tev.group_by("trace_id", maintain_order=True)
        .agg(
            pl.col("http_method").filter(api_line).first().alias("_m"),
            pl.col("http_path").filter(api_line).first().alias("_p"),
            pl.col("http_status").filter(api_line).max().alias("http_status"),
            pl.col("rpc_topic").drop_nulls().first().alias("_topic"),
            pl.col("message").filter(is_err).first().alias("error"),
            pl.col("service").filter(is_err).first().alias("error_service"),
            pl.col("file").filter(is_err).first().alias("error_file"),
            pl.col("line_no").filter(is_err).first().alias("error_line_no"),
            pl.col("ts_ns").filter(is_err).first().alias("_err_ts"),
            pl.col("ts_ns").filter(build_done | delete_done).max().alias("_done_ts"),
            pl.col("message").str.contains(_RETRY).filter(real).sum().alias("retries"),
            pl.col("instance_uuid").drop_nulls().first().alias("instance_uuid"),
            pl.col("ts_ns").min().alias("start_ns"),
            pl.col("ts_ns").max().alias("_last_ts"),
            pl.col("ts_ns").filter(api_line).max().alias("_api_ts"),
            pl.col("http_dur_s").filter(pl.col("logger").str.ends_with("rest_client"))
            .drop_nulls()
            .first()
            .alias("client_dur_s"),
            pl.col("service").unique(maintain_order=True).str.join(",").alias("services"),
        )
        .with_columns(_norm=normalize_path(pl.col("_p")))
    )
    op = (
        pl.when(pl.col("_m").is_not_null())
        .then(_operation(pl.col("_m"), pl.col("_norm")))
        .when(pl.col("_topic").is_not_null())
        .then(pl.concat_str([pl.lit("rpc "), pl.col("_topic")]))
        .otherwise(pl.lit("background"))
    )
    t = t.with_columns(operation=op)
    completed = pl.col("_done_ts").is_not_null() & (
        pl.col("_err_ts").is_null() | (pl.col("_done_ts") > pl.col("_err_ts"))
    )
    is_async = pl.col("operation").is_in(_ASYNC) & (pl.col("http_status") < 300)
    outcome = (
        pl.when(is_async & completed & (pl.col("retries") > 0))
        .then(pl.lit("retried"))
        .when(is_async & completed)
        .then(pl.lit("success"))
        .when(pl.col("http_status") >= 500)
        .then(pl.lit("failed"))
        .when(pl.col("http_status").is_between(400, 499))
        .then(pl.lit("rejected"))
        .when(pl.col("error").is_not_null())
        .then(pl.lit("failed"))
        .when(is_async)
        .then(pl.lit("unknown"))
        .when(pl.col("http_status").is_not_null())
        .then(pl.lit("success"))
        .otherwise(pl.lit("unknown"))
    )
    nspans = spans.group_by("trace_id").agg(pl.len().cast(pl.Int32).alias("n_spans"))
    return (
        t.with_columns(
            outcome=outcome,
            error=pl.when(pl.col("error").is_null() & (pl.col("http_status") >= 500))
            .then(pl.concat_str([pl.lit("HTTP "), pl.col("http_status").cast(pl.String),
                                 pl.lit(" on "), pl.col("_m"), pl.lit(" "), pl.col("_norm")]))
            .otherwise(pl.col("error")),
            retries=pl.col("retries").cast(pl.Int32),
            # the end is a logged completion: the build/delete for async operations, else the
            # access line
            end_exact=pl.when(is_async).then(completed).otherwise(pl.col("http_status").is_not_null()),
            # end-to-end ends at the logged completion (records logged after it, such as a
            # reused thread context, do not stretch the request)
            end_ns=pl.when(is_async & completed)
            .then(pl.col("_done_ts"))
            .when(~is_async & pl.col("_api_ts").is_not_null())
            .then(pl.col("_api_ts"))
            .otherwise(pl.col("_last_ts")),
            request_id=pl.col("trace_id"),
        )
        .with_columns(dur_s=(pl.col("end_ns") - pl.col("start_ns")) / 1e9)
        .join(nspans, on="trace_id", how="left")
        .drop("_m", "_p", "_topic", "_err_ts", "_done_ts", "_norm", "_last_ts", "_api_ts")
    )


def breakdown(tev: pl.DataFrame, traces: pl.DataFrame) -> pl.DataFrame:
    """Event-gap attribution of each trace's time (:data:`stacklens.schema.BREAKDOWN`), over
    the records between the trace's start and its end (``traces.end_ns``)."""
    tev = tev.join(traces.select("trace_id", pl.col("end_ns").alias("_end")), on="trace_id")
    tev = tev.filter(pl.col("ts_ns") <= pl.col("_end"))
    nxt = pl.col("ts_ns").shift(-1).over("trace_id")
    nxt_svc = pl.col("service").shift(-1).over("trace_id")
    return (
        tev.select("trace_id", "ts_ns", "service")
        .with_columns(
            gap=(nxt - pl.col("ts_ns")) / 1e9,
            component=pl.when(nxt_svc == pl.col("service"))
            .then(pl.col("service"))
            .otherwise(pl.lit(BETWEEN)),
        )
        .filter(pl.col("gap").is_not_null())
        .group_by("trace_id", "component", maintain_order=True)
        .agg(pl.col("gap").sum().alias("dur_s"))
    )


_MARKS = {
    "claim": (r"Attempting claim", r"Claim successful|Claim failed"),
    "network": (r"Start building networks asynchronously", r"Instance network_info:"),
    "block_device": (r"Start building block device mappings", r"Start spawning the instance"),
    "spawn": (r"Start spawning the instance", r"Took \d+(\.\d+)? seconds to spawn"),
}


def phases(tev: pl.DataFrame) -> pl.DataFrame:
    """nova-compute phases per trace (:data:`stacklens.schema.PHASES`)."""
    cpu = tev.filter(pl.col("service") == "nova-compute")
    frames = []
    for name, (start_rx, end_rx) in _MARKS.items():
        frames.append(
            cpu.group_by("trace_id", "service")
            .agg(
                pl.col("ts_ns").filter(pl.col("message").str.contains(start_rx)).min().alias("start_ns"),
                pl.col("ts_ns").filter(pl.col("message").str.contains(end_rx)).max().alias("end_ns"),
            )
            .with_columns(phase=pl.lit(name))
        )
    build = (
        cpu.filter(pl.col("took_what").str.starts_with("build instance"))
        .group_by("trace_id", "service")
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
