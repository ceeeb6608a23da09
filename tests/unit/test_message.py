"""ServiceBusMessage / ServiceBusMessageBatch: validation, encoding and the codec round trip."""

from __future__ import annotations

import math
import os
import uuid
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sbredis import ServiceBusMessage, ServiceBusMessageBatch, ServiceBusReceivedMessage
from sbredis._core import codec
from sbredis.amqp import AmqpMessageBodyType
from sbredis.exceptions import (
    InvalidArgumentError,
    InvalidOperationError,
    MessageSizeExceededError,
    ServiceBusError,
)


def received(m: ServiceBusMessage, **kw: Any) -> ServiceBusReceivedMessage:
    """What a receiver builds from the stored blob of `m`."""
    args: dict[str, Any] = dict(
        entity_name="q", partition_id=0, group="m", local_seq=1, delivery_count=1, enqueued_ms=1, expires_ms=0
    )
    args.update(kw)
    return ServiceBusReceivedMessage(m.encoded(), **args)


# ------------------------------------------------------------------------- exception classes
def test_exception_classes_are_value_and_type_errors() -> None:
    assert issubclass(InvalidArgumentError, ValueError)
    assert issubclass(InvalidArgumentError, TypeError)
    assert issubclass(InvalidArgumentError, InvalidOperationError)
    assert issubclass(InvalidOperationError, ValueError)
    assert not issubclass(InvalidOperationError, TypeError)
    assert issubclass(MessageSizeExceededError, ValueError)
    for cls in (InvalidArgumentError, InvalidOperationError, MessageSizeExceededError):
        assert issubclass(cls, ServiceBusError)
        assert cls("x").retryable is False


# --------------------------------------------------------------------------------------- body
@pytest.mark.parametrize("body", [1, 1.5, {"a": 1}, ["a", "b"], [b"a", "b"], object(), True, {b"x"}])
def test_wrong_body_types_are_rejected(body: Any) -> None:
    with pytest.raises(InvalidArgumentError) as ei:
        ServiceBusMessage(body)
    assert isinstance(ei.value, TypeError) and isinstance(ei.value, ValueError)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("héllo", "héllo".encode()),
        (b"\x00\xff", b"\x00\xff"),
        (bytearray(b"ab"), b"ab"),
        (memoryview(b"cd"), b"cd"),
        ([b"a", bytearray(b"b"), b"c"], b"abc"),
        ("", b""),
    ],
)
def test_accepted_bodies(body: Any, expected: bytes) -> None:
    m = ServiceBusMessage(body)
    assert m.body_bytes == expected
    assert isinstance(m.body_bytes, bytes)
    assert b"".join(m.body) == expected  # the SDK's shape: an iterator of bytes sections
    r = received(m)
    assert r.body_bytes == expected
    assert next(r.body) == expected
    assert r.body_type is AmqpMessageBodyType.DATA


def test_no_body_is_received_as_none() -> None:
    m = ServiceBusMessage(None)
    assert m.body is None and m.body_bytes is None
    r = received(m)
    assert r.body is None and r.body_bytes is None and str(r) == ""


def test_str_decodes_the_body() -> None:
    assert str(ServiceBusMessage("héllo wörld")) == "héllo wörld"
    assert str(ServiceBusMessage(b"abc")) == "abc"
    assert str(received(ServiceBusMessage("zürich"))) == "zürich"
    assert str(ServiceBusMessage(b"\xffok")) == "\ufffdok"  # undecodable bytes do not raise
    assert "body_size=5" in repr(ServiceBusMessage("hello"))


# ------------------------------------------------------------------------------ id properties
@pytest.mark.parametrize("name", ["message_id", "session_id", "partition_key"])
@pytest.mark.parametrize("value", [1, b"bytes", 1.0, uuid.uuid4(), ["x"]])
def test_non_str_ids_are_rejected(name: str, value: Any) -> None:
    if name == "message_id" and isinstance(value, uuid.UUID):
        assert ServiceBusMessage("x", message_id=value).message_id == value  # the SDK's AMQP uuid id
        return
    with pytest.raises(InvalidArgumentError):
        ServiceBusMessage("x", **{name: value})
    m = ServiceBusMessage("x")
    with pytest.raises(InvalidArgumentError):
        setattr(m, name, value)


@pytest.mark.parametrize("name", ["message_id", "session_id", "partition_key"])
def test_ids_longer_than_128_are_rejected(name: str) -> None:
    ok = ServiceBusMessage("x", **{name: "a" * 128})
    assert getattr(ok, name) == "a" * 128
    with pytest.raises(InvalidArgumentError, match="128"):
        ServiceBusMessage("x", **{name: "a" * 129})
    m = ServiceBusMessage("x")
    with pytest.raises(InvalidArgumentError):
        setattr(m, name, "é" * 129)


@pytest.mark.parametrize("name", ["content_type", "correlation_id", "subject", "to", "reply_to", "reply_to_session_id"])
def test_other_string_properties_check_type(name: str) -> None:
    m = ServiceBusMessage("x", **{name: "v"})
    assert getattr(m, name) == "v"
    assert getattr(received(m), name) == "v"
    with pytest.raises(InvalidArgumentError):
        ServiceBusMessage("x", **{name: 5})


def test_session_id_and_partition_key_must_agree() -> None:
    with pytest.raises(InvalidOperationError) as ei:
        ServiceBusMessage("x", session_id="a", partition_key="b")
    assert isinstance(ei.value, ValueError)
    assert not isinstance(ei.value, InvalidArgumentError)

    m = ServiceBusMessage("x", session_id="a", partition_key="a")
    assert (m.session_id, m.partition_key) == ("a", "a")

    m = ServiceBusMessage("x", session_id="a")
    assert m.partition_key == "a"  # the session id pins the partition when no key is set
    with pytest.raises(InvalidOperationError):
        m.partition_key = "b"
    assert m.partition_key == "a"

    m = ServiceBusMessage("x", partition_key="p")
    m.session_id = "s"  # accepted, as the SDK does: the session id then decides the partition
    assert (m.session_id, m.partition_key) == ("s", "s")


def test_message_id_is_generated_when_unset_and_unique() -> None:
    ids = [ServiceBusMessage("x").message_id for _ in range(2000)]
    assert all(isinstance(i, str) and 0 < len(i) <= 128 for i in ids)
    assert len(set(ids)) == len(ids)
    assert ServiceBusMessage("x", message_id="mine").message_id == "mine"
    m = ServiceBusMessage("x")
    assert received(m).message_id == m.message_id


# ------------------------------------------------------------------------------- time to live
@pytest.mark.parametrize(
    "ttl", [0, -1, 0.0, -0.5, timedelta(0), timedelta(seconds=-1), float("nan"), "10", True, False, [1]]
)
def test_bad_time_to_live_is_rejected(ttl: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        ServiceBusMessage("x", time_to_live=ttl)
    m = ServiceBusMessage("x")
    with pytest.raises(InvalidArgumentError):
        m.time_to_live = ttl


def test_infinite_time_to_live_is_an_argument_error() -> None:
    with pytest.raises(InvalidArgumentError):
        ServiceBusMessage("x", time_to_live=float("inf"))


@pytest.mark.parametrize("ttl", [1.797e305, 1.797693314631629e305, 1e308])
def test_a_finite_time_to_live_too_long_for_milliseconds_never_expires(ttl: float) -> None:
    """Seconds that are finite but overflow as milliseconds (1.7976e305 would raise a raw
    OverflowError) mean "never", as any time to live of 100 years or more does."""
    m = ServiceBusMessage("x", time_to_live=ttl)
    assert m.time_to_live is None and m.ttl_ms == 0


@pytest.mark.parametrize(
    ("ttl", "ms"),
    [(1.5, 1500), (timedelta(minutes=2), 120_000), (30, 30_000), (1e-9, 1), (timedelta(microseconds=1), 1)],
)
def test_time_to_live_in_ms(ttl: Any, ms: int) -> None:
    m = ServiceBusMessage("x", time_to_live=ttl)
    assert m.time_to_live == timedelta(milliseconds=ms)
    assert m.ttl_ms == ms
    m.time_to_live = None
    assert m.time_to_live is None and m.ttl_ms == 0


def test_scheduled_enqueue_time() -> None:
    when = datetime(2030, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    m = ServiceBusMessage("x", scheduled_enqueue_time_utc=when)
    assert m.scheduled_enqueue_time_utc == when.replace(microsecond=123000)
    naive = ServiceBusMessage("x", scheduled_enqueue_time_utc=when.replace(tzinfo=None))
    assert naive.sched_ms == m.sched_ms  # naive is UTC, as in the Azure SDK
    with pytest.raises(InvalidArgumentError):
        ServiceBusMessage("x", scheduled_enqueue_time_utc=1234)  # type: ignore[arg-type]


# --------------------------------------------------------------------- application properties
@pytest.mark.parametrize(
    "props",
    [
        {"a": [1, 2]},
        {"a": {"b": 1}},
        {"a": object()},
        {"a": Decimal("1.5")},
        {"a": 1j},
        {"a": {1, 2}},
        {1: "int key"},
        {("t",): "tuple key"},
        [("a", 1)],
        "a=1",
    ],
)
def test_bad_application_properties_are_rejected(props: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        ServiceBusMessage("x", application_properties=props)
    m = ServiceBusMessage("x")
    with pytest.raises(InvalidArgumentError):
        m.application_properties = props


def test_application_properties_are_copied() -> None:
    mine = {"a": 1}
    m = ServiceBusMessage("x", application_properties=mine)
    mine["a"] = 2
    assert m.application_properties == {"a": 1}
    assert received(m).sent_application_properties == {"a": 1}


def test_in_place_property_change_after_encoding_is_sent() -> None:
    m = ServiceBusMessage("x", application_properties={"attempt": 1})
    m.encoded()  # what a send does
    assert m.application_properties is not None
    m.application_properties["attempt"] = 2
    assert received(m).sent_application_properties == {"attempt": 2}


def test_setting_properties_after_encoding_is_reflected() -> None:
    m = ServiceBusMessage("x", application_properties={"a": 1})
    m.encoded()
    m.application_properties = {"a": 2}
    m.subject = "s"
    m.message_id = "id-2"
    r = received(m)
    assert (r.sent_application_properties, r.subject, r.message_id) == ({"a": 2}, "s", "id-2")


def test_a_generated_id_message_is_stored_as_the_json_header_says() -> None:
    m = ServiceBusMessage(b"BODY")
    assert m.encoded() == codec.encode({"id": m.message_id}, b"BODY")  # encode_generated_id's shortcut
    assert codec.header_of(m.encoded()) == {"id": m.message_id}


@pytest.mark.parametrize(
    ("name", "value", "key", "stored"),
    [
        ("subject", "s", "sj", "s"),
        ("message_id", "mine", "id", "mine"),
        ("time_to_live", timedelta(seconds=5), "ttl", 5000),
        ("application_properties", {"a": 1}, "ap", {"a": 1}),
    ],
)
def test_a_generated_id_message_changed_before_or_after_encoding_stores_the_change(
    name: str, value: Any, key: str, stored: Any
) -> None:
    for encode_first in (False, True):
        m = ServiceBusMessage(b"BODY")
        if encode_first:
            m.encoded()
        setattr(m, name, value)
        header = codec.header_of(m.encoded())
        assert header[key] == stored
        assert header["id"] == m.message_id


def test_codec_generated_id_shortcut_matches_the_json_encoder() -> None:
    for mid in (os.urandom(16).hex(), "0" * 32, "short", "x" * 33):
        assert codec.encode_generated_id(mid, b"B") == codec.encode({"id": mid}, b"B")


# ------------------------------------------------------------------------- codec round trips
prop_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(),
    st.binary(),
    st.datetimes(timezones=st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=30))])),
    st.timedeltas(min_value=-timedelta(days=10675199), max_value=timedelta(days=10675199)),  # .NET TimeSpan
    st.uuids(),
)


def expected_value(v: Any) -> Any:
    """The value a receiver sees for property value `v` (bytes-likes as bytes, times to the ms in UTC)."""
    if isinstance(v, datetime):
        aware = v if v.tzinfo is not None else v.replace(tzinfo=UTC)
        return aware.astimezone(UTC)
    return v


def same_value(got: Any, sent: Any) -> bool:
    want = expected_value(sent)
    if isinstance(want, datetime):
        return isinstance(got, datetime) and got.tzinfo is not None and abs(got - want) < timedelta(milliseconds=1)
    if isinstance(want, timedelta):
        return isinstance(got, timedelta) and abs(got - want) < timedelta(milliseconds=1)
    if isinstance(want, float) and math.isnan(want):
        return isinstance(got, float) and math.isnan(got)
    return type(got) is type(want) and got == want


@settings(max_examples=300, deadline=None)
@given(body=st.one_of(st.binary(max_size=2000), st.text(max_size=500)), props=st.dictionaries(st.text(), prop_values))
def test_blob_round_trips_body_and_properties(body: bytes | str, props: dict[str, Any]) -> None:
    m = ServiceBusMessage(body, application_properties=props or None, subject="s", correlation_id="c")
    blob = m.encoded()
    raw_body = body.encode() if isinstance(body, str) else body
    assert codec.body_of(blob) == raw_body
    header = codec.header_of(blob)
    assert header[codec.FIELDS["message_id"]] == m.message_id
    assert header[codec.FIELDS["subject"]] == "s"
    assert header[codec.FIELDS["correlation_id"]] == "c"
    if props:
        assert codec.decode_properties(header["ap"]).keys() == props.keys()

    r = received(m)
    assert r.body_bytes == raw_body
    assert str(r) == raw_body.decode("utf-8", "replace")
    assert (r.message_id, r.subject, r.correlation_id) == (m.message_id, "s", "c")
    got = r.sent_application_properties
    if not props:
        assert got is None
        return
    assert got is not None and got.keys() == props.keys()
    for k, v in props.items():
        assert same_value(got[k], v), (k, v, got[k])


@given(st.dictionaries(st.binary(max_size=10).filter(lambda b: b.isascii()), st.binary()))
def test_bytes_keys_and_bytes_likes(props: dict[bytes, bytes]) -> None:
    m = ServiceBusMessage("x", application_properties={**props, "ba": bytearray(b"\x00\x01"), "mv": memoryview(b"z")})
    got = received(m).sent_application_properties
    assert got is not None
    assert got["ba"] == b"\x00\x01" and got["mv"] == b"z"
    for k, v in props.items():
        assert got[k.decode()] == v


def test_special_floats_and_big_ints_round_trip() -> None:
    m = ServiceBusMessage("x", application_properties={"nan": float("nan"), "inf": float("-inf"), "big": 2**63 - 1})
    got = received(m).sent_application_properties
    assert got is not None
    assert math.isnan(got["nan"]) and got["inf"] == float("-inf") and got["big"] == 2**63 - 1


def test_strings_that_look_like_tags_stay_strings() -> None:
    props = {"b": "$b", "dt": "$dt", "u": '{"$u": "x"}'}
    assert received(ServiceBusMessage("x", application_properties=props)).sent_application_properties == props


def test_timedelta_max_round_trips() -> None:
    got = received(ServiceBusMessage("x", application_properties={"t": timedelta.max})).application_properties
    assert got is not None and abs(got["t"] - timedelta.max) < timedelta(milliseconds=1)


def test_codec_rejects_foreign_blobs() -> None:
    for blob in (b"", b"\x02\x00\x00\x00\x00", b"\x01\x00", b"plain text"):
        with pytest.raises(ValueError):
            codec.body_of(blob)


def test_codec_layout() -> None:
    blob = codec.encode({"id": "m"}, b"BODY")
    assert blob[:1] == codec.VERSION
    n = int.from_bytes(blob[1:5], "big")
    assert blob[5 : 5 + n] == b"{" + b" " * (ord("m") & 15) + b'"id":"m"}'
    assert blob[5 + n :] == b"BODY"


def lua51_hash(s: bytes) -> int:
    """Lua 5.1's string hash (lstring.c luaS_newlstr), which Redis's scripts intern strings by."""
    h, step, n = len(s), (len(s) >> 5) + 1, len(s)
    while n >= step:
        h ^= ((h << 5) + (h >> 2) + s[n - 1]) & 0xFFFFFFFF
        n -= step
    return h


def test_messages_with_one_body_spread_over_lua_string_hashes() -> None:
    body = os.urandom(1024)
    generated = [ServiceBusMessage(body).encoded() for _ in range(100)]
    chosen = [ServiceBusMessage(body, message_id=f"order-{i}", subject="s").encoded() for i in range(100)]
    for blobs in (generated, chosen):
        assert len({lua51_hash(b) for b in blobs}) >= 10
        assert all(codec.body_of(b) == body for b in blobs)
    # what the spaces avoid: 100 messages with one body and their own ids, headers unpadded
    unpadded = [b"\x01\x00\x00\x00\x29" + b'{"id":"%s"}' % os.urandom(16).hex().encode() + body for _ in range(100)]
    assert len({lua51_hash(b) for b in unpadded}) == 1


# ----------------------------------------------------------------------------------- batches
def test_batch_add_until_full() -> None:
    one = ServiceBusMessage("x" * 100)
    size = len(one.encoded())
    batch = ServiceBusMessageBatch(max_size_in_bytes=size * 3)
    for _ in range(3):
        batch.add_message(ServiceBusMessage("x" * 100, message_id=one.message_id))
    assert len(batch) == batch.message_count == 3
    assert batch.size_in_bytes == 3 * size
    with pytest.raises(MessageSizeExceededError) as ei:
        batch.add_message(ServiceBusMessage("y"))
    assert isinstance(ei.value, ValueError)
    assert len(batch) == 3 and batch.size_in_bytes == 3 * size  # the failed add changed nothing
    assert [m.message_id for m in batch] == [one.message_id] * 3


def test_batch_rejects_a_single_message_over_its_size() -> None:
    batch = ServiceBusMessageBatch(max_size_in_bytes=100)
    with pytest.raises(MessageSizeExceededError):
        batch.add_message(ServiceBusMessage(b"z" * 100))
    assert len(batch) == 0


def test_batch_rejects_non_messages() -> None:
    batch = ServiceBusMessageBatch(1000)
    for bad in ("text", b"bytes", None, [ServiceBusMessage("x")]):
        with pytest.raises(InvalidArgumentError):
            batch.add_message(bad)  # type: ignore[arg-type]


@given(st.lists(st.binary(max_size=300), max_size=30), st.integers(min_value=50, max_value=3000))
def test_batch_size_never_exceeds_its_limit(bodies: list[bytes], limit: int) -> None:
    batch = ServiceBusMessageBatch(limit)
    accepted = 0
    for b in bodies:
        m = ServiceBusMessage(b)
        fits = batch.size_in_bytes + len(m.encoded()) <= limit
        if fits:
            batch.add_message(m)
            accepted += 1
        else:
            with pytest.raises(MessageSizeExceededError):
                batch.add_message(m)
        assert batch.size_in_bytes <= limit
    assert len(batch) == accepted
    assert batch.size_in_bytes == sum(len(m.encoded()) for m in batch)


def test_time_to_live_of_a_century_or_more_never_expires() -> None:
    # an expiry past 1e14 ms would print in exponent form in the scripts and break the stored
    # times, so a century or more means "never"
    m = ServiceBusMessage("x", time_to_live=timedelta(days=36500))
    assert m.time_to_live is None and m.ttl_ms == 0
    assert ServiceBusMessage("x", time_to_live=timedelta(days=36499)).ttl_ms == 36499 * 86_400_000


def test_schedule_times_after_the_year_2999_are_refused() -> None:
    m = ServiceBusMessage("x")
    with pytest.raises(InvalidArgumentError):
        m.scheduled_enqueue_time_utc = datetime(3000, 1, 1, tzinfo=UTC)
    m.scheduled_enqueue_time_utc = datetime(2999, 12, 31, tzinfo=UTC)
    assert m.scheduled_enqueue_time_utc == datetime(2999, 12, 31, tzinfo=UTC)


# ------------------------------------------------------------------ the SDK's received shapes
def test_received_application_properties_are_bytes_as_the_sdks() -> None:
    r = received(ServiceBusMessage("x", application_properties={"Color": "red", "n": 3}))
    assert r.application_properties == {b"Color": b"red", b"n": 3}
    assert r.application_properties[b"Color"] == b"red"
    assert r.application_properties["Color"] == b"red" and "Color" in r.application_properties
    assert r.sent_application_properties == {"Color": "red", "n": 3}


def test_a_dead_lettered_messages_properties_carry_its_reason() -> None:
    m = ServiceBusMessage("x", application_properties={"k": "v"})
    r = received(m, group="d", dead_letter_reason="bad", dead_letter_error_description="why")
    assert r.application_properties == {b"k": b"v", b"DeadLetterReason": b"bad", b"DeadLetterErrorDescription": b"why"}
    assert r.sent_application_properties == {"k": "v"}
    resent = r.copy_for_resend()
    assert resent.application_properties == {"k": "v"}


def test_a_changed_received_message_is_sent_with_its_properties_as_sent() -> None:
    r = received(ServiceBusMessage("x", application_properties={"k": "v"}), dead_letter_reason="bad")
    r.subject = "again"
    assert codec.decode_properties(codec.header_of(r.encoded())["ap"]) == {"k": "v"}


def test_via_partition_key_is_kept() -> None:
    m = ServiceBusMessage("x", via_partition_key="v")
    assert m.via_partition_key == "v"
    m.via_partition_key = None
    assert m.via_partition_key is None
    assert received(m).via_partition_key is None


def test_session_id_after_a_different_partition_key_is_accepted_as_the_sdk_does() -> None:
    m = ServiceBusMessage("x")
    m.partition_key = "pkey"
    m.session_id = "s"
    assert (m.session_id, m.partition_key) == ("s", "s")  # the session decides the partition
    with pytest.raises(ValueError):
        m.partition_key = "pkey"
