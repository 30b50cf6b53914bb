"""Per-service resource profiles during a run (issue 8): CPU, RSS, threads, open sockets of
local processes (psutil) and the loopback byte counters, as the canonical table
``resource_samples`` (:mod:`stacklens.schema`). :class:`ResourceRecorder` is the
:class:`~stacklens.recorder.Recorder`."""

from stacklens.resources.recorder import (
    HOST_CPU_SERVICE,
    NET_SERVICE,
    ProcTarget,
    ResourceRecorder,
)

__all__ = ["HOST_CPU_SERVICE", "NET_SERVICE", "ProcTarget", "ResourceRecorder"]
