"""The native tokenizer's windowed redaction (``native/src/redact.rs``) against the regexes.

The fast path runs the secret pattern of :mod:`stacklens.ingest.redact` only at the positions
where a match may start (found with literal searches around the pre-filter's hits); these
tests check that it gives the same text as ``secret.replace_all`` wherever the pre-filter
matches, byte for byte, on every line of the shared real data (and on blocks of lines, as
continuations are), and on the secrets corpus of ``test_redact_corpus.py``.
"""

from __future__ import annotations

import gzip

import polars as pl
import pytest

from stacklens.ingest.formats import by_name
from stacklens.ingest.redact import _CHEAP, _REPLACEMENT, _SECRET, redact

native = pytest.importorskip("stacklens_native")

from conftest import DATA, need  # noqa: E402

#: lines joined into one text, like a continuation (tracebacks, dumps)
BLOCK_LINES = 40


def _both(texts: list[str]) -> tuple[list[str], list[str]]:
    """(windowed, regexes) redaction of ``texts``."""
    fast = native.redact(texts, _CHEAP, _SECRET, _REPLACEMENT, True)
    slow = native.redact(texts, _CHEAP, _SECRET, _REPLACEMENT, False)
    return fast, slow


def _data_texts() -> list[str]:
    """Every file of the shared data, decoded as the tokenizer does (invalid UTF-8 replaced)."""
    texts = []
    for p in sorted(need(DATA).rglob("*")):
        if not p.is_file():
            continue
        raw = p.read_bytes()
        if p.suffix == ".gz":
            try:
                raw = gzip.decompress(raw)
            except OSError:
                pass
        texts.append(raw.decode("utf-8", "replace"))
    return texts


def test_fast_path_is_on_for_the_current_rules():
    """The Python side passes exactly the patterns the fast path was written for."""
    from stacklens.ingest import tokenize as tok

    fmt = by_name("oslo")
    assert native.fast_paths(fmt.name, tok._native_patterns(fmt))["redact"] is True
    c = native.constants()
    assert (c["redact_secret"], c["redact_cheap"]) == (_SECRET, _CHEAP)


def test_other_patterns_are_refused():
    with pytest.raises(ValueError):
        native.redact(["x"], _CHEAP, "(?:" + _SECRET + ")", _REPLACEMENT, True)


def test_windowed_redaction_equals_the_regexes_on_the_shared_data():
    """Every line of every file of the shared data, then blocks of ``BLOCK_LINES`` lines."""
    files = _data_texts()
    lines = [ln for text in files for ln in text.split("\n")]
    fast, slow = _both(lines)
    diff = [i for i, (a, b) in enumerate(zip(fast, slow, strict=True)) if a != b]
    assert not diff, [lines[i] for i in diff[:5]]
    assert sum(a != b for a, b in zip(lines, fast, strict=True)) > 1000  # secrets were found
    # the Python (Polars) path on the same lines
    py = pl.DataFrame({"t": lines}).select(redact(pl.col("t"))).get_column("t").to_list()
    assert py == fast
    blocks = []
    for text in files:
        ls = text.split("\n")
        blocks += ["\n".join(ls[i:i + BLOCK_LINES]) for i in range(0, len(ls), BLOCK_LINES)]
    fast, slow = _both(blocks)
    assert fast == slow


def test_windowed_redaction_equals_the_regexes_on_the_secrets_corpus():
    from test_redact_corpus import FORMS, _marker

    texts = [t.replace("{S}", _marker(i)) for i, (_, t) in enumerate(FORMS)]
    texts += [f"prefix {t} suffix, more: {u}" for t, u in zip(texts, reversed(texts), strict=True)]
    fast, slow = _both(texts)
    assert fast == slow
    assert all(_marker(i) not in fast[i] for i in range(len(FORMS)))
