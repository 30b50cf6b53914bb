"""Reading a cloud's configuration files: which service each file configures, and its options.

Formats (each read the way its own program reads it, in a small subset):

- **oslo.config INI** (``nova.conf``, ``neutron.conf``, ``ml2_conf.ini``, ``keystone.conf`` ...;
  oslo_config/iniparser.py): ``[section]``, ``key = value`` or ``key: value``, ``#`` and ``;``
  comment lines, continuation lines (leading whitespace) appended to the value with a newline.
  A key given twice keeps the last value (MultiStrOpt lists are not needed by the rules).
  Inline ``#`` is part of the value, as in oslo.config.
- **MySQL option files** (``my.cnf``, ``galera.cnf``, ``*.cnf``): INI with options that may have
  no value (``skip-name-resolve`` -> ``ON``), ``-`` and ``_`` equivalent in names (kept as
  ``_``), inline `` #`` comments, ``!include`` lines ignored.
- **rabbitmq.conf** (sysctl-like ``key = value``): one section named ``rabbitmq``.
- **rabbitmq-env.conf** and ``/etc/default/rabbitmq-server`` (shell): ``[export] KEY=value`` in a
  section ``env``; a ``ulimit -n N`` line becomes option ``ulimit_n``.
- **systemd units and drop-ins** for rabbitmq (``*.service``, ``*.conf`` under a folder whose name
  has ``rabbitmq``): INI, ``[Service] LimitNOFILE``.
- **haproxy.cfg**: ``listen``/``backend``/``frontend`` blocks as sections named ``listen NAME``
  ...; a keyword given several times (``server``) keeps every value, joined by newlines.

Files are matched to a project (nova, neutron, placement, glance, keystone, rabbitmq, mysql,
haproxy) by file name, else by the name of a parent folder; paste files (``*paste*.ini``) and
other formats are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "ConfigFile",
    "ConfigSet",
    "PROJECTS",
    "classify",
    "load_configs",
    "parse_text",
]

#: Projects a file can belong to.
PROJECTS = ("nova", "neutron", "placement", "glance", "keystone", "rabbitmq", "mysql", "haproxy")

#: At most this many files, of at most this many bytes each, are read from the folders given.
MAX_FILES, MAX_BYTES = 2000, 4 << 20

_NEUTRON_AGENT = re.compile(r"^(?P<agent>[a-z0-9]+)_agent\.ini$")


@dataclass(frozen=True)
class ConfigFile:
    """One parsed file: ``name`` (path relative to the folder given, as displayed), ``project``
    (one of :data:`PROJECTS`), ``service`` (the binary that reads it when the name says so:
    ``nova-api``, ``neutron-openvswitch-agent``; else the project), ``kind`` (ini, mysql,
    rabbitmq, env, systemd, haproxy) and ``sections`` ``{section: {option: value}}``."""

    name: str
    project: str
    service: str
    kind: str
    sections: dict[str, dict[str, str]] = field(default_factory=dict)

    def get(self, section: str, option: str) -> str | None:
        """The raw value of ``[section] option`` in this file, None when not set."""
        return self.sections.get(section, {}).get(option)


def classify(rel: str) -> tuple[str, str, str] | None:
    """``(project, service, kind)`` for a file at relative path ``rel``, None when it is not a
    config file the rules read (paste files, policies, unknown names)."""
    p = Path(rel)
    name = p.name.lower()
    parents = [x.lower() for x in p.parts[:-1]]
    if "paste" in name or not name or name.startswith("."):
        return None
    if name == "haproxy.cfg":
        return "haproxy", "haproxy", "haproxy"
    if name == "rabbitmq.conf":
        return "rabbitmq", "rabbitmq-server", "rabbitmq"
    if name in ("rabbitmq-env.conf", "rabbitmq-server") and not name.endswith(".service"):
        return "rabbitmq", "rabbitmq-server", "env"
    if name.endswith(".service") and "rabbitmq" in name or (
            name.endswith(".conf") and any("rabbitmq" in x and x.endswith(".d") for x in parents)):
        return "rabbitmq", "rabbitmq-server", "systemd"
    if name.endswith(".cnf"):
        return "mysql", "mysqld", "mysql"
    if not name.endswith((".conf", ".ini")):
        return None
    stem = name.rsplit(".", 1)[0]
    m = _NEUTRON_AGENT.match(name)
    if m:
        return "neutron", f"neutron-{m['agent']}-agent", "ini"
    if name in ("ml2_conf.ini", "neutron.conf") or stem.startswith("neutron"):
        return "neutron", "neutron-server" if name != "neutron.conf" else "neutron", "ini"
    for project in ("nova", "placement", "glance", "keystone"):
        if stem == project:
            return project, project, "ini"
        if stem.startswith((f"{project}-", f"{project}_")):
            service = stem.replace("_", "-")
            return project, service if service != f"{project}-db" else project, "ini"
    for project in ("nova", "neutron", "placement", "glance", "keystone"):
        if project in parents:
            return project, project, "ini"
    return None


def _strip_quotes(v: str) -> str:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def _parse_ini(text: str, mysql: bool) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    cur: dict[str, str] | None = None
    last: str | None = None
    for raw in text.splitlines():
        line = raw.rstrip()
        s = line.strip()
        if not s or s[0] in "#;" or s.startswith("!"):
            continue
        if raw[:1] in " \t" and cur is not None and last is not None and not mysql:
            cur[last] = (cur[last] + "\n" + s).strip()
            continue
        if s.startswith("[") and s.endswith("]"):
            name = s[1:-1].strip()
            name = "DEFAULT" if name.lower() == "default" else name
            cur = sections.setdefault(name, {})
            last = None
            continue
        if cur is None:
            cur = sections.setdefault("DEFAULT", {})
        if mysql:
            s = re.sub(r"\s+#.*$", "", s)
        m = re.match(r"^([^=:]+?)\s*[=:]\s*(.*)$", s) if not mysql else re.match(
            r"^([^=]+?)\s*=\s*(.*)$", s)
        if m:
            key, value = m.group(1).strip(), _strip_quotes(m.group(2))
        elif mysql:
            key, value = s, "ON"
        else:
            continue
        if mysql:
            key = key.replace("-", "_").lower()
        cur[key] = value
        last = key
    return sections


def _parse_env(text: str) -> dict[str, dict[str, str]]:
    env: dict[str, str] = {}
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        m = re.match(r"^ulimit\s+(?:-\w*\s+)*-n\s+(\S+)", s) or re.match(
            r"^ulimit\s+-\w*n\s+(\S+)", s)
        if m:
            env["ulimit_n"] = m.group(1)
            continue
        m = re.match(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", s)
        if m:
            env[m.group(1)] = _strip_quotes(m.group(2))
    return {"env": env}


def _parse_rabbitmq(text: str) -> dict[str, dict[str, str]]:
    opts: dict[str, str] = {}
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s.startswith("#"):
            continue
        m = re.match(r"^([A-Za-z0-9_.\-]+)\s*=\s*(.*)$", s)
        if m:
            opts[m.group(1)] = m.group(2).strip()
    return {"rabbitmq": opts}


def _parse_haproxy(text: str) -> dict[str, dict[str, str]]:
    sections: dict[str, dict[str, str]] = {}
    cur: dict[str, str] | None = None
    for raw in text.splitlines():
        s = raw.split("#", 1)[0].strip()
        if not s:
            continue
        word, _, rest = s.partition(" ")
        if raw[:1] not in " \t" and word in ("global", "defaults", "listen", "backend",
                                             "frontend", "resolvers", "userlist", "peers"):
            cur = sections.setdefault(f"{word} {rest.strip()}".strip(), {})
            continue
        if cur is None:
            continue
        rest = rest.strip()
        cur[word] = f"{cur[word]}\n{rest}" if word in cur else rest
    return sections


def parse_text(text: str, kind: str) -> dict[str, dict[str, str]]:
    """``{section: {option: value}}`` of a file's text in format ``kind`` (ini, mysql, rabbitmq,
    env, systemd, haproxy; rules in the module docstring). Never raises for bad lines: lines that
    are not options are skipped."""
    if kind == "env":
        return _parse_env(text)
    if kind == "rabbitmq":
        return _parse_rabbitmq(text)
    if kind == "haproxy":
        return _parse_haproxy(text)
    return _parse_ini(text, mysql=kind == "mysql")


def _order(f: ConfigFile) -> tuple[str, int, str]:
    # oslo.config: files given later override earlier ones; the project's main file first
    main = f.name.rsplit("/", 1)[-1].lower() in (f"{f.project}.conf", "my.cnf")
    return f.project, 0 if main else 1, f.name


class ConfigSet:
    """The config files of one cloud, in override order (per project: the main file such as
    ``nova.conf`` first, then the others by name; a later file overrides an earlier one, as
    when a service is started with several ``--config-file``). ``skipped``: ``{name: reason}``
    for files found but not read."""

    def __init__(self, files: Iterable[ConfigFile], skipped: dict[str, str] | None = None):
        self.files: list[ConfigFile] = sorted(files, key=_order)
        self.skipped: dict[str, str] = dict(skipped or {})

    def projects(self) -> set[str]:
        """Projects that at least one file configures."""
        return {f.project for f in self.files}

    def of(self, project: str) -> list[ConfigFile]:
        """The files of ``project``, in override order."""
        return [f for f in self.files if f.project == project]

    def values(self, project: str, section: str, option: str) -> list[tuple[ConfigFile, str]]:
        """Every ``(file, raw value)`` that sets ``[section] option`` in ``project``'s files."""
        out = []
        for f in self.of(project):
            v = f.get(section, option)
            if v is not None:
                out.append((f, v))
        return out


def _read(path: Path, rel: str) -> ConfigFile | str:
    c = classify(rel)
    if c is None:
        return "not a config file the rules read"
    project, service, kind = c
    try:
        if path.stat().st_size > MAX_BYTES:
            return f"larger than {MAX_BYTES} bytes"
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        return f"{type(e).__name__}: {e}"
    return ConfigFile(rel, project, service, kind, parse_text(text, kind))


def load_configs(dirs: Sequence[Path]) -> ConfigSet:
    """Read every config file under the folders (or single files) ``dirs``, recursively, at most
    :data:`MAX_FILES` files. Names are relative to the folder given (a single file: its name);
    with several folders, the folder's own name is put in front. Unreadable files are listed
    in ``ConfigSet.skipped``, never raised."""
    files: list[ConfigFile] = []
    skipped: dict[str, str] = {}
    seen = 0
    for d in dirs:
        paths = sorted(p for p in d.rglob("*") if p.is_file()) if d.is_dir() else [d]
        for p in paths:
            if seen >= MAX_FILES:
                skipped[str(p)] = f"more than {MAX_FILES} files"
                continue
            seen += 1
            rel = p.relative_to(d).as_posix() if d.is_dir() else p.name
            if len(dirs) > 1 and d.is_dir():
                rel = f"{d.name}/{rel}"
            got = _read(p, rel)
            if isinstance(got, str):
                skipped[rel] = got
            else:
                files.append(got)
    return ConfigSet(files, skipped)
