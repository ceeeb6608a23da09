"""Hostile input: fuzzed bodies, properties, names, counts and settlement handles through the
public API; fuzzed arguments straight into the Lua scripts (EVALSHA, bypassing the client's
checks); keys of the wrong Redis type planted where sbredis expects its own. Every case ends in a
typed ServiceBusError (or is handled correctly), and a dump of every key outside the target
partition is the same before and after.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis._core import scripts
from sbredis._core.errors import map_error
from sbredis._core.keys import partition_keys
from sbredis.exceptions import (
    InvalidArgumentError,
    MessageLockLostError,
    ServiceBusError,
)
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer
from tests.reliability import solo

# this module's own redis-server and clients (tests/reliability/solo.py)
client, server = solo.client, solo.server

pytestmark = [pytest.mark.integration, pytest.mark.reliability]

TARGET, BYSTANDER = "target", "bystander"
HOSTILE = [
    "'); redis.call('FLUSHALL') --",
    "]] redis.call('FLUSHALL') --[[",
    "\r\n*1\r\n$8\r\nFLUSHALL\r\n",
    "{sb:bystander:0}:log",
    "sb:entities",
    "%s%n%x",
    "\x00\xff",
    "a" * 70_000,
    "-1",
    "1e309",
    "nan",
    "99999999999999999999999",
]
hostile_text = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=300))
ACCEPTED_IDS: set[str] = set()  # ids of the messages TARGET accepted so far in this module
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


def dump_outside(raw: redis.Redis, prefix: str) -> dict[bytes, bytes | None]:
    """DUMP of every key that is not under `prefix` (a SCAN over everything: fine in a test)."""
    return {k: raw.dump(k) for k in raw.scan_iter(count=1000) if not k.startswith(prefix.encode())}


@pytest.fixture(scope="module", autouse=True)
def entities(server: RedisServer) -> None:
    """The target queue, and a bystander queue with messages and locks that must stay as they are."""
    with ServiceBusAdministrationClient.from_connection_string(server.url) as admin:
        admin.create_queue(TARGET, max_message_size_in_kilobytes=64, requires_duplicate_detection=True)
        admin.create_queue(BYSTANDER, enable_partitioning=True, partition_count=2)
    with ServiceBusClient.from_connection_string(server.url) as c:
        c.get_queue_sender(BYSTANDER).send_messages([ServiceBusMessage(f"b{i}") for i in range(10)])
        with c.get_queue_receiver(BYSTANDER) as r:
            r.receive_messages(3, max_wait_time=2)  # some bystander locks to keep


@pytest.fixture()
def guard(server: RedisServer) -> Iterator[redis.Redis]:
    """The keyspace outside the target partition must be the same after the test."""
    raw = redis.Redis.from_url(server.url)
    before = dump_outside(raw, "{sb:target:")
    yield raw
    assert dump_outside(raw, "{sb:target:") == before, "a key outside the target changed"


def typed(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Run fn; any exception must be a ServiceBusError (returned), never a raw one."""
    try:
        return fn(*args, **kwargs)
    except ServiceBusError as e:
        return e


@given(
    body=st.one_of(st.binary(max_size=2000), hostile_text, st.integers(), st.none(), st.lists(st.integers())),
    props=st.one_of(
        st.none(),
        st.dictionaries(hostile_text, st.one_of(hostile_text, st.integers(), st.floats(), st.binary())),
        st.lists(st.integers()),
    ),
    message_id=st.one_of(st.none(), hostile_text, st.integers()),
    subject=st.one_of(st.none(), hostile_text),
    ttl=st.one_of(st.none(), st.integers(-10, 10**12), st.floats(allow_nan=True)),
)
@FUZZ
def test_fuzzed_messages_get_a_typed_error_or_are_stored_intact(
    client: ServiceBusClient, guard: redis.Redis, body: Any, props: Any, message_id: Any, subject: Any, ttl: Any
) -> None:
    def build() -> ServiceBusMessage:
        m = ServiceBusMessage(body, application_properties=props, message_id=message_id, subject=subject)
        if ttl is not None:
            m.time_to_live = ttl
        return m

    msg = typed(build)
    if isinstance(msg, ServiceBusError):
        return
    sent = typed(client.get_queue_sender(TARGET).send_messages, msg)
    if isinstance(sent, ServiceBusError):
        return
    # the send returned: the message is stored, unless its id repeats an earlier one (TARGET detects
    # duplicates) or its time to live may have run out before the receive below
    duplicate = msg.message_id in ACCEPTED_IDS
    ACCEPTED_IDS.add(msg.message_id)
    short_lived = msg.time_to_live is not None and msg.time_to_live < timedelta(seconds=10)
    with client.get_queue_receiver(TARGET) as r:
        got = r.receive_messages(1, max_wait_time=0.5 if duplicate or short_lived else 5)
        if duplicate:
            assert got == [], "a repeated message id was stored twice"
        elif not short_lived:
            assert got, "send_messages returned but the message was never stored"
        if got:
            assert got[0].message_id == msg.message_id
            assert got[0].body_bytes == msg.body_bytes
            assert _nan_equal(got[0].sent_application_properties or {}, msg.sent_application_properties or {})
            r.complete_message(got[0])


@given(name=hostile_text, count=st.one_of(st.integers(), st.floats(), st.text(max_size=5), st.booleans()))
@FUZZ
def test_fuzzed_names_and_counts(client: ServiceBusClient, guard: redis.Redis, name: str, count: Any) -> None:
    sent = typed(lambda: client.get_queue_sender(name).send_messages(ServiceBusMessage("x")))
    assert isinstance(sent, ServiceBusError) or name == TARGET
    with client.get_queue_receiver(TARGET) as r:
        out = typed(r.receive_messages, count, wait=False)
        assert isinstance(out, (list, InvalidArgumentError)), out
        assert isinstance(typed(r.peek_messages, count), (list, InvalidArgumentError))
        assert isinstance(typed(r.receive_deferred_messages, count), ServiceBusError)


def test_lock_tokens_of_other_messages_are_refused(client: ServiceBusClient, guard: redis.Redis) -> None:
    client.get_queue_sender(TARGET).send_messages([ServiceBusMessage("one"), ServiceBusMessage("two")])
    with client.get_queue_receiver(TARGET, max_wait_time=2) as r:
        a, b = r.receive_messages(2)
        forged = copy.copy(a)
        forged.lock_ref = a.lock_ref._replace(nonce="00" * 8)  # a guessed token
        swapped = copy.copy(a)
        swapped.local_seq = b.local_seq + 1000  # a's token on a message that does not exist
        for m in (forged, swapped):
            for op in (r.complete_message, r.abandon_message, r.defer_message, r.renew_message_lock):
                with pytest.raises(MessageLockLostError):
                    op(m)
        r.complete_messages([a, b])


ARG = st.one_of(
    hostile_text,
    st.integers(-(2**63), 2**63),
    st.sampled_from([0, 1, 2, 17, 1000, 10**6, -1]),
    st.binary(max_size=100),
)


@given(name=st.sampled_from(scripts.SCRIPT_NAMES), args=st.lists(ARG, max_size=12))
@FUZZ
def test_fuzzed_script_arguments_touch_nothing_outside_the_partition(
    client: ServiceBusClient, guard: redis.Redis, name: str, args: list[Any]
) -> None:
    """Script calls with arbitrary ARGV (the client never sends these): an error reply or a
    result, mapped to ServiceBusError at the boundary; other partitions and entities untouched."""
    script = scripts.load(name)
    keys = partition_keys(TARGET, 0)
    args = [*args, ""]  # the caller's entity generation, last: '' is not checked, so the fuzz reaches the script
    try:
        guard.evalsha(script.sha, len(keys), *keys, *args)
    except redis.exceptions.NoScriptError:
        guard.script_load(script.source)
        try:
            guard.evalsha(script.sha, len(keys), *keys, *args)
        except redis.exceptions.RedisError as e:
            assert isinstance(map_error(e, TARGET), ServiceBusError)
    except redis.exceptions.RedisError as e:
        assert isinstance(map_error(e, TARGET), ServiceBusError)
    assert guard.ping()


@pytest.mark.parametrize("name", ["complete", "abandon", "defer", "dead_letter", "renew"])
@pytest.mark.parametrize(
    "args",
    [["m", "inf", "n"], ["m", "1e308", ""], ["m", "-1", "n"], ["m", "1.5", "n", "1"], ["m", "1000000", "", "1", "n"]],
    ids=["inf", "huge-pairs", "negative", "fraction", "more-than-given"],
)
def test_a_settlement_count_that_is_not_a_count_is_refused_at_once(
    server: RedisServer, guard: redis.Redis, name: str, args: list[str]
) -> None:
    """A settlement script loops over the n messages ARGV[2] names: an n of 'inf', or more than
    ARGV holds, looped until Redis answered BUSY to every other client. It is now refused before
    anything is read (a socket timeout turns a hang into a failure here)."""
    script = scripts.load(name)
    keys = partition_keys(TARGET, 0)
    quick = redis.Redis.from_url(server.url, socket_timeout=10)
    quick.script_load(script.source)
    try:
        with pytest.raises(redis.exceptions.ResponseError) as caught:
            quick.evalsha(script.sha, len(keys), *keys, *args, "")
    except redis.exceptions.TimeoutError:
        guard.script_kill()
        raise
    assert "SBERR INVALID" in str(caught.value)
    assert isinstance(map_error(caught.value, TARGET), ServiceBusError)


@pytest.mark.parametrize("planted", ["ready", "log", "lk", "st", "cfg"])
def test_wrong_type_keys_give_a_typed_error(server: RedisServer, client: ServiceBusClient, planted: str) -> None:
    raw = redis.Redis.from_url(server.url)
    with ServiceBusAdministrationClient.from_connection_string(server.url) as admin:
        admin.create_queue("planted", lock_duration=timedelta(seconds=30))
        try:
            client.get_queue_sender("planted").send_messages(ServiceBusMessage("before"))
            key = dict(zip(("cfg", "st", "log", "ready", "locked", "lk"), partition_keys("planted", 0), strict=False))[
                planted
            ]
            raw.delete(key)
            raw.set(key, "not what sbredis wrote")
            before = dump_outside(raw, "{sb:planted:")
            outcomes = [
                typed(client.get_queue_sender("planted").send_messages, ServiceBusMessage("x")),
                typed(client.get_queue_receiver("planted").receive_messages, 1, wait=False),
                typed(admin.get_queue_runtime_properties, "planted"),
            ]
            assert any(isinstance(o, ServiceBusError) for o in outcomes), outcomes
            for o in outcomes:
                assert not isinstance(o, BaseException) or isinstance(o, ServiceBusError)
            assert dump_outside(raw, "{sb:planted:") == before
        finally:
            admin.delete_queue("planted")


def test_wrong_type_registry_gives_a_typed_error(server: RedisServer) -> None:
    raw = redis.Redis.from_url(server.url)
    saved = raw.dump("sb:entities")
    raw.delete("sb:entities")
    raw.set("sb:entities", "planted")
    try:
        with ServiceBusClient.from_connection_string(server.url) as c, pytest.raises(ServiceBusError):
            c.get_queue_sender(TARGET).send_messages(ServiceBusMessage("x"))
        with ServiceBusAdministrationClient.from_connection_string(server.url) as admin, pytest.raises(ServiceBusError):
            admin.create_queue("another")
        assert raw.get("sb:entities") == b"planted"
    finally:
        raw.delete("sb:entities")
        raw.restore("sb:entities", 0, saved)


def _nan_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Property maps equal, a NaN equal to a NaN (a NaN that went through Redis is another object)."""

    def key(v: Any) -> Any:
        return "NaN" if isinstance(v, float) and math.isnan(v) else v

    return {k: key(v) for k, v in a.items()} == {k: key(v) for k, v in b.items()}
