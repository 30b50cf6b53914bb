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

Muzzy pages (jemalloc's second stage, purged lazily with ``MADV_FREE`` on Linux) still count in
the resident set until the kernel reclaims them, so a muzzy decay of 3 s kept freed pages
resident for up to 6 s. The trace stage's global pass frees and allocates several hundred MB
within seconds (the clock frame's group-by, then its streamed records): with a muzzy decay of
0 (dirty pages are still kept 3 s for reuse, then returned at once) ``stacklens trace`` of the
30 M-line bench corpus peaked at 1,474 / 1,426 MiB against 1,743 / 1,653 MiB (two pairs in turn,
2026-11-29), 1-2 s slower of ~47 s; ``stacklens analyze`` of the 10 M-line corpus, three pairs:
wall median 27.5 -> 28.0 s (24.8-29.2 against 26.6-29.5), peak 1,204-1,312 -> 1,243-1,258 MiB.

jemalloc reads ``_RJEM_MALLOC_CONF`` (tikv-jemallocator's prefix) once, at its first
allocation, i.e. when Polars' library is loaded: so this module is imported by
:mod:`stacklens.cli` before anything that imports Polars, and a value already in the
environment is kept (set it to tune this; an empty value gives Polars' defaults back).
"""

from __future__ import annotations

import os

__all__ = ["JEMALLOC_CONF"]

#: decay of dirty and muzzy pages, ms (jemalloc ``opt.dirty_decay_ms``/``opt.muzzy_decay_ms``)
JEMALLOC_CONF = "dirty_decay_ms:3000,muzzy_decay_ms:0"

os.environ.setdefault("_RJEM_MALLOC_CONF", JEMALLOC_CONF)
