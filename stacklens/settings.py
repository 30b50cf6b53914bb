"""Settings a user gives in the environment (``STACKLENS_*``): one parser and one message for
every whole-number setting, so a bad value is a :class:`~stacklens.errors.UserError` (exit 1)
naming the variable, never a traceback, whichever stage reads it."""

from __future__ import annotations

import os

from stacklens.errors import UserError

__all__ = ["native_enabled", "positive_int"]


def native_enabled() -> bool:
    """False when ``STACKLENS_NATIVE`` is ``0``: every stage then runs its Python/Polars
    reference instead of the native extension (``stacklens_native``), same tables."""
    return os.environ.get("STACKLENS_NATIVE", "1").strip() != "0"


def positive_int(name: str, default: int, *, unit: str = "") -> int:
    """The environment variable ``name`` as a whole number >= 1 (surrounding blanks ignored);
    ``default`` when it is unset or blank. ``unit`` ("MiB", "bytes") names what the number
    counts in the error message. Raises :class:`~stacklens.errors.UserError` for anything else
    (``0``, ``-3``, ``1.5``, ``2G``)."""
    raw = os.environ.get(name, "")
    if not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        of = f" of {unit}" if unit else ""
        raise UserError(f"{name}={raw!r}: give a whole number{of} >= 1")
    return value
