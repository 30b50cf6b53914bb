"""Whole-number settings from the environment: one parser, a UserError naming the variable."""

from __future__ import annotations

import gzip

import pytest

from stacklens.errors import UserError
from stacklens.ingest.sources import _gunzip
from stacklens.settings import positive_int
from stacklens.trace.bounded import BUCKETS_ENV, MEM_ENV, bucket_count


def test_positive_int(monkeypatch):
    monkeypatch.delenv("STACKLENS_X", raising=False)
    assert positive_int("STACKLENS_X", 7) == 7
    for blank in ("", "  "):
        monkeypatch.setenv("STACKLENS_X", blank)
        assert positive_int("STACKLENS_X", 7) == 7
    monkeypatch.setenv("STACKLENS_X", " 12 ")
    assert positive_int("STACKLENS_X", 7) == 12
    for bad in ("0", "-3", "1.5", "2G", "x"):
        monkeypatch.setenv("STACKLENS_X", bad)
        with pytest.raises(UserError, match=r"STACKLENS_X=.*whole number of MiB >= 1"):
            positive_int("STACKLENS_X", 7, unit="MiB")


def test_each_stage_reads_its_setting(monkeypatch):
    monkeypatch.setenv(BUCKETS_ENV, "0")
    with pytest.raises(UserError, match=BUCKETS_ENV):
        bucket_count(10)
    monkeypatch.delenv(BUCKETS_ENV)
    monkeypatch.setenv(MEM_ENV, "1")
    assert bucket_count(3 * 2**20) > 1
    # the gunzip cap is read when a file is read, not when stacklens is imported
    monkeypatch.setenv("STACKLENS_MAX_GUNZIP_BYTES", "lots")
    with pytest.raises(UserError, match="STACKLENS_MAX_GUNZIP_BYTES"):
        _gunzip(gzip.compress(b"line\n"))
    monkeypatch.setenv("STACKLENS_MAX_GUNZIP_BYTES", "4")
    assert _gunzip(gzip.compress(b"ab\ncd\nef\n")).data == b"ab\n"
