"""The stored form of a message: one opaque blob that Lua never parses.

    blob = b"\\x01" + len(header).to_bytes(4, "big") + header + body

``header`` is compact JSON of the message's set properties (short keys below), with 0-15 spaces
after its "{" (see spread()); ``body`` is the raw bytes. Reading the body of a received message is
a slice; the header is parsed only when a property is asked for.
"""

from __future__ import annotations

import base64
import json
import uuid
from datetime import UTC, datetime, timedelta
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any

VERSION = b"\x01"

# property name -> header key
FIELDS = {
    "message_id": "id",
    "content_type": "ct",
    "correlation_id": "ci",
    "session_id": "sid",
    "partition_key": "pk",
    "subject": "sj",
    "to": "to",
    "reply_to": "rt",
    "reply_to_session_id": "rts",
}
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _unsupported(value: Any) -> Any:
    raise TypeError(type(value).__name__)  # encode_properties leaves only JSON types


# CPython's C encoder, made once (JSONEncoder.encode builds one per call, the larger part of its
# cost). No circular-reference markers: a header holds scalars and the flat dicts encode_properties
# makes.
_C_JSON = (
    None
    if c_make_encoder is None
    else c_make_encoder(None, _unsupported, encode_basestring, None, ":", ",", False, False, True)
)
_PY_JSON = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


# Why a header has 0-15 spaces after its "{": Redis runs scripts in Lua 5.1, which interns every
# string it makes (each message a send passes in ARGV, each one XRANGE hands receive) and hashes a
# long one from at most 32 of its bytes, one in every len/32, counted from the end, with the length
# as the seed. For a 1 KiB message those bytes are all in the body, so messages with one body and
# different ids hash alike, and each new string walks a chain of every such string not yet
# collected, a cost that grows with the batch and takes a large share of a send's server time. The
# length seeds the hash, so 16 lengths make 16 chains; this takes the count from the id's last
# character, which is the same at every encoding of one message, and is JSON whitespace to every
# reader (json, Lua's cjson).
_HEX_DIGIT = {c: i for i, c in enumerate("0123456789abcdef")}
_SPACES = tuple(b" " * i for i in range(16))


def spread(mid: Any) -> bytes:
    """The spaces after the header's "{" (0-15) for a message whose message_id is ``mid``."""
    if type(mid) is not str or not mid:
        return b""
    last = mid[-1]
    digit = _HEX_DIGIT.get(last)
    return _SPACES[ord(last) & 15 if digit is None else digit]


def _plain(text: str) -> bool:
    """Whether JSON writes ``text`` as it is between its quotes: no quote, backslash or control
    character (isprintable is False for those, and for a lone surrogate, which UTF-8 refuses)."""
    return text.isprintable() and '"' not in text and "\\" not in text


def encode(header: dict[str, Any], body: bytes) -> bytes:
    mid = header.get("id")
    if len(header) == 1 and type(mid) is str and _plain(mid):
        h = b'{%s"id":"%s"}' % (spread(mid), mid.encode())  # the JSON encoder's, without its cost
    else:
        h = ("".join(_C_JSON(header, 0)) if _C_JSON is not None else _PY_JSON(header)).encode()
        h = b"{%s%s" % (spread(mid), h[1:])
    return b"".join((VERSION, len(h).to_bytes(4, "big"), h, body))


# the blob's start for a generated message_id (32 hex digits), by the id's last digit
_GENERATED_ID_PREFIX = {
    c: VERSION + (41 + i).to_bytes(4, "big") + b"{" + _SPACES[i] + b'"id":"'  # 41: '{"id":"<32 hex>"}'
    for c, i in _HEX_DIGIT.items()
}


def encode_generated_id(mid: str, body: bytes) -> bytes:
    """encode({"id": mid}, body) for a generated message_id (32 hex digits), the common header."""
    prefix = _GENERATED_ID_PREFIX.get(mid[-1:]) if len(mid) == 32 else None
    if prefix is None:
        return encode({"id": mid}, body)
    return b'%s%s"}%s' % (prefix, mid.encode(), body)


def split(blob: bytes) -> tuple[int, int]:
    """(header end, body start) offsets; raises ValueError on a blob sbredis did not write."""
    if blob[:1] != VERSION or len(blob) < 5:
        raise ValueError("not an sbredis message")
    end = 5 + int.from_bytes(blob[1:5], "big")
    return end, end


def body_of(blob: bytes) -> bytes:
    if blob[:1] != VERSION or len(blob) < 5:  # split() inlined: this runs for every message read
        raise ValueError("not an sbredis message")
    return blob[5 + int.from_bytes(blob[1:5], "big") :]


def header_of(blob: bytes) -> dict[str, Any]:
    end, _ = split(blob)
    parsed: dict[str, Any] = json.loads(blob[5:end])
    return parsed


def encode_properties(props: dict[Any, Any]) -> dict[str, Any]:
    """Application properties to JSON-safe values; types JSON lacks are tagged."""
    out: dict[str, Any] = {}
    for key, value in props.items():
        name = key.decode() if isinstance(key, bytes) else key
        if value is None or isinstance(value, (str, bool, int, float)):
            out[name] = value
        elif isinstance(value, (bytes, bytearray, memoryview)):
            out[name] = {"$b": base64.b64encode(bytes(value)).decode()}
        elif isinstance(value, datetime):
            out[name] = {"$dt": to_ms(value)}
        elif isinstance(value, timedelta):
            out[name] = {"$td": value // timedelta(microseconds=1)}
        elif isinstance(value, uuid.UUID):
            out[name] = {"$u": str(value)}
        else:  # validated before encoding
            raise TypeError(type(value).__name__)
    return out


def decode_properties(props: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in props.items():
        if isinstance(value, dict):
            tag, raw = next(iter(value.items()))
            if tag == "$b":
                value = base64.b64decode(raw)
            elif tag == "$dt":
                value = from_ms(raw)
            elif tag == "$td":
                value = timedelta(microseconds=raw)
            elif tag == "$u":
                value = uuid.UUID(raw)
        out[key] = value
    return out


def to_ms(when: datetime) -> int:
    """A datetime as Unix ms; a naive datetime is taken as UTC (as the Azure SDK does)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    # floor division of timedeltas is exact; a float quotient would round datetime.max up past the
    # last datetime, a value that cannot be decoded again
    return (when - _EPOCH) // timedelta(milliseconds=1)


def from_ms(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def encode_value(value: Any) -> Any:
    """Any AMQP-like value (nested lists and maps with any keys) to JSON-safe form; the types JSON
    lacks are tagged, a map is ``{"$m": [[key, value], ...]}``.

    Raises:
        TypeError: a value of a type sbredis cannot store.
    """
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$b": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, datetime):
        return {"$dt": to_ms(value)}
    if isinstance(value, timedelta):
        return {"$td": value // timedelta(microseconds=1)}
    if isinstance(value, uuid.UUID):
        return {"$u": str(value)}
    if isinstance(value, (list, tuple)):
        return [encode_value(v) for v in value]
    if isinstance(value, dict):
        return {"$m": [[encode_value(k), encode_value(v)] for k, v in value.items()]}
    raise TypeError(type(value).__name__)


def decode_value(value: Any, str_as_bytes: bool = False) -> Any:
    """encode_value's inverse; with ``str_as_bytes`` strings come back as UTF-8 bytes (as an AMQP
    decoder returns them)."""
    if isinstance(value, str):
        return value.encode() if str_as_bytes else value
    if isinstance(value, list):
        return [decode_value(v, str_as_bytes) for v in value]
    if isinstance(value, dict):
        tag, raw = next(iter(value.items()))
        if tag == "$m":
            return {decode_value(k, str_as_bytes): decode_value(v, str_as_bytes) for k, v in raw}
        if tag == "$b":
            return base64.b64decode(raw)
        if tag == "$dt":
            return from_ms(raw)
        if tag == "$td":
            return timedelta(microseconds=raw)
        if tag == "$u":
            return uuid.UUID(raw)
    return value
