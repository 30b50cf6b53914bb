"""Transition shim (to be removed once the CLI and tests call the new names): the report was
built here, together with template mining.

Now: :func:`stacklens.analyze.mining.mine_store` (mining, writes ``templates`` and
``error_templates``) then :func:`stacklens.analyze.build.build_report` (read only).
"""

from __future__ import annotations

from typing import Any

from stacklens.analyze.build import REPORT_FORMAT_VERSION, build_report, section_rows
from stacklens.analyze.mining import mine_error_templates, mine_store
from stacklens.store import RunStore

__all__ = ["REPORT_FORMAT_VERSION", "analyze", "mine_error_templates", "section_rows"]


def analyze(store: RunStore) -> dict[str, Any]:
    """Mine the error templates of ``store`` (writes tables) and build its report dict."""
    mine_store(store)
    return build_report(store)
