"""What the lab needs, checked before anything is written or started: never install by surprise.

Two things live outside stacklens's own environment:

- a *lab python*: an interpreter (normally a venv of its own, kept apart so that stacklens stays
  light) with OpenStack 2025.1 installed: nova 31.3.1, openstack-placement 13.0.1, glance 30.2.0,
  PyMySQL, gunicorn, openstacksdk, pinned by ``requirements/lab-constraints.txt``;
- Debian's ``mariadb-server`` and ``rabbitmq-server`` (run by the lab under its own folder, never
  as the system services).

:func:`check` gathers everything missing into one :class:`LabError` whose message gives the
exact commands to fix it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from stacklens.errors import LabError

__all__ = ["Binaries", "LabVersions", "check", "find_binaries", "lab_python", "probe_python"]

LAB_PYTHON_ENV = "STACKLENS_LAB_PYTHON"
REQUIRED_MODULES = {  # import name -> distribution name
    "nova": "nova",
    "placement": "openstack-placement",
    "glance": "glance",
    "pymysql": "PyMySQL",
    "gunicorn": "gunicorn",
    "openstack": "openstacksdk",
}
VERSIONED = ("nova", "openstack-placement", "glance", "oslo.messaging", "oslo.log", "eventlet",
             "openstacksdk", "gunicorn", "PyMySQL", "SQLAlchemy")
INSTALL_HINT = (
    "bash .ci/lab-setup.sh   (or: python3 -m venv LABVENV && LABVENV/bin/pip install "
    "-r requirements/lab.txt -c requirements/lab-constraints.txt), then pass --python "
    f"LABVENV/bin/python or set {LAB_PYTHON_ENV}"
)

_PROBE = """
import importlib.util, json, sys, sysconfig
from importlib import metadata
mods = %r
vers = {}
for d in %r:
    try:
        vers[d] = metadata.version(d)
    except metadata.PackageNotFoundError:
        pass
print(json.dumps({"missing": [m for m in mods if importlib.util.find_spec(m) is None],
                  "versions": vers, "prefix": sys.prefix,
                  "scripts": sysconfig.get_path("scripts"),
                  "python": "%%d.%%d.%%d" %% sys.version_info[:3]}))
"""


@dataclass(frozen=True)
class LabVersions:
    """What the lab python holds: versions by distribution name, import names missing."""

    python: str
    prefix: str
    scripts: str  # where nova-compute, nova-manage, gunicorn are
    versions: dict[str, str]
    missing: list[str]


@dataclass(frozen=True)
class Binaries:
    """Paths of the Debian programs the lab runs."""

    mariadbd: str
    mariadb_install_db: str
    mariadb: str
    rabbitmq_server: str
    rabbitmqctl: str
    epmd: str


_DEBIAN = {  # field -> (candidates, Debian package)
    "mariadbd": (["/usr/sbin/mariadbd", "mariadbd"], "mariadb-server"),
    "mariadb_install_db": (["/usr/bin/mariadb-install-db", "mariadb-install-db"],
                           "mariadb-server"),
    "mariadb": (["/usr/bin/mariadb", "mariadb"], "mariadb-client"),
    # the script under /usr/lib runs as the invoking user; /usr/sbin's wrapper would su
    "rabbitmq_server": (["/usr/lib/rabbitmq/bin/rabbitmq-server"], "rabbitmq-server"),
    "rabbitmqctl": (["/usr/lib/rabbitmq/bin/rabbitmqctl"], "rabbitmq-server"),
    "epmd": (["/usr/bin/epmd", "epmd"], "erlang-base"),
}


def lab_python(explicit: str | None) -> str:
    """The lab interpreter: ``--python``, else ``$STACKLENS_LAB_PYTHON``; LabError if neither."""
    py = explicit or os.environ.get(LAB_PYTHON_ENV)
    if not py:
        raise LabError(f"lab: no lab python given: pass --python PATH or set {LAB_PYTHON_ENV} "
                       f"to an interpreter with OpenStack 2025.1 installed. To make one: "
                       f"{INSTALL_HINT}")
    # absolute but not resolved: a venv's python is a symlink that must stay one
    return os.path.abspath(py) if os.sep in py else py


def probe_python(python: str) -> LabVersions:
    """Ask ``python`` which modules it lacks and which versions it has. LabError if it
    cannot run."""
    if not (Path(python).is_file() or shutil.which(python)):
        raise LabError(f"lab: lab python {python!r} does not exist. To make one: {INSTALL_HINT}")
    code = _PROBE % (list(REQUIRED_MODULES), list(VERSIONED))
    try:
        r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60)
        d = json.loads(r.stdout)
    except (OSError, subprocess.TimeoutExpired, ValueError) as e:
        raise LabError(f"lab: could not run lab python {python!r}: {e}") from e
    return LabVersions(d["python"], d["prefix"], d["scripts"], d["versions"], d["missing"])


def find_binaries() -> tuple[Binaries | None, list[str]]:
    """The Debian programs, or None and the Debian packages that would provide the missing."""
    found: dict[str, str] = {}
    missing: list[str] = []
    for f, (cands, pkg) in _DEBIAN.items():
        path = next((c for c in cands if (Path(c).is_file() if "/" in c else shutil.which(c))),
                    None)
        if path is None:
            missing.append(pkg)
        else:
            found[f] = path if "/" in path else (shutil.which(path) or path)
    if missing:
        return None, sorted(set(missing))
    return Binaries(**found), []


def check(python: str) -> tuple[LabVersions, Binaries]:
    """Everything the lab needs, or one LabError listing everything missing and how to get it."""
    problems = []
    vers: LabVersions | None = None
    try:
        vers = probe_python(python)
        if vers.missing:
            dists = " ".join(REQUIRED_MODULES[m] for m in vers.missing)
            problems.append(f"lab python {python} lacks: {dists}. To install: {INSTALL_HINT}")
    except LabError as e:
        problems.append(str(e).removeprefix("lab: "))
    bins, pkgs = find_binaries()
    if pkgs:
        problems.append(f"Debian packages missing: {' '.join(pkgs)}. Install them with: "
                        f"apt-get update && apt-get install -y --no-install-recommends "
                        f"{' '.join(pkgs)} (the lab runs them itself; the system services "
                        f"need not run), or run bash .ci/lab-setup.sh")
    if problems or vers is None or bins is None:
        raise LabError("lab: cannot start, missing:\n  - " + "\n  - ".join(problems))
    return vers, bins
