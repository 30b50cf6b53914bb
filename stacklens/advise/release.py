"""OpenStack releases in order, so that a rule can say which default applies where.

A release is its ordinal: the nova major version of that release (Liberty = 12 ... 2025.1
Epoxy = 31), from nova's tags. :func:`parse_release` reads a name (``epoxy``), a year number
(``2025.1``) or a nova version (``31.0.1``); :func:`release_from_versions` reads the
``service_versions`` a run records (nova, else neutron or keystone, whose majors are nova's
minus 5 and minus 4 since Liberty).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["LATEST", "RELEASES", "parse_release", "release_from_versions", "release_name"]

#: name -> ordinal (nova major version); year numbers from 2023.1 on.
RELEASES: dict[str, int] = {
    "havana": 8, "icehouse": 9, "juno": 10, "kilo": 11, "liberty": 12, "mitaka": 13,
    "newton": 14, "ocata": 15, "pike": 16, "queens": 17, "rocky": 18, "stein": 19, "train": 20,
    "ussuri": 21, "victoria": 22, "wallaby": 23, "xena": 24, "yoga": 25, "zed": 26,
    "2023.1": 27, "2023.2": 28, "2024.1": 29, "2024.2": 30, "2025.1": 31, "2025.2": 32,
    "2026.1": 33,
}
_ALIASES = {"antelope": 27, "bobcat": 28, "caracal": 29, "dalmatian": 30, "epoxy": 31,
            "flamingo": 32, "gazpacho": 33}

#: The release assumed when none is known (the lab's: 2025.1).
LATEST = 31

_OFFSETS = (("nova", 0), ("neutron", 5), ("keystone", 4))


def release_name(ordinal: int) -> str:
    """The name of release ``ordinal`` (``2025.1``, ``ocata``), or ``nova <n>`` if unknown."""
    for name, n in RELEASES.items():
        if n == ordinal:
            return name
    return f"nova {ordinal}"


def parse_release(text: str) -> int:
    """The ordinal of a release name, year number or nova version. Raises ``ValueError``."""
    t = text.strip().lower()
    if t in RELEASES:
        return RELEASES[t]
    if t in _ALIASES:
        return _ALIASES[t]
    m = re.match(r"^(\d+)\.\d+(\.\d+)*$", t)
    if m and 8 <= int(m.group(1)) < 100:
        return int(m.group(1))
    known = ", ".join(RELEASES)
    raise ValueError(f"unknown release {text!r}: give a name ({known}) or a nova version")


def release_from_versions(versions: Mapping[str, str]) -> int | None:
    """The release of a run from its ``service_versions`` (``{"nova": "31.0.1", ...}``), None
    when no nova, neutron or keystone version is there."""
    for name, offset in _OFFSETS:
        v = versions.get(name)
        m = re.match(r"^\s*(\d+)\.", v or "")
        if m and int(m.group(1)) >= 8 - offset:
            return int(m.group(1)) + offset
    return None
