"""``stacklens lab``: a real OpenStack compute control plane on this machine.

Real nova-api, nova-conductor, nova-scheduler and K nova-compute services (nova's fake virt
driver ``fake.FakeDriverWithoutFakeNodes``, one ``host = fake-N`` each), real placement, real
glance (file store), RabbitMQ and MariaDB from Debian packages, authentication off (``noauth2``),
everything bound to 127.0.0.1, every service writing oslo.log files with DEBUG lines and request
ids under ``<lab>/logs``, ready for ``stacklens analyze``. Neutron is replaced by a loopback
*stand-in* (:mod:`stacklens_lab.neutron_standin`) that answers empty lists; it is not neutron.

The OpenStack services run from a separate *lab python* (see :mod:`stacklens_lab.deps`) so that
stacklens's own environment stays light. The facts behind every non-obvious setting are in
``shared/docs/lab-notes.md``.

Modules: :mod:`~stacklens_lab.deps` (what is missing), :mod:`~stacklens_lab.config` (files),
:mod:`~stacklens_lab.services` (processes), :mod:`~stacklens_lab.client` (the few API calls
``up`` makes), :mod:`~stacklens_lab.lab` (up/down/status), :mod:`~stacklens_lab.runtime` (runs
inside the lab python), :mod:`~stacklens_lab.neutron_standin`.
"""

from stacklens_lab.config import LAB_CLOUD, LabCloud, LabSpec, Ports, default_lab_dir, lab_cloud
from stacklens_lab.lab import capture_targets, down, read_state, run_facts, status, up

__all__ = [
    "LAB_CLOUD",
    "LabCloud",
    "LabSpec",
    "Ports",
    "capture_targets",
    "default_lab_dir",
    "down",
    "lab_cloud",
    "read_state",
    "run_facts",
    "status",
    "up",
]
