"""Allocator settings for the command's process, set before Polars is first imported.

Polars allocates through its own jemalloc, which returns freed pages to the kernel after a
short decay (``polars/__init__.py``, Polars 2.1, pola-rs/polars#21829, sets
``dirty_decay_ms:500,muzzy_decay_ms:1000`` and appends what ``_RJEM_MALLOC_CONF`` already
holds, the later value winning); the trace stage frees and allocates hundreds of MB per
bucket, so those pages were faulted in and zeroed again and again (the kernel's
``clear_page`` and page faults: a fifth of the trace stage's CPU samples). A 3 s decay keeps
them for the next bucket.

Measured on the 10 M-line bench corpus (``stacklens analyze``, 3 runs each in turn): wall
36.4 -> 34.3 s (median ratio 0.94), system CPU 11.7 -> 8.2 s, peak RSS unchanged (1,224 MiB).
Never returning them (``-1``) was as fast but doubled the trace stage's peak (2.1 GiB).

jemalloc reads ``_RJEM_MALLOC_CONF`` (tikv-jemallocator's prefix) once, at its first
allocation, i.e. when Polars' library is loaded: so this module is imported by
:mod:`stacklens.cli` before anything that imports Polars, and a value already in the
environment is kept (set it to tune this; an empty value gives Polars' defaults back).
"""

from __future__ import annotations

import os

__all__ = ["JEMALLOC_CONF"]

#: decay of dirty and muzzy pages, ms (jemalloc ``opt.dirty_decay_ms``/``opt.muzzy_decay_ms``)
JEMALLOC_CONF = "dirty_decay_ms:3000,muzzy_decay_ms:3000"

os.environ.setdefault("_RJEM_MALLOC_CONF", JEMALLOC_CONF)
