"""The format registry: one module per format, one explicit list, duplicates refused; and a new
format declared as data runs on both tokenizers without a change to either (the native one gets
the format's rules through ``native_patterns``)."""

from __future__ import annotations

import pytest
from polars.testing import assert_frame_equal

from stacklens.ingest import formats
from stacklens.ingest.formats import FORMATS, REGISTRY, by_name
from stacklens.ingest.formats.base import DATE, TAIL, LineFormat, Prefix
from stacklens.ingest.tokenize import FileChunk, native_available, tokenize_batch

R = "req-c354514b-0c97-415e-ba7f-18750569f103"


def test_registry_is_the_list_of_format_modules():
    assert [f.name for f in FORMATS] == [
        "oslo", "oslo_prefixed", "oslo_merged", "syslog", "oslo_nots"]
    assert list(FORMATS) == REGISTRY
    for f in FORMATS:
        assert by_name(f.name) is f
        assert getattr(formats, f.name).FORMAT is f  # module name = format name


def test_duplicate_name_is_an_error():
    with pytest.raises(ValueError, match="registered twice"):
        formats._check([*REGISTRY, by_name("oslo")])


# A format the package does not have, declared as a format module would declare it: CRI
# container logs (kubelet, ``<RFC 3339 time> <stream> <P|F> <line>``; openstack-helm deployments)
# wrapping oslo lines.
CRI = LineFormat(
    name="oslo_cri",
    header=r"^\S+ (?:stdout|stderr) [PF] " + DATE + " " + TAIL,
    trace=r"^\S+ \S+ [PF] \S+ \S+ (?:\d+ )?TRACE ",
    tb_line=r"^(?P<k>\S+ \S+ [PF] \S+ \S+ (?:\d+ )?)(?P<lvl>[A-Z]+) (?P<lg>\S+)(?P<rest>.*)$",
    prefix=Prefix(strip=r"^\S+ (?:stdout|stderr) [PF] "),
)


@pytest.mark.parametrize("native", [False, True])
def test_a_new_format_needs_no_tokenizer_change(native):
    if native and not native_available():
        pytest.skip("stacklens_native is not built")
    lines = [
        f"2016-06-28T13:56:12.360Z stdout F 2016-06-28 13:56:12.360 7 INFO nova.api [{R} u p] hi",
        "2016-06-28T13:56:12.361Z stdout F continued",
        "2016-06-28T13:56:13.000Z stderr F 2016-06-28 13:56:13.000 7 DEBUG nova.x [-] bye",
    ]
    chunks = [FileChunk("nova-api.log", ("\n".join(lines) + "\n").encode(), "h", "nova-api", 2016)]
    res = tokenize_batch(chunks, CRI, native=native)
    ev = res.events
    assert ev.get_column("message").to_list() == ["hi", "bye"]
    assert ev.get_column("request_id").to_list() == [R, None]
    assert ev.get_column("ts_ns").to_list() == [1_467_122_172_360_000_000, 1_467_122_173_000_000_000]
    assert ev.get_column("n_lines").to_list() == [2, 1]
    if native:
        assert_frame_equal(ev, tokenize_batch(chunks, CRI, native=False).events)
