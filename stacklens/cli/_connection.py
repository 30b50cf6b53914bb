"""One place that chooses the cloud connection for ``run`` and ``cleanup``.

Precedence: ``--endpoint``/``--cloud`` flags, then what the scenario (``run``) or the run's
manifest (``cleanup``) says. The cloud name ``stacklens-lab`` means the local lab: its
``clouds.yaml`` (written by ``stacklens lab up``) is used unless ``OS_CLIENT_CONFIG_FILE``
names another, and its log folder is read after a run.
"""

from __future__ import annotations

import os

from stacklens.drive.client import Connection, resolve_connection

__all__ = ["LAB_CLOUD", "choose_connection"]

#: The clouds.yaml entry ``stacklens lab up`` writes.
LAB_CLOUD = "stacklens-lab"


def _local_lab(cloud: str | None) -> list[str]:
    """For the lab cloud: point clouds.yaml at the running lab's and return its log folder."""
    if cloud != LAB_CLOUD:
        return []
    from stacklens_lab.config import default_lab_dir

    root = default_lab_dir()
    if (root / "clouds.yaml").exists():
        os.environ.setdefault("OS_CLIENT_CONFIG_FILE", str(root / "clouds.yaml"))
    return [str(root / "logs")] if (root / "logs").is_dir() else []


def choose_connection(
    cloud: str | None, endpoint: str | None, token: str | None,
    fallback_cloud: str | None, fallback_endpoint: str | None,
) -> tuple[Connection, list[str]]:
    """The connection to use and, for the local lab, its log folders (else ``[]``).

    Flags win over the fallbacks (scenario or manifest). Raises what
    :func:`~stacklens.drive.client.resolve_connection` raises (a ``UserError`` for an unknown
    cloud or a missing clouds.yaml)."""
    lab_logs = _local_lab(cloud or fallback_cloud)
    if endpoint or cloud:
        return resolve_connection(cloud, endpoint, token), lab_logs
    return resolve_connection(fallback_cloud, fallback_endpoint, token), lab_logs
