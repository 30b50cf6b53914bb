"""What a run records about the cloud it ran against, so that ``stacklens compare`` can say what
differs between two runs: service versions, the config files the cloud runs with, its hosts.

The facts come from whoever knows the cloud (the CLI asks the local lab, or the user names the
files with ``stacklens run --config-file``) as a :class:`CloudFacts`; :func:`capture` copies the
config files into ``<run>/config/`` with their secrets redacted and returns the manifest's
``run`` keys ``service_versions`` (``{name: version}``), ``config_files`` (``{relative path:
sha256 of the redacted copy}``) and ``hosts`` (sorted names). :func:`api_versions` adds what the
compute API says of itself (``GET <endpoint>``: nova's version document, microversions).

Redaction here is deliberately small and separate from :mod:`stacklens.ingest.redact` (the
stages do not import each other): in INI files (oslo.config's format) the value of every option
whose name contains ``password``, ``secret``, ``token``, ``key`` or ``pass`` becomes ``***``;
in a URL-valued option (``transport_url``, ``connection``, any ``scheme://user:pw@host``) the
password part becomes ``***`` (user, host, port and database stay: they are what differs).
Files that are not INI (paste ``.ini`` are INI) get the URL rule on every line.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stacklens.drive.client import ComputeClient

__all__ = [
    "CloudFacts",
    "REDACTED",
    "api_versions",
    "capture",
    "redact_config_text",
]

REDACTED = "***"

#: Option names whose whole value is a secret (substring, case-insensitive).
_SECRET_KEY = re.compile(r"password|secret|token|passwd|pass$|_key$|^key$", re.IGNORECASE)
#: ``scheme://user:password@`` in any value: the password is replaced.
_URL_CRED = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^:/@\s]*:)(?P<pw>[^@\s]*)(?=@)")
_OPTION = re.compile(r"^(?P<key>\s*[A-Za-z0-9_.\-]+\s*[=:])(?P<value>.*)$")

#: At most this many files of at most this many bytes are captured.
MAX_FILES, MAX_BYTES = 200, 4 << 20


@dataclass(frozen=True)
class CloudFacts:
    """What is known about the cloud before a run: ``config_files`` (absolute paths, copied to
    ``<run>/config/<path relative to config_root>``, or under their file name when
    ``config_root`` is None), ``service_versions`` ``{name: version}``, ``hosts``, and ``query_api``:
    also ask the compute API for its version document (one GET, counted as call kind
    ``metadata``)."""

    config_files: tuple[Path, ...] = ()
    config_root: Path | None = None
    service_versions: dict[str, str] = field(default_factory=dict)
    hosts: tuple[str, ...] = ()
    query_api: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def redact_config_text(text: str) -> str:
    """``text`` of a config file with its secrets replaced by ``***`` (rules in the module
    docstring). Comment lines are kept as they are except for URL credentials."""
    out = []
    for line in text.splitlines():
        m = _OPTION.match(line)
        stripped = line.lstrip()
        if m and not stripped.startswith(("#", ";", "[")):
            key = m.group("key").rstrip("=: \t").strip()
            if _SECRET_KEY.search(key) and m.group("value").strip():
                line = f"{m.group('key')} {REDACTED}"
        out.append(_URL_CRED.sub(lambda u: u.group("head") + REDACTED, line))
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _dest_name(p: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(p.relative_to(root))
        except ValueError:
            pass
    return p.name


def capture(facts: CloudFacts, out: Path) -> dict[str, Any]:
    """Copy ``facts.config_files`` (redacted) into ``out/config/`` and return the manifest
    ``run`` keys ``config_files``, ``service_versions``, ``hosts`` (and ``facts.extra``).

    Unreadable, missing or too large files are listed under ``config_skipped`` with the reason,
    never raised: a run does not fail for its metadata.
    """
    files: dict[str, str] = {}
    skipped: dict[str, str] = {}
    for p in facts.config_files[:MAX_FILES]:
        name = _dest_name(p, facts.config_root)
        try:
            if p.stat().st_size > MAX_BYTES:
                skipped[name] = f"larger than {MAX_BYTES} bytes"
                continue
            text = redact_config_text(p.read_text(encoding="utf-8", errors="replace"))
        except OSError as e:
            skipped[name] = f"{type(e).__name__}: {e}"
            continue
        dest = out / "config" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(text, encoding="utf-8")
        files[name] = hashlib.sha256(text.encode()).hexdigest()
    info: dict[str, Any] = {
        **facts.extra,
        "service_versions": dict(sorted(facts.service_versions.items())),
        "config_files": dict(sorted(files.items())),
        "hosts": sorted(set(facts.hosts)),
    }
    if skipped:
        info["config_skipped"] = skipped
    return info


async def api_versions(client: ComputeClient) -> dict[str, str]:
    """``{"compute_api": "<min>-<max microversion>"}`` from ``GET <compute endpoint>`` (nova's
    version document ``{"version": {"id", "version", "min_version"}}``); ``{}`` when the API
    does not answer it. One call of kind ``metadata``."""
    res = await client.call("metadata", "GET", "")
    body = res.body if res.ok and isinstance(res.body, dict) else {}
    v = body.get("version") if isinstance(body.get("version"), dict) else None
    if not v:
        return {}
    lo, hi = v.get("min_version") or "", v.get("version") or ""
    return {"compute_api": f"{v.get('id', '')} {lo}-{hi}".strip()}
