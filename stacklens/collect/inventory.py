"""Host inventory files: which hosts to collect from, how to reach them, which logs they keep.

YAML validated with pydantic v2. Errors name the file and the line: the YAML is composed with
PyYAML (whose nodes keep their ``start_mark``), every key path is mapped to its line, and each
pydantic error location is looked up in that map (the deepest key present). Every key but
``hosts[].name`` is optional::

    version: 1
    defaults:                          # apply to every host unless the host says otherwise
      user: stack                      # ssh user (default: the local user)
      port: 22
      key_file: ~/.ssh/id_ed25519      # relative paths: relative to the inventory file
      known_hosts: ~/.ssh/known_hosts  # host keys are ALWAYS verified against this file
      agent: true                      # also offer the keys of $SSH_AUTH_SOCK
    roles:
      controller:
        logs:                          # absolute globs on the host; rotated/.gz siblings too
          - /var/log/nova/nova-api.log*
          - {path: /var/log/neutron/server.log*, service: neutron-server}
        journald:                      # systemd units (journalctl -u)
          - devstack@n-api.service
          - {unit: devstack@q-svc.service, service: neutron-server}
    hosts:
      - {name: ctl1, address: 10.0.0.11, roles: [controller]}
      - {name: cmp1, address: 10.0.0.21, roles: [compute], port: 2222}
      - {name: here, transport: local, logs: [/var/log/nova/*.log*]}

``name`` is the folder the host's files land in (``<out>/<name>/var/log/...``) and the host
stacklens reports, so it follows hostname rules. ``transport: local`` reads this machine's files
and journal (no address). Raises :class:`InventoryError` (a :class:`~stacklens.errors.UserError`,
exit code 1) naming ``file:line``.
"""

from __future__ import annotations

import getpass
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from stacklens.errors import UserError
from stacklens.yamlfile import LineMap, load_model

__all__ = [
    "HostPlan",
    "Inventory",
    "InventoryError",
    "LogGlob",
    "NameMaps",
    "Unit",
    "analysis_maps",
    "load_inventory",
    "parse_inventory",
]

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,62}$")
# characters a log glob may hold: it is expanded by the remote POSIX shell, so nothing that the
# shell would treat as syntax (no spaces, quotes, $, ;, |, &, backquotes, redirections)
_GLOB = re.compile(r"^/[A-Za-z0-9_.\-/*?\[\]@+,:=%~^!]*$")
_UNIT = re.compile(r"^[A-Za-z0-9_.\-@:\\]+$")


class InventoryError(UserError):
    """An inventory file cannot be used; the message names the file and line. Exit code 1."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LogGlob(_Model):
    """An absolute glob of log files on a host; ``service`` overrides the name-derived service."""

    path: str
    service: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"path": v} if isinstance(v, str) else v

    @field_validator("path")
    @classmethod
    def _check(cls, v: str) -> str:
        if not _GLOB.match(v):
            raise ValueError(
                f"{v!r} is not an absolute glob of plain characters (letters, digits, / . _ - * ?"
                " [ ]; no spaces or shell syntax)"
            )
        return v


class Unit(_Model):
    """A systemd unit whose journal is exported with ``journalctl -u``."""

    unit: str
    service: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        return {"unit": v} if isinstance(v, str) else v

    @field_validator("unit")
    @classmethod
    def _check(cls, v: str) -> str:
        if not _UNIT.match(v):
            raise ValueError(f"{v!r} is not a systemd unit name")
        return v


class Role(_Model):
    """Log globs and units shared by every host that has the role."""

    logs: list[LogGlob] = []
    journald: list[Unit] = []


class Defaults(_Model):
    """Connection settings every host inherits."""

    user: str | None = None
    port: int = Field(default=22, ge=1, le=65535)
    key_file: str | None = None
    known_hosts: str = "~/.ssh/known_hosts"
    agent: bool = True
    logs: list[LogGlob] = []
    journald: list[Unit] = []


class Host(_Model):
    """One host. Unset connection fields come from ``defaults``."""

    name: str
    transport: Literal["ssh", "local"] = "ssh"
    address: str | None = None
    port: int | None = Field(default=None, ge=1, le=65535)
    user: str | None = None
    key_file: str | None = None
    known_hosts: str | None = None
    agent: bool | None = None
    roles: list[str] = []
    logs: list[LogGlob] = []
    journald: list[Unit] = []

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not _NAME.match(v) or v in (".", ".."):
            raise ValueError(f"{v!r} is not a host name (letters, digits, . _ -; it names a folder)")
        return v

    @model_validator(mode="after")
    def _address(self) -> Host:
        if self.transport == "ssh" and not self.address:
            raise ValueError("an ssh host needs an address (or say transport: local)")
        return self


class Inventory(_Model):
    """A whole inventory file. ``base_dir`` (the file's folder, set by :func:`load_inventory`;
    not in the YAML) resolves relative ``key_file`` / ``known_hosts`` paths."""

    version: Literal[1] = 1
    defaults: Defaults = Defaults()
    roles: dict[str, Role] = {}
    hosts: list[Host] = Field(min_length=1)
    _base_dir: str = PrivateAttr(".")

    @property
    def base_dir(self) -> str:
        """The folder relative paths are resolved against."""
        return self._base_dir

    @model_validator(mode="after")
    def _refs(self) -> Inventory:
        seen: set[str] = set()
        for i, h in enumerate(self.hosts):
            if h.name in seen:
                raise ValueError(f"hosts[{i}]: host name {h.name!r} given twice")
            seen.add(h.name)
            for r in h.roles:
                if r not in self.roles:
                    known = ", ".join(sorted(self.roles)) or "none"
                    raise ValueError(f"hosts[{i}] ({h.name}): unknown role {r!r} (roles: {known})")
        return self

    def plans(self) -> list[HostPlan]:
        """Every host with defaults and roles applied, paths made absolute, in file order."""
        base = Path(self._base_dir)
        d = self.defaults

        def path(p: str | None) -> str | None:
            if p is None:
                return None
            q = Path(p).expanduser()
            return str(q if q.is_absolute() else (base / q).resolve())

        out = []
        for h in self.hosts:
            logs = [*d.logs, *(g for r in h.roles for g in self.roles[r].logs), *h.logs]
            units = [*d.journald, *(u for r in h.roles for u in self.roles[r].journald),
                     *h.journald]
            out.append(HostPlan(
                name=h.name,
                transport=h.transport,
                address=h.address,
                port=h.port or d.port,
                user=h.user or d.user or getpass.getuser(),
                key_file=path(h.key_file or d.key_file),
                known_hosts=path(h.known_hosts or d.known_hosts) or "",
                agent=d.agent if h.agent is None else h.agent,
                roles=tuple(h.roles),
                logs=tuple(dict.fromkeys(logs)),
                units=tuple(dict.fromkeys(units)),
            ))
        return out


@dataclass(frozen=True)
class HostPlan:
    """One host, resolved: everything the collector needs and nothing else. ``port`` is TCP,
    ``key_file``/``known_hosts`` absolute local paths (``key_file`` None: agent and default keys)."""

    name: str
    transport: str
    address: str | None
    port: int
    user: str
    key_file: str | None
    known_hosts: str
    agent: bool
    roles: tuple[str, ...]
    logs: tuple[LogGlob, ...]
    units: tuple[Unit, ...]


@dataclass(frozen=True)
class NameMaps:
    """``GLOB=NAME`` entries for ``stacklens ingest/analyze --host-map / --service-map``."""

    host_map: list[str]
    service_map: list[str]


def analysis_maps(inv: Inventory, collected: str | Path | None = None) -> NameMaps:
    """Host and service map entries that let ``analyze`` name what the inventory names.

    With ``collected`` (the folder ``stacklens collect --out`` wrote), entries match the collected
    layout ``<collected>/<host>/var/log/...``; ``local`` hosts also get entries for their original
    paths, so ``analyze`` can read them in place. Services are mapped only where the inventory
    gives one (``service:``); elsewhere ingest derives it from the file or program name.
    """
    host_map: list[str] = []
    service_map: list[str] = []
    root = str(Path(collected).resolve()) if collected is not None else "*"
    for h in inv.plans():
        prefix = f"{root}/{h.name}"
        host_map.append(f"{prefix}/*={h.name}")
        if h.transport == "local":
            host_map.extend(f"{g.path}={h.name}" for g in h.logs)
        for g in h.logs:
            if g.service:
                service_map.append(f"{prefix}{g.path}={g.service}")
                if h.transport == "local":
                    service_map.append(f"{g.path}={g.service}")
        for u in h.units:
            if u.service:
                service_map.append(f"{prefix}/var/log/journald/{u.unit}.log*={u.service}")
    return NameMaps(list(dict.fromkeys(host_map)), list(dict.fromkeys(service_map)))


# --- loading with line numbers ----------------------------------------------------------------


def _ref_line(msg: str, lines: LineMap) -> int | None:
    """Model-level errors name ``hosts[i]``: point at that host's line."""
    m = re.search(r"hosts\[(\d+)\]", msg)
    return lines.get(("hosts", int(m.group(1)))) if m else None


def parse_inventory(text: str, source: str = "<inventory>") -> Inventory:
    """Validate inventory YAML ``text``; raise :class:`InventoryError` naming ``source:line``."""
    return load_model(text, source, Inventory, InventoryError,
                      "an inventory is a YAML mapping (defaults, roles, hosts)",
                      line_hint=_ref_line)


def load_inventory(path: str | Path) -> Inventory:
    """Read and validate an inventory file (see the module docstring for the shape).

    Raises :class:`InventoryError` with ``file:line`` for bad YAML or values, or when the file
    cannot be read. Relative paths in it are resolved against the file's folder.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InventoryError(f"{p}: cannot read the inventory: {e.strerror or e}") from None
    inv = parse_inventory(text, str(p))
    inv._base_dir = str(p.resolve().parent)
    return inv
