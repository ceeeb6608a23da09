"""codec.encode writes the same bytes on its short paths as the JSON encoder's: random headers
against a reference built with json.dumps, and the stored form reads back."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbredis._core import codec


def reference(header: dict[str, object], body: bytes) -> bytes:
    """The stored form as the format defines it: compact JSON with spread()'s spaces after "{"."""
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode()
    h = b"{" + codec.spread(header.get("id")) + text[1:]
    return codec.VERSION + len(h).to_bytes(4, "big") + h + body


ids = st.one_of(
    st.text(max_size=128),  # any text, escapes and non-ASCII included
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=128),
    st.from_regex(r"\Am-[0-9]{1,9}\Z"),
    st.uuids().map(str),
    st.uuids().map(lambda u: u.hex),
)
values = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=40))
headers = st.one_of(
    st.builds(lambda mid: {"id": mid}, ids),
    st.fixed_dictionaries(
        {"id": ids},
        optional={"sj": st.text(max_size=20), "ap": st.dictionaries(st.text(max_size=10), values, max_size=4)},
    ),
)


@settings(max_examples=400)
@given(headers, st.binary(max_size=64))
def test_encode_matches_the_json_encoder(header: dict[str, object], body: bytes) -> None:
    try:
        expected = reference(header, body)
    except UnicodeEncodeError:  # a lone surrogate: UTF-8 cannot carry it, whichever path
        with pytest.raises(UnicodeEncodeError):
            codec.encode(header, body)
        return
    blob = codec.encode(header, body)
    assert blob == expected
    assert codec.header_of(blob) == header
    assert codec.body_of(blob) == body


@pytest.mark.parametrize(
    "mid",
    ["m-123", str(uuid.UUID(int=7)), "order/2026-11-29", "é-ü", 'a"b', "a\\b", "tab\there", "\x7f", "\u2028", ""],
)
def test_encode_common_and_escaped_ids(mid: str) -> None:
    assert codec.encode({"id": mid}, b"body") == reference({"id": mid}, b"body")
