"""Completion, failure and retry markers of asynchronous OpenStack operations, per release.

An API answers ``202 Accepted`` long before the work is done: the end of ``server.create`` is
the instance becoming ACTIVE on its compute host, the end of ``server.delete`` is the instance
really gone (hypervisor destroy, network deallocated, placement allocations deleted, after the
lock waits), a volume is created when cinder-volume says so. This module declares, in one table
(:data:`MARKERS`), the log messages that mark those points, as each release writes them, with
the source file they come from. Adding a release's marker is one line.

Meanings (column ``meaning``):

``done``      the operation completed: success, end of the request (the last ``done`` or
              ``work`` record of the trace is the end);
``work``      a record of the operation's own work after the API answered (lock waits,
              cleanup): it moves the end later but does not by itself prove completion;
``failed``    an error state was reached, a fault recorded, a reschedule limit exceeded or no
              valid host found: the operation failed (every such message is logged only when
              the failure is final, so it wins over a later ``done`` such as a lock release);
``spawn_failed`` the build failed on a host; it is a failure only when nothing follows it (no
              reschedule, no build on another host, no completion);
``retry``     one reschedule of the build to another host;
``attempt``   a build attempt on a host (resource claim): claims on N distinct hosts mean N-1
              reschedules even when the reschedule itself is only logged at DEBUG.

Markers apply to the operations named in ``ops`` (see :mod:`stacklens.trace.classify`);
``server.action`` markers name the action they reveal (``action``), since the access line does
not carry the action body. Sources were read at the nova and cinder release tags given in
``releases`` (``2013.2`` Havana .. ``31.0.0`` 2025.1; cinder ``2013.2`` .. ``26.0.0``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import polars as pl

from stacklens.vocab import UUID

__all__ = ["MARKERS", "Marker", "marker_frame", "marker_hits", "message_body"]

@dataclass(frozen=True)
class Marker:
    """One marker message: ``regex`` (searched in the message without its resource tags, see
    :func:`message_body`), the operations it applies to, its meaning (see the module
    docstring), the releases that log it, the source file, the action it reveals for
    ``server.action`` and, for messages too generic to stand alone, the ``logger`` (regex on
    ``events.logger``) that must have written it."""

    regex: str
    ops: tuple[str, ...]
    meaning: str
    releases: str
    source: str
    action: str | None = None
    logger: str | None = None


_C = ("server.create",)
_D = ("server.delete",)
_A = ("server.action",)
_NOVA = "nova/compute/manager.py"
_LV = "nova/virt/libvirt/driver.py"

#: The markers, one per line. Regexes are matched with ``str.contains`` (anchor when needed).
MARKERS: tuple[Marker, ...] = (
    # ---- server.create: ACTIVE ------------------------------------------------------------
    Marker(r"^Took \d+(\.\d+)? seconds to build instance", _C, "done", "12.0.0-31.0.0", _NOVA),
    Marker(r"^Instance spawned successfully", _C, "done", "2013.2-31.0.0", _LV + " _wait_for_boot"),
    Marker(r"^Took \d+(\.\d+)? seconds to spawn the instance", _C, "work", "12.0.0-31.0.0", _NOVA),
    Marker(r"^Successfully provisioned Ironic node", _C, "work", "12.0.0-31.0.0",
           "nova/virt/ironic/driver.py spawn"),
    # build attempts on a host (claims.py: AUDIT/INFO "Claim successful", "... on node X" 2016+)
    Marker(r"^Claim successful", _C, "attempt", "2013.2-31.0.0", "nova/compute/claims.py",
           logger=r"^nova\.compute\.claims$"),
    # reschedules: RescheduledException message logged at DEBUG (Icehouse+ build_and_run path),
    # Havana/Icehouse run_instance path "Re-scheduling run_instance: attempt N" (DEBUG) and the
    # original error logged only when rescheduled ("Error: %s", _log_original_error, ERROR)
    Marker(r"^Build of instance \S+ was re-scheduled", _C, "retry", "2013.2-31.0.0",
           "nova/exception.py RescheduledException, " + _NOVA),
    Marker(r"^Re-scheduling \w+: attempt \d+", _C, "retry", "2013.2-2014.2", _NOVA + " _reschedule"),
    Marker(r"^Error: ", _C, "retry", "2013.2-2014.2", _NOVA + " _log_original_error",
           logger=r"^nova\.compute\.manager$"),
    Marker(r"^Instance failed to spawn", _C, "spawn_failed", "2013.2-31.0.0", _NOVA),
    # failures: error state set by scheduler/conductor (scheduler/utils.py
    # set_vm_state_and_notify, WARNING "Failed to <service>_<method>: <exc>" then "Setting
    # instance to ERROR state."), NoValidHost, MaxRetriesExceeded, compute aborts
    Marker(r"^Setting instance to ERROR state", _C + _A, "failed", "2013.2-31.0.0",
           "nova/scheduler/utils.py set_vm_state_and_notify"),
    Marker(r"^Failed to (compute_task|scheduler)_\w+: ", _C + _A, "failed", "2013.2-31.0.0",
           "nova/scheduler/utils.py set_vm_state_and_notify"),
    Marker(r"No valid host was found", _C, "failed", "2013.2-31.0.0", "nova/exception.py NoValidHost"),
    Marker(r"Exceeded maximum number of retries|Exceeded max scheduling attempts", _C, "failed",
           "2013.2-31.0.0", "nova/exception.py MaxRetriesExceeded, nova/scheduler/utils.py"),
    Marker(r"^Build of instance \S+ aborted", _C, "failed", "2014.1-31.0.0",
           "nova/exception.py BuildAbortException, " + _NOVA + " _do_build_and_run_instance"),
    Marker(r"^Unexpected build failure, not rescheduling build", _C, "failed", "2014.1-31.0.0", _NOVA),
    Marker(r"^Failed to allocate the network\(s\)", _C, "failed", "2014.1-31.0.0", _NOVA),
    Marker(r"^Setting instance vm_state to ERROR", _C + _D + _A, "failed", "2013.2-31.0.0",
           _NOVA + " terminate_instance / _error_out_instance_on_exception"),
    Marker(r"^Instance build timed out\. Set to error state", _C, "failed", "2013.2-31.0.0", _NOVA),
    # ---- server.delete: instance gone ------------------------------------------------------
    Marker(r"^Took \d+(\.\d+)? seconds to deallocate network", _D, "done", "12.0.0-31.0.0", _NOVA),
    Marker(r"^Deleted allocations? for (instance|consumer) ", _D, "done", "14.0.0-31.0.0",
           "nova/scheduler/client/report.py delete_allocation_for_instance"),
    Marker(r"^Instance disappeared during terminate", _D, "done", "13.0.0-31.0.0", _NOVA),
    Marker(r"^instance's host \S+ is down, deleting from database", _D, "done", "2013.2-31.0.0",
           "nova/compute/api.py _local_delete"),
    Marker(r"^Instance deleted and does not have host field", _D, "done", "15.0.0-31.0.0",
           "nova/compute/api.py _delete"),
    Marker(r"^Instance destroyed successfully", _D, "done", "2013.2-31.0.0", _LV + " destroy"),
    Marker(r"^Took \d+(\.\d+)? seconds to destroy the instance", _D, "done", "12.0.0-31.0.0", _NOVA),
    Marker(r"^Terminating instance", _D, "work", "2013.2-31.0.0", _NOVA + " _shutdown_instance"),
    Marker(r"^Successfully unprovisioned Ironic node", _D, "work", "12.0.0-31.0.0",
           "nova/virt/ironic/driver.py destroy"),
    Marker(r"^Took \d+(\.\d+)? seconds to detach \d+ volumes", _D, "work", "12.0.0-31.0.0", _NOVA),
    Marker(r"^Deleting instance files|^Deletion of \S+ complete", _D, "work", "2013.2-31.0.0",
           _LV + " delete_instance_files"),
    # oslo_concurrency / nova lockutils: the instance lock (do_terminate_instance) and the
    # compute_resources lock of the resource tracker, waited for before the allocations go
    Marker(r"^Lock \"(" + UUID + r"|compute_resources)\" (acquired|released|\"released\")",
           _D, "work", "2015.1.0-31.0.0", "oslo_concurrency/lockutils.py"),
    Marker(r"(Semaphore / lock|Got semaphore / lock|Released file lock|Acquired file lock|"
           r"Got semaphore) \"?(" + UUID + r"|compute_resources)", _D, "work", "2013.2-2014.2",
           "nova/openstack/common/lockutils.py"),
    # ---- server.action: live migration, resize / migrate, confirm ----------------------------
    Marker(r"^Migrating instance to \S+ finished successfully", _A, "done", "2013.2-31.0.0",
           _NOVA + " _post_live_migration", "server.live_migrate"),
    Marker(r"^Post operation of migration started", _A, "work", "2013.2-31.0.0",
           _NOVA + " post_live_migration_at_destination", "server.live_migrate"),
    Marker(r"^Live migration failed|^Pre live migration failed", _A, "failed", "12.0.0-31.0.0",
           _NOVA + " _do_live_migration", "server.live_migrate"),
    Marker(r"^Migrating\s*$", _A, "work", "2013.2-31.0.0", _NOVA + " resize_instance", "server.resize",
           logger=r"^nova\.compute\.manager$"),
    Marker(r"^Instance running successfully", _A, "done", "2013.2-31.0.0",
           _LV + " finish_migration", "server.resize"),
    Marker(r"^Going to confirm migration \S+", _A, "work", "2013.2-31.0.0",
           _NOVA + " confirm_resize (DEBUG)", "server.confirm_resize"),
    Marker(r"^Confirming resize on source host", _A, "work", "22.0.0-31.0.0",
           _NOVA + " confirm_snapshot_based_resize_at_source", "server.confirm_resize"),
    Marker(r"^Deleted allocations? for migration ", _A, "done", "19.0.0-31.0.0",
           "nova/scheduler/client/report.py", "server.confirm_resize"),
    # ---- volumes (cinder-volume; nova attach) ----------------------------------------------
    Marker(r"^Created volume successfully", ("volume.create",), "done", "9.0.0-26.0.0",
           "cinder/volume/manager.py create_volume"),
    Marker(r"^Volume \S+ \(\S+\): created successfully", ("volume.create",), "done",
           "2013.2-26.0.0", "cinder/volume/flows/manager/create_volume.py CreateVolumeOnFinishTask"),
    Marker(r"^Volume \S+: re-scheduled", ("volume.create",), "retry", "2013.2-26.0.0",
           "cinder/volume/flows/manager/create_volume.py"),
    Marker(r"^Volume \S+: create failed", ("volume.create",), "failed", "2013.2-26.0.0",
           "cinder/volume/flows/manager/create_volume.py"),
    Marker(r"^Failed to (schedule_create_volume|run task \S*[Cc]reate[Vv]olume)", ("volume.create",),
           "failed", "2013.2-26.0.0", "cinder/scheduler/flows/create_volume.py"),
    Marker(r"^Attach volume completed successfully", ("server.volume_attach",), "done",
           "9.0.0-26.0.0", "cinder/volume/manager.py attach_volume"),
    Marker(r"^attachment_update completed successfully", ("server.volume_attach",), "done",
           "12.0.0-26.0.0", "cinder/volume/manager.py attachment_update"),
    Marker(r"^Attaching volume \S+ to ", ("server.volume_attach",), "work", "2013.2-31.0.0", _NOVA),
    # the compute's attach runs under the instance lock (DEBUG oslo_concurrency lines): its
    # release ends nova's part of the attach (a failure logs "Failed to attach" before it)
    Marker(r"^Lock \"[^\"]+\" \"?released\"? by \"[^\"]*do_attach_volume\"", ("server.volume_attach",),
           "done", "2015.1.0-31.0.0", _NOVA + " attach_volume, oslo_concurrency/lockutils.py"),
    Marker(r"^Failed to attach (volume )?\S+ at ", ("server.volume_attach",), "failed",
           "2013.2-31.0.0", _NOVA + " _attach_volume"),
)

_MEANINGS = ("done", "work", "failed", "spawn_failed", "retry", "attempt")
assert all(m.meaning in _MEANINGS for m in MARKERS)


def marker_frame() -> pl.DataFrame:
    """:data:`MARKERS` as a frame, one row per (marker, operation): ``marker`` (Int32 index),
    ``operation``, ``meaning``, ``action`` (String), ``regex``, ``releases``, ``source``."""
    rows = [
        (i, op, m.meaning, m.action, m.regex, m.releases, m.source)
        for i, m in enumerate(MARKERS) for op in m.ops
    ]
    return pl.DataFrame(
        rows, orient="row",
        schema={"marker": pl.Int32, "operation": pl.String, "meaning": pl.String,
                "action": pl.String, "regex": pl.String, "releases": pl.String, "source": pl.String},
    )


def message_body() -> pl.Expr:
    """``message`` without its leading resource tags: markers are matched on the text nova and
    cinder wrote, after oslo.log's ``[instance: <uuid>] `` (``instance=`` keyword) and
    ``[<type>-<uuid>] `` (``resource=`` keyword, e.g. ``[volume-<uuid>]``) prefixes."""
    return pl.col("message").str.replace(r"^(?:\[instance: [^\]]*\]\s*|\[[a-z_]+-[0-9a-f-]{32,36}\]\s*)+", "")


@functools.cache
def _marker_exprs() -> tuple[pl.Expr, ...]:
    """Per marker ``i`` of :data:`MARKERS`: ``i`` (Int32) where ``_body`` and ``logger`` match
    it, else null (built once: ~5 ms of expressions per call otherwise)."""
    return tuple(
        pl.when(pl.col("_body").str.contains(m.regex)
                & (pl.col("logger").fill_null("").str.contains(m.logger) if m.logger
                   else pl.lit(True)))
        .then(pl.lit(i, pl.Int32))
        for i, m in enumerate(MARKERS)
    )


def marker_hits(tev: pl.DataFrame) -> pl.DataFrame:
    """Records of ``tev`` (timed events: ``trace_id``, ``ts_ns``, ``host``, ``service``,
    ``eid``, ``span_id``, ``instance_uuid``, ``logger``, ``message``, ``file``, ``line_no``,
    ``synthetic``) whose message
    matches a marker: one row per (record, marker) with those columns (``synthetic`` dropped)
    and ``marker`` (Int32, index into :data:`MARKERS`). Pure; an empty frame when nothing matches."""
    cols = ["trace_id", "ts_ns", "eid", "host", "service", "span_id", "instance_uuid", "logger",
            "message", "file", "line_no"]
    any_rx = "|".join(f"(?:{m.regex})" for m in MARKERS)
    msg = pl.col("message")
    # the tags are stripped only from messages that start with one (``[``: well under 1 % of
    # records); a replace over every message copied all their text. Same rows, same order.
    tagged = msg.str.starts_with("[").fill_null(False)
    base = tev.lazy().filter(~pl.col("synthetic")).select(cols).with_row_index("_r")
    cand = (
        pl.concat([
            base.filter(~tagged & msg.str.contains(any_rx)).with_columns(_body=msg),
            base.filter(tagged).with_columns(_body=message_body())
            .filter(pl.col("_body").str.contains(any_rx)),
        ])
        .sort("_r")
        .drop("_r")
        .collect()
    )
    # every marker in one query (a filter per marker cost ~40 ms of fixed overhead per call,
    # ~40 % of a small bucket's trace stage): each record's markers as a list, one row per
    # (record, marker), in marker order and then record order, as a concatenation of one
    # filter per marker gives
    return (
        cand.with_row_index("_r")
        .with_columns(marker=pl.concat_list(_marker_exprs()))
        .explode("marker")
        .filter(pl.col("marker").is_not_null())
        .sort("marker", "_r")
        .drop("_r", "_body")
    )
