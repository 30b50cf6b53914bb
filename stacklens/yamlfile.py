"""YAML files validated with pydantic whose errors name the file and the line.

Used by scenario files (:mod:`stacklens.drive.scenario`) and host inventories
(:mod:`stacklens.collect.inventory`). The YAML is composed with PyYAML, whose nodes keep their
``start_mark``; every key path is mapped to its line, and each pydantic error location is looked
up in that map (the deepest key that exists; a missing key points at its parent).
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, TypeAlias, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from stacklens.errors import UserError

__all__ = ["KeyPath", "LineMap", "line_map", "line_of", "load_model"]

M = TypeVar("M", bound=BaseModel)

#: Where a value sits in the YAML document: mapping keys (str) and sequence indexes (int), as in
#: pydantic's error ``loc``; ``()`` is the document.
KeyPath: TypeAlias = tuple[str | int, ...]

#: Key path -> 1-based line (see :func:`line_map`).
LineMap: TypeAlias = dict[KeyPath, int]


def line_map(node: yaml.Node, path: KeyPath = (), out: LineMap | None = None,
             dups: list[tuple[str, int]] | None = None) -> LineMap:
    """Map each key path of ``node`` to its 1-based line (the key's line for mapping values);
    keys given twice in one mapping are appended to ``dups`` as ``(key, line)``."""
    out = {} if out is None else out
    out.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for k, v in node.value:
            if k.value in seen and dups is not None:
                dups.append((k.value, k.start_mark.line + 1))
            seen.add(k.value)
            out[(*path, k.value)] = k.start_mark.line + 1
            line_map(v, (*path, k.value), out, dups)
    elif isinstance(node, yaml.SequenceNode):
        for i, v in enumerate(node.value):
            line_map(v, (*path, i), out, dups)
    return out


def line_of(loc: KeyPath, lines: LineMap) -> int:
    """The line of the deepest part of ``loc`` present in the file. Parts that are not keys
    (union tags, validator names) are stepped over."""
    path: KeyPath = ()
    for part in loc:
        if (*path, part) in lines:
            path = (*path, part)
        elif (*path, str(part)) in lines:
            path = (*path, str(part))
    return lines.get(path, 1)


def load_model(
    text: str,
    source: str,
    model: type[M],
    error: type[UserError],
    what: str,
    *,
    skip: Collection[str] = frozenset(),
    line_hint: Callable[[str, LineMap], int | None] | None = None,
) -> M:
    """Validate YAML ``text`` as ``model``; raise ``error`` with ``source:line: ...`` on one line.

    ``what`` completes "a ... is a YAML mapping (...)"; ``skip`` are location parts left out of
    the printed path (union tags); ``line_hint(msg, lines)`` may point model-level errors at a
    line. Several errors are sorted by line: the first leads, the rest follow as "(also ...)"."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data: Any = yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else 1
        raise error(f"{source}:{line}: not valid YAML: {e.problem or e}") from None
    except yaml.YAMLError as e:
        raise error(f"{source}: not valid YAML: {e}") from None
    if node is None or not isinstance(data, dict):
        raise error(f"{source}:1: {what}")
    dups: list[tuple[str, int]] = []
    lines = line_map(node, dups=dups)
    if dups:
        key, line = dups[0]
        raise error(f"{source}:{line}: key '{key}' given twice")
    try:
        return model.model_validate(data)
    except ValidationError as e:
        msgs = []
        for err in e.errors(include_url=False):
            loc = tuple(p for p in err["loc"] if p not in ("function-after", "function-before"))
            msg = err["msg"].removeprefix("Value error, ")
            where = ".".join(str(p) for p in loc if p not in skip) or "(top)"
            line = (line_hint(msg, lines) if line_hint else None) or line_of(loc, lines)
            msgs.append((line, f"{where}: {msg}" if loc else msg))
        msgs.sort(key=lambda m: m[0])
        first_line, first = msgs[0]
        more = "; ".join(f"line {ln}: {m}" for ln, m in msgs[1:])  # one line on stderr
        more = f" (also {more})" if more else ""
        raise error(f"{source}:{first_line}: {first}{more}") from None
