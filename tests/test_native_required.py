"""CI builds the native tokenizer and sets ``STACKLENS_REQUIRE_NATIVE=1``: there, a missing
extension is a failure, so the parity tests of ``tests/test_native.py`` cannot skip silently."""

from __future__ import annotations

import importlib
import os

import pytest


@pytest.mark.skipif(
    os.environ.get("STACKLENS_REQUIRE_NATIVE") != "1",
    reason="STACKLENS_REQUIRE_NATIVE is not set (only CI requires the native tokenizer)",
)
def test_native_tokenizer_is_installed_when_required() -> None:
    native = importlib.import_module("stacklens_native")
    from stacklens.ingest.tokenize import native_available

    assert native.__file__
    assert native_available()
