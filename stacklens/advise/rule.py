"""The shape of a config rule: the settings it reads (with their defaults per release), what it
concludes (:class:`Verdict`), and the evaluation context (:class:`Ctx`).

A rule is declared once in :mod:`stacklens.advise.rules`; :mod:`stacklens.advise.check` applies
every rule to a :class:`~stacklens.advise.ini.ConfigSet` and links verdicts to the symptoms a
run shows.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from stacklens.advise.ini import ConfigFile, ConfigSet

__all__ = ["ANY_SECTION", "Ctx", "Rule", "SEVERITIES", "Setting", "Verdict", "as_bool",
           "as_number", "hosts_of", "ordinal_text"]

#: Finding severities, most severe first: ``error`` (breaks at scale, or a symptom in the run
#: linked to a setting that is not tuned), ``warning`` (differs from the guidance), ``info``.
SEVERITIES = ("error", "warning", "info")

#: A :class:`Setting` section that matches any section of the file (MySQL option files:
#: ``[mysqld]``, ``[galera]``, ``[mariadb]``, ``[server]`` ...).
ANY_SECTION = "*"


@dataclass(frozen=True)
class Setting:
    """One option a rule reads: ``project`` (files of :data:`~stacklens.advise.ini.PROJECTS`),
    ``section``, ``option``; ``defaults``: ``((since release ordinal, default as text), ...)`` in
    release order (text in parentheses when the default is computed, e.g. ``(number of
    CPUs)``); ``aliases``: deprecated ``(section, option)`` names the program still reads."""

    project: str
    section: str
    option: str
    defaults: tuple[tuple[int, str], ...]
    aliases: tuple[tuple[str, str], ...] = ()

    def default(self, release: int) -> str:
        """The default text in ``release`` (the earliest entry's before its release)."""
        out = self.defaults[0][1]
        for since, text in self.defaults:
            if release >= since:
                out = text
        return out

    def label(self) -> str:
        """``[section] option`` as operators write it."""
        return f"[{self.section}] {self.option}"


@dataclass(frozen=True)
class Verdict:
    """What a rule concludes about one setting: ``severity`` (:data:`SEVERITIES`), ``note``
    (plain words for this case), and, when the finding is about something other than the
    setting's own value (a haproxy backend), ``value`` / ``file`` / ``section`` / ``option``
    overrides."""

    severity: str
    setting: Setting
    note: str
    value: str | None = None
    file: str | None = None
    section: str | None = None
    option: str | None = None


def as_number(v: str | None) -> float | None:
    """A config value as a number (``"64"`` -> 64.0), None when it is not one."""
    if v is None:
        return None
    try:
        return float(v.strip())
    except ValueError:
        return None


def as_bool(v: str | None) -> bool | None:
    """oslo.config / MySQL booleans (true/false, on/off, yes/no, 1/0), None otherwise."""
    if v is None:
        return None
    t = v.strip().lower()
    if t in ("true", "on", "yes", "1"):
        return True
    if t in ("false", "off", "no", "0"):
        return False
    return None


class Ctx:
    """What a rule's ``evaluate`` sees: the config files and the release (an ordinal of
    :mod:`stacklens.advise.release`)."""

    def __init__(self, cfg: ConfigSet, release: int):
        self.cfg = cfg
        self.release = release

    def has(self, project: str) -> bool:
        """True when a file of ``project`` was read."""
        return project in self.cfg.projects()

    def lookup(self, s: Setting) -> tuple[str | None, ConfigFile | None]:
        """The effective raw value of ``s`` (its name, then its aliases; the last file that
        sets it wins) and the file that sets it; ``(None, None)`` when only the default
        applies."""
        best: tuple[str | None, ConfigFile | None] = (None, None)
        best_pos = -1
        files = self.cfg.of(s.project)
        for section, option in ((s.section, s.option), *s.aliases):
            for pos, f in enumerate(files):
                secs = f.sections.values() if section == ANY_SECTION else [
                    f.sections.get(section, {})]
                for opts in secs:
                    v = opts.get(option)
                    if v is not None and pos >= best_pos:
                        best, best_pos = (v, f), pos
        return best

    def raw(self, s: Setting) -> str | None:
        """The effective raw value of ``s``, None when unset."""
        return self.lookup(s)[0]

    def number(self, s: Setting) -> float | None:
        """The effective value of ``s`` as a number: the set value, else a numeric default;
        None when neither is a number (e.g. a default of ``(number of CPUs)``)."""
        v = self.raw(s)
        return as_number(v if v is not None else self.default(s))

    def default(self, s: Setting) -> str:
        """``s``'s default text in this context's release."""
        return s.default(self.release)


def ordinal_text(n: float) -> str:
    """A number as config text: ``64.0`` -> ``64``."""
    return str(int(n)) if float(n).is_integer() else str(n)


def hosts_of(address: str) -> list[str]:
    """Hosts of a ``gcomm://a,b,c`` Galera address (empty for a bootstrap ``gcomm://``)."""
    rest = re.sub(r"^\w+://", "", address.strip().strip("\"'"))
    return [h for h in (x.strip() for x in rest.split("?")[0].split(",")) if h]


@dataclass(frozen=True)
class Rule:
    """One piece of config advice.

    ``id``: stable name (``db-pool``); ``settings``: what it reads; ``advice``: plain words,
    what to set and why; ``evidence``: where the advice comes from (guides, release notes,
    option help); ``source``: the files that define the options and their defaults, read at the
    commits named; ``symptoms``: symptom kinds of a run (:mod:`stacklens.advise.symptoms`) that
    link to this rule; ``evaluate``: ``(Ctx) -> [Verdict]``, no verdict when all is well."""

    id: str
    settings: tuple[Setting, ...]
    advice: str
    evidence: str
    source: str
    symptoms: tuple[str, ...]
    evaluate: Callable[[Ctx], list[Verdict]]

    def projects(self) -> set[str]:
        """Projects whose files this rule reads."""
        return {s.project for s in self.settings}

