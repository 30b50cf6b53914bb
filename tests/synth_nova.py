"""Synthetic nova/cinder logs in the exact oslo.log format of three releases.

Formats, from the source of each release:

- ``havana`` (nova 2013.2, ``nova/openstack/common/log.py``): context format
  ``%(asctime)s.%(msecs)03d %(process)d %(levelname)s %(name)s [%(request_id)s %(user)s
  %(tenant)s] %(instance)s%(message)s``, default (no context) ``... %(name)s [-]
  %(instance)s%(message)s``, ``instance_format`` ``[instance: %(uuid)s] ``; ``LOG.audit`` writes
  level ``AUDIT``; tracebacks as ``... TRACE <logger> <instance>`` lines
  (``logging_exception_prefix``). API paths carry the tenant: ``/v2/<tenant>/servers``.
- ``mitaka`` (nova 13.0.0, oslo.log 3.x ``_options.py``): ``[%(request_id)s %(user_identity)s]``
  with ``logging_user_identity_format`` ``%(user)s %(tenant)s %(domain)s %(user_domain)s
  %(project_domain)s`` (``-`` for empty fields): 6 fields in the brackets.
- ``2025.1`` (nova 31.0.0, oslo.log 7.x): ``[%(global_request_id)s %(request_id)s
  %(user_identity)s]`` with ``%(user)s %(project)s %(domain)s %(system_scope)s %(user_domain)s
  %(project_domain)s``: ``[None req-X admin admin - - - -]``; the API access line is
  ``nova.api.openstack.requestlog``'s ``<ip> "POST /v2.1/servers" status: 202 len: 372
  microversion: 2.37 time: 0.19`` (``nova/api/openstack/requestlog.py``).

Eventlet's wsgi access line (Havana, Mitaka): ``<ip> "POST <path> HTTP/1.1" status: 202 len: 10
time: 0.2000000`` (``nova/wsgi.py`` ``wsgi_log_format``). Messages are quoted from
``nova/compute/manager.py``, ``nova/virt/libvirt/driver.py``, ``nova/scheduler/utils.py``,
``nova/conductor/manager.py`` and ``cinder/volume/manager.py`` of each release (see
:data:`stacklens.trace.completion.MARKERS` for files and tags).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

USER, PROJECT = "5a1b2c3d4e5f40718293a4b5c6d7e8f9", "0c7fe42d8b9f4f7ebcf4cd563078dcb4"
T0 = "2026-01-10 10:00:00.000"


def rid(n: int, kind: str = "1") -> str:
    """Deterministic request id ``req-<n><kind>...``."""
    return f"req-{n:04d}{kind * 4}-1111-1111-1111-111111111111"


def uid(n: int) -> str:
    """Deterministic instance/volume uuid."""
    return f"{n:04d}3333-3333-3333-3333-333333333333"


def _ts(t: float) -> str:
    s = int(t)
    return f"2026-01-10 10:{s // 60:02d}:{s % 60:02d}.{round((t - s) * 1000):03d}"


@dataclass
class Cloud:
    """Collects log records of one synthetic cloud and writes them as per-host files
    ``<root>/<host>/var/log/<project>/<service>.log`` (the layout ingest reads)."""

    release: str  # havana, mitaka, 2025.1
    files: dict[tuple[str, str], list[tuple[float, str]]] = field(default_factory=dict)
    pid: int = 1000

    def ctx(self, req: str | None, glob: str | None = None) -> str:
        if req is None:
            return "[-]"
        if self.release == "havana":
            return f"[{req} {USER} {PROJECT}]"
        if self.release == "mitaka":
            return f"[{req} {USER} {PROJECT} - - -]"
        return f"[{glob or 'None'} {req} {USER} {PROJECT} - - - -]"

    def level(self, level: str) -> str:
        # LOG.audit (Havana..Juno) became LOG.info (Kilo on)
        return level if self.release == "havana" or level != "AUDIT" else "INFO"

    def log(self, host: str, service: str, t: float, level: str, logger: str, req: str | None,
            msg: str, instance: str | None = None, glob: str | None = None) -> None:
        """One record; ``instance`` adds the ``[instance: <uuid>] `` tag."""
        tag = f"[instance: {instance}] " if instance else ""
        line = f"{_ts(t)} {self.pid} {self.level(level)} {logger} {self.ctx(req, glob)} {tag}{msg}\n"
        proj = service.split("-")[0]
        self.files.setdefault((host, f"{proj}/{service}.log"), []).append((t, line))

    def trace(self, host: str, service: str, t: float, logger: str, instance: str | None,
              lines: list[str]) -> None:
        """Havana traceback lines: ``<time> <pid> TRACE <logger> <instance tag><text>``."""
        tag = f"[instance: {instance}] " if instance else ""
        proj = service.split("-")[0]
        for i, text in enumerate(lines):
            self.files.setdefault((host, f"{proj}/{service}.log"), []).append(
                (t + i * 1e-6, f"{_ts(t)} {self.pid} TRACE {logger} {tag}{text}\n"))

    def api(self, t: float, req: str, method: str, path: str, status: int, dur_s: float = 0.2,
            service: str = "nova-api", glob: str | None = None) -> None:
        """The API's access line for a request that ended at ``t``."""
        if service == "nova-api" and self.release == "2025.1":
            msg = f'127.0.0.1 "{method} {path}" status: {status} len: 372 microversion: 2.37 time: {dur_s:.6f}'
            logger = "nova.api.openstack.requestlog"
        else:
            msg = f'127.0.0.1 "{method} {path} HTTP/1.1" status: {status} len: 372 time: {dur_s:.7f}'
            logger = "nova.osapi_compute.wsgi.server" if service == "nova-api" else "cinder.api.openstack.wsgi"
        self.log("ctl", service, t, "INFO", logger, req, msg, glob=glob)

    def servers(self) -> str:
        return f"/v2/{PROJECT}/servers" if self.release == "havana" else "/v2.1/servers"

    def write(self, root: Path) -> Path:
        for (host, rel), recs in self.files.items():
            p = root / host / "var" / "log" / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text("".join(line for _, line in sorted(recs, key=lambda r: r[0])))
        return root


CPU = "nova.compute.manager"
LV = "nova.virt.libvirt.driver"


def boot_success(c: Cloud, n: int, host: str = "cpu1", t: float = 1.0, claim: bool = True) -> float:
    """A build on ``host`` as the release logs it; returns the completion time (ACTIVE)."""
    r, u = rid(n), uid(n)
    c.log(host, "nova-compute", t, "AUDIT", CPU, r, "Starting instance...", u)
    if claim:
        node = " on node " + host if c.release == "2025.1" else ""
        c.log(host, "nova-compute", t + 0.1, "AUDIT", "nova.compute.claims", r, f"Claim successful{node}", u)
    c.log(host, "nova-compute", t + 0.5, "INFO", LV, r, "Creating image", u)
    if c.release == "havana":
        # libvirt _wait_for_boot runs in a looping call without the request context
        c.log(host, "nova-compute", t + 5.0, "INFO", LV, None, "Instance spawned successfully.", u)
        return t + 5.0
    c.log(host, "nova-compute", t + 5.0, "INFO", LV, None, "Instance spawned successfully.", u)
    c.log(host, "nova-compute", t + 5.1, "INFO", CPU, r, "Took 4.60 seconds to spawn the instance on the hypervisor.", u)
    c.log(host, "nova-compute", t + 5.3, "INFO", CPU, r, "Took 5.30 seconds to build instance.", u)
    return t + 5.3


def delete_success(c: Cloud, n: int, host: str = "cpu1", t: float = 1.0, lock_wait_s: float = 12.0) -> float:
    """A terminate on ``host``; returns the time of the last delete-work record."""
    r, u = rid(n), uid(n)
    c.log(host, "nova-compute", t, "AUDIT", CPU, r, "Terminating instance", u)
    c.log(host, "nova-compute", t + 0.3, "INFO", LV, r, "Instance destroyed successfully.", u)
    if c.release == "havana":
        c.log(host, "nova-compute", t + 0.4, "INFO", LV, r, f"Deleting instance files /var/lib/nova/instances/{u}", u)
        c.log(host, "nova-compute", t + 0.6, "INFO", LV, r, f"Deletion of /var/lib/nova/instances/{u} complete", u)
        return t + 0.6
    c.log(host, "nova-compute", t + 0.3, "INFO", CPU, r, "Took 0.30 seconds to destroy the instance on the hypervisor.", u)
    c.log(host, "nova-compute", t + 1.0, "INFO", CPU, r, "Took 0.70 seconds to deallocate network for instance.", u)
    if c.release == "mitaka":
        return t + 1.0
    # resource tracker under the compute_resources lock, then placement (nova 31.0.0
    # _complete_deletion; oslo_concurrency lock lines at DEBUG)
    c.log(host, "nova-compute", t + 1.0 + lock_wait_s, "DEBUG", "oslo_concurrency.lockutils", r,
          f'Lock "compute_resources" acquired by "nova.compute.resource_tracker.ResourceTracker.update_usage" :: waited {lock_wait_s:.3f}s')
    c.log(host, "nova-compute", t + 1.2 + lock_wait_s, "DEBUG", "oslo_concurrency.lockutils", r,
          'Lock "compute_resources" "released" by "nova.compute.resource_tracker.ResourceTracker.update_usage" :: held 0.200s')
    c.log(host, "nova-compute", t + 1.3 + lock_wait_s, "INFO", "nova.scheduler.client.report", r, f"Deleted allocations for instance {u}")
    c.log(host, "nova-compute", t + 1.5 + lock_wait_s, "DEBUG", "oslo_concurrency.lockutils", r,
          f'Lock "{u}" "released" by "nova.compute.manager.ComputeManager.terminate_instance.<locals>.do_terminate_instance" :: held {1.5 + lock_wait_s:.3f}s')
    return t + 1.5 + lock_wait_s
