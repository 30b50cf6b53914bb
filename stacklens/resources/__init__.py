"""Per-service resource profiles during a run (issue 8): CPU, RSS, threads, open sockets of
local processes (psutil) and the loopback byte counters, as the canonical table
``resource_samples`` (:mod:`stacklens.schema`). :class:`ResourceRecorder` is the
:class:`~stacklens.recorder.Recorder`."""

from stacklens.resources.recorder import NET_SERVICE, ProcTarget, ResourceRecorder

__all__ = ["NET_SERVICE", "ProcTarget", "ResourceRecorder"]
