"""The request id of an oslo.messaging ``unpacked context`` dump (Kilo and older) is found
without the capture engines (``skew._dump_request_id``); it must be exactly what the pattern
``_KILO_RECV_RID`` extracts (the last ``'request_id'`` item on the dump's first line), on
hand-picked edges and on random dumps built from the pieces that matter."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_series_equal

from stacklens.trace.skew import _KILO_RECV_RID, _dump_request_id

EDGES = [
    "unpacked context: {'request_id': u'req-1a', 'x': 'request_id': 'req-2b'}",
    "unpacked context: {'request_id': 'req-1a', 'a': \"'request_id': 'req-ff'\"}",
    "unpacked context: {'request_id': 'req-1a'\n'request_id': 'req-2b'}",
    "unpacked context: {'request_id': 'req-1a\n'}",
    "unpacked context:{'request_id': 'req-1a'}",
    "xunpacked context: {'request_id': 'req-1a'}",
    "unpacked context: {'request_id': 'req-1a\"}",
    "unpacked context: {'request_id': 'req-'}",
    "unpacked context: {'request_id': 'req-1a'req-2b'}",
    "unpacked context: {'request_id': 'req-1a''request_id': 'req-2b'}",
    # the closing quote of one item opens the next (found by hypothesis)
    "unpacked context: {'request_id': u'req-3c'request_id': u'req-77'",
    "unpacked context: {'request_id': u'req-3c'request_id': u'req-77'request_id': 'req-1'}",
    "unpacked context: {'request_id': u'req-3c'request_id': u'req-77\n'request_id': 'req-1'}",
    None, "", "unpacked context: {",
]
PIECES = ["unpacked context: {", "'request_id': ", "u'", "'", "req-", "0a-9f", "req-3c",
          ", ", "\n", "x", "'request_id': u'req-77'", "}", '"']


def _same(messages: list[str | None]) -> None:
    df = pl.DataFrame({"message": messages}, schema={"message": pl.String})
    m = pl.col("message")
    assert_series_equal(df.select(_dump_request_id(m)).to_series(),
                        df.select(m.str.extract(_KILO_RECV_RID, 1)).to_series())


def test_edges():
    _same(EDGES)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), max_size=20))
def test_random_dumps(texts):
    _same(["unpacked context: {" + t for t in texts] + texts)
