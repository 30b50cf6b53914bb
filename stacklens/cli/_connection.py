"""One place that chooses the cloud connection for ``run`` and ``cleanup``.

Precedence: ``--endpoint``/``--cloud`` flags, then what the scenario (``run``) or the run's
manifest (``cleanup``) says. The cloud name ``stacklens-lab`` means the local lab: the lab
package (:func:`stacklens_lab.lab_cloud`) supplies its ``clouds.yaml``, passed explicitly to
:func:`~stacklens.drive.client.resolve_connection` (unless ``OS_CLIENT_CONFIG_FILE`` names
another file: then the usual search path), and its log folder, read after a run. The process
environment is read, never edited.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from stacklens.drive.client import Connection, resolve_connection

__all__ = ["ChosenConnection", "choose_connection"]


@dataclass(frozen=True)
class ChosenConnection:
    """The connection to use, and the local lab's log folders when the cloud is the lab's."""

    connection: Connection
    lab_logs: list[str]


def _lab_files(cloud: str | None) -> tuple[Path | None, list[str]]:
    """For the lab cloud: its clouds.yaml (None when ``OS_CLIENT_CONFIG_FILE`` is set or the lab
    wrote none) and its log folders; for any other cloud ``(None, [])``."""
    from stacklens_lab import LAB_CLOUD, lab_cloud

    if cloud != LAB_CLOUD:
        return None, []
    lab = lab_cloud()
    config = None if os.environ.get("OS_CLIENT_CONFIG_FILE") else lab.clouds_yaml
    return config, [str(lab.logs)] if lab.logs else []


def choose_connection(
    cloud: str | None, endpoint: str | None, token: str | None,
    fallback_cloud: str | None, fallback_endpoint: str | None,
) -> ChosenConnection:
    """The connection to use and, for the local lab, its log folders (else ``[]``).

    Flags win over the fallbacks (scenario or manifest). Raises what
    :func:`~stacklens.drive.client.resolve_connection` raises (a ``UserError`` for an unknown
    cloud or a missing clouds.yaml)."""
    if endpoint or cloud:
        name, ep = cloud, endpoint
    else:
        name, ep = fallback_cloud, fallback_endpoint
    config_file, lab_logs = _lab_files(cloud or fallback_cloud)
    return ChosenConnection(resolve_connection(name, ep, token, config_file=config_file),
                            lab_logs)
