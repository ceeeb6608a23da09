"""Every input error is an InvalidArgumentError raised before anything is written, through the
sync and the async API: text UTF-8 cannot carry (a lone surrogate), property keys that are not
UTF-8, and NaN, infinite, negative or out-of-range numbers in every duration, wait, timeout and
count keyword."""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
import redis

from sbredis import (
    NEXT_AVAILABLE_SESSION,
    SendAvailabilityPairedNamespaceOptions,
    ServiceBusMessage,
    ServiceBusReceiveMode,
)
from sbredis.exceptions import InvalidArgumentError, MessageSizeExceededError
from tests.redis_server import RedisServer

pytestmark = [pytest.mark.integration]
BOTH_APIS = pytest.mark.parametrize("api", ["sync", "async"], indirect=True)

LONE = "\ud800"  # a UTF-16 half: no UTF-8 form
STRING_FIELDS = (
    "subject",
    "message_id",
    "session_id",
    "partition_key",
    "content_type",
    "correlation_id",
    "to",
    "reply_to",
    "reply_to_session_id",
)
NOT_FINITE = (math.nan, math.inf, -math.inf)
BAD_SECONDS = (*NOT_FINITE, -1, -1e300)


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    yield srv
    srv.stop()


@pytest.fixture()
def env(server: RedisServer, sb_api: Any) -> Iterator[tuple[Any, Any, redis.Redis]]:
    raw = redis.Redis.from_url(server.url)
    raw.flushall()
    with (
        sb_api.ServiceBusAdministrationClient.from_connection_string(server.url) as admin,
        sb_api.ServiceBusClient.from_connection_string(server.url) as client,
    ):
        admin.create_queue("q")
        admin.create_queue("sq", requires_session=True)
        admin.create_topic("t")
        admin.create_subscription("t", "s")
        yield admin, client, raw


def dump(raw: redis.Redis) -> dict[bytes, Any]:
    """Every key's content (not DUMP's bytes: a hash's encoding may order its fields differently)."""
    read = {
        b"string": raw.get,
        b"hash": raw.hgetall,
        b"list": lambda k: raw.lrange(k, 0, -1),
        b"set": raw.smembers,
        b"zset": lambda k: raw.zrange(k, 0, -1, withscores=True),
        b"stream": lambda k: raw.xrange(k),
    }
    return {k: read[raw.type(k)](k) for k in raw.scan_iter(count=1000)}


def refused(raw: redis.Redis, call: Callable[[], Any], within: float = 10) -> InvalidArgumentError:
    """`call` raises InvalidArgumentError, promptly, and Redis holds exactly what it held before."""
    before = dump(raw)
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            outcome.append(None)
        except BaseException as e:
            outcome.append(e)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(within)
    assert outcome, f"the call did not return within {within} s"
    error = outcome[0]
    assert isinstance(error, InvalidArgumentError), repr(error)
    assert dump(raw) == before
    return error


# ------------------------------------------------------------------------------------ text
@BOTH_APIS
@pytest.mark.parametrize("field", ["body", *STRING_FIELDS])
def test_a_lone_surrogate_in_a_message_field(env: Any, field: str) -> None:
    _, client, raw = env
    text = f"a{LONE}b"
    refused(raw, lambda: ServiceBusMessage(text) if field == "body" else ServiceBusMessage("x", **{field: text}))
    m = ServiceBusMessage("x")
    if field != "body":
        refused(raw, lambda: setattr(m, field, text))
    client.get_queue_sender("q").send_messages(m)  # the message is as it was: it sends
    with client.get_queue_receiver("q", receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r:
        assert [str(got) for got in r.receive_messages(5, max_wait_time=2)] == ["x"]


@BOTH_APIS
@pytest.mark.parametrize(
    "props",
    [
        {LONE: 1},
        {"k": f"v{LONE}"},
        {b"\xff\xfe": 1},
        {"k": object()},
        {"k": datetime.max.replace(tzinfo=timezone(timedelta(hours=-1)))},
        {"k": datetime.min.replace(tzinfo=timezone(timedelta(hours=1)))},
    ],
    ids=["surrogate key", "surrogate value", "non-UTF-8 bytes key", "unsupported value", "after 9999", "before 1"],
)
@pytest.mark.parametrize("entity", ["q", "t"])
def test_bad_application_properties(env: Any, props: dict[Any, Any], entity: str) -> None:
    """Refused when set, and at send when put into the message's dict in place afterwards."""
    _, client, raw = env
    refused(raw, lambda: ServiceBusMessage("x", application_properties=props))
    sender = client.get_topic_sender(entity) if entity == "t" else client.get_queue_sender(entity)
    good, bad = ServiceBusMessage("good"), ServiceBusMessage("bad", application_properties={"ok": 1})
    assert bad.sent_application_properties is not None
    bad.sent_application_properties.update(props)
    refused(raw, lambda: sender.send_messages([good, bad]))
    refused(raw, lambda: sender.schedule_messages(bad, datetime.now(UTC) + timedelta(hours=1)))
    batch = sender.create_message_batch()
    refused(raw, lambda: batch.add_message(bad))


@BOTH_APIS
def test_lone_surrogates_in_session_ids_and_state(env: Any) -> None:
    _, client, raw = env
    refused(raw, lambda: client.get_queue_receiver("sq", session_id=LONE).receive_messages(1, wait=False))
    client.get_queue_sender("sq").send_messages(ServiceBusMessage("x", session_id="a"))
    with client.get_queue_receiver("sq", session_id="a") as r:
        refused(raw, lambda: r.session.set_state(f"state {LONE}"))


@BOTH_APIS
def test_a_session_state_over_the_size_limit_is_refused_before_it_is_sent(env: Any) -> None:
    """A 100 MiB state reached the script, which held Redis about 90 ms to refuse it; a limit
    raised since the receiver read it still lets a state up to the new limit through."""
    admin, client, raw = env
    admin.create_queue("small", requires_session=True, max_message_size_in_kilobytes=1)
    client.get_queue_sender("small").send_messages(ServiceBusMessage("x", session_id="a"))
    with client.get_queue_receiver("small", session_id="a") as r:
        r.session.set_state(b"s")
        sent = raw.info("stats")["total_net_input_bytes"]
        with pytest.raises(MessageSizeExceededError, match="8388608 bytes exceeds the maximum of 1024"):
            r.session.set_state(b"x" * (8 << 20))
        assert raw.info("stats")["total_net_input_bytes"] - sent < 64 * 1024  # not sent
        admin.update_queue(admin.get_queue("small"), max_message_size_in_kilobytes=2)
        r.session.set_state(b"y" * 2000)
        assert r.session.get_state() == b"y" * 2000


@BOTH_APIS
@pytest.mark.parametrize("reason", [f"a{LONE}", "r" * 4097, 12])
def test_dead_letter_reason_and_description(env: Any, reason: Any) -> None:
    """A lone surrogate reached Redis's encoder (an untyped "Redis error"); long text was stored
    and shown by every peek: now both are refused before the message is settled."""
    _, client, raw = env
    client.get_queue_sender("q").send_messages(ServiceBusMessage("x"))
    with client.get_queue_receiver("q") as r:
        (m,) = r.receive_messages(1, max_wait_time=5)
        refused(raw, lambda: r.dead_letter_message(m, reason=reason))
        refused(raw, lambda: r.dead_letter_message(m, error_description=reason))
        r.dead_letter_message(m, reason="r" * 4096, error_description="d" * 4096)
    with client.get_queue_receiver("q", sub_queue="deadletter") as d:
        (m,) = d.receive_messages(1, max_wait_time=5)
    assert (m.dead_letter_reason, m.dead_letter_error_description) == ("r" * 4096, "d" * 4096)


AMQP_CASES = [
    {"properties": {"subject": b"\xff"}},
    {"properties": {"message_id": b"\xff"}},
    {"properties": {"message_id": ""}},
    {"properties": {"message_id": "m" * 129}},
    {"properties": {"group_id": LONE}},
    {"properties": {"to": LONE}},
    {"annotations": {b"\xff": 1}},
    {"annotations": {"x-opt-partition-key": b"\xff"}},
    {"annotations": {"x-opt-scheduled-enqueue-time": 10**30}},
    {"annotations": {"x-opt-scheduled-enqueue-time": math.nan}},
    {"annotations": {"x-opt-scheduled-enqueue-time": -5}},
    {"annotations": {"x-opt-scheduled-enqueue-time": "soon"}},
]


@BOTH_APIS
@pytest.mark.parametrize("sections", AMQP_CASES, ids=range(len(AMQP_CASES)))
def test_amqp_message_sections(env: Any, sections: dict[str, Any]) -> None:
    """These raised UnicodeDecodeError or ValueError, or were stored: a scheduled time of 1e30 ms
    made every later receive of the queue fail on its sequence numbers."""
    from sbredis.amqp import AmqpAnnotatedMessage, AmqpMessageProperties

    _, client, raw = env
    kw = dict(sections)
    if "properties" in kw:
        kw["properties"] = AmqpMessageProperties(**kw["properties"])
    sender = client.get_queue_sender("q")
    refused(raw, lambda: sender.send_messages(AmqpAnnotatedMessage(data_body=b"x", **kw)))
    refused(raw, lambda: AmqpAnnotatedMessage(data_body=["x", LONE]))
    sender.send_messages(ServiceBusMessage("after"))
    with client.get_queue_receiver("q") as r:
        assert [str(m) for m in r.receive_messages(1, max_wait_time=5)] == ["after"]


@BOTH_APIS
def test_empty_message_id(env: Any) -> None:
    """An empty id was stored as is: duplicate detection cannot tell such messages apart."""
    refused(env[2], lambda: ServiceBusMessage("x", message_id=""))
    message = ServiceBusMessage("x")
    refused(env[2], lambda: setattr(message, "message_id", ""))


@BOTH_APIS
def test_many_sequence_numbers(env: Any) -> None:
    """Each partition's numbers are one atomic script call: a call with 100,000 of them ran over
    50 ms of server time (cap: 1,000 a call)."""
    _, client, raw = env
    many = list(range(1, 1002))
    refused(raw, lambda: client.get_queue_sender("q").cancel_scheduled_messages(many))
    refused(raw, lambda: client.get_topic_sender("t").cancel_scheduled_messages(many))
    with client.get_queue_receiver("q") as r:
        refused(raw, lambda: r.receive_deferred_messages(many))


@BOTH_APIS
@pytest.mark.parametrize("value", [f"a{LONE}", 12, b"bytes", "m" * 1025])
def test_user_metadata(env: Any, value: Any) -> None:
    admin, _, raw = env
    refused(raw, lambda: admin.create_queue("new", user_metadata=value))
    refused(raw, lambda: admin.update_queue(admin.get_queue("q"), user_metadata=value))
    refused(raw, lambda: admin.create_topic("new", user_metadata=value))
    refused(raw, lambda: admin.create_subscription("t", "new", user_metadata=value))


# ------------------------------------------------------------------------------- durations
QUEUE_DURATIONS = (
    "lock_duration",
    "default_message_time_to_live",
    "duplicate_detection_history_time_window",
    "auto_delete_on_idle",
)


@BOTH_APIS
@pytest.mark.parametrize("value", [1e300, 10**30, *BAD_SECONDS, timedelta(0), timedelta(days=-1)])
@pytest.mark.parametrize("name", QUEUE_DURATIONS)
def test_admin_durations(env: Any, name: str, value: Any) -> None:
    admin, _, raw = env
    refused(raw, lambda: admin.create_queue("new", **{name: value}))
    refused(raw, lambda: admin.update_queue(admin.get_queue("q"), **{name: value}))
    if name != "duplicate_detection_history_time_window":
        refused(raw, lambda: admin.create_subscription("t", "new", **{name: value}))
    if name != "lock_duration":
        refused(raw, lambda: admin.create_topic("new", **{name: value}))


@BOTH_APIS
def test_schedule_times_far_in_the_future(env: Any) -> None:
    _, client, raw = env
    sender = client.get_queue_sender("q")
    for when in (datetime.max, datetime.max.replace(tzinfo=UTC), datetime(3000, 1, 1, tzinfo=UTC)):
        refused(raw, lambda when=when: sender.schedule_messages(ServiceBusMessage("x"), when))
        refused(raw, lambda when=when: ServiceBusMessage("x", scheduled_enqueue_time_utc=when))


@BOTH_APIS
@pytest.mark.parametrize("value", [*NOT_FINITE, -1, 0])
def test_message_time_to_live(env: Any, value: float) -> None:
    refused(env[2], lambda: ServiceBusMessage("x", time_to_live=value))


# ------------------------------------------------------------------ waits, timeouts, counts
@BOTH_APIS
@pytest.mark.parametrize("wait", BAD_SECONDS)
def test_receive_waits_on_an_empty_queue(env: Any, wait: float) -> None:
    """A NaN wait compared false to every deadline: receive_messages never returned."""
    _, client, raw = env
    with client.get_queue_receiver("q") as r:
        refused(raw, lambda: r.receive_messages(1, max_wait_time=wait))
    refused(raw, lambda: client.get_queue_receiver("q", max_wait_time=wait))
    refused(raw, lambda: client.get_queue_receiver("sq", session_id=NEXT_AVAILABLE_SESSION, max_wait_time=wait))


@BOTH_APIS
@pytest.mark.parametrize("value", [*NOT_FINITE, -1, 0, 1.5, True, 10**9])
def test_counts(env: Any, value: Any) -> None:
    _, client, raw = env
    with client.get_queue_receiver("q") as r:
        refused(raw, lambda: r.receive_messages(value, wait=False))
        refused(raw, lambda: r.peek_messages(value))
    if value != 0:  # prefetch_count=0 turns prefetching off
        refused(raw, lambda: client.get_queue_receiver("q", prefetch_count=value))
    refused(raw, lambda: client.get_queue_sender("q", max_pending_sends=value))
    if value != 10**9:  # a batch over the entity's limit: MessageSizeExceededError (docs)
        refused(raw, lambda: client.get_queue_sender("q").create_message_batch(value))


@BOTH_APIS
@pytest.mark.parametrize("timeout", BAD_SECONDS)
def test_timeouts(env: Any, timeout: float) -> None:
    """Every method's timeout keyword, checked though each call is bounded by socket_timeout."""
    _, client, raw = env
    sender = client.get_queue_sender("q")
    topic = client.get_topic_sender("t")
    refused(raw, lambda: sender.send_messages(ServiceBusMessage("x"), timeout=timeout))
    refused(raw, lambda: topic.send_messages(ServiceBusMessage("x"), timeout=timeout))
    later = datetime.now(UTC) + timedelta(hours=1)
    refused(raw, lambda: sender.schedule_messages(ServiceBusMessage("x"), later, timeout=timeout))
    [seq] = sender.schedule_messages(ServiceBusMessage("x"), later)
    [topic_seq] = topic.schedule_messages(ServiceBusMessage("x"), later)
    refused(raw, lambda: sender.cancel_scheduled_messages(seq, timeout=timeout))
    refused(raw, lambda: topic.cancel_scheduled_messages(topic_seq, timeout=timeout))
    refused(raw, lambda: client.transaction(timeout=timeout))
    sender.send_messages(ServiceBusMessage("y"))
    with client.get_queue_receiver("q") as r:
        refused(raw, lambda: r.peek_messages(1, timeout=timeout))
        refused(raw, lambda: r.receive_deferred_messages(seq, timeout=timeout))
        [m] = r.receive_messages(1, max_wait_time=5)
        refused(raw, lambda: r.renew_message_lock(m, timeout=timeout))
        r.complete_message(m)
    client.get_queue_sender("sq").send_messages(ServiceBusMessage("x", session_id="a"))
    with client.get_queue_receiver("sq", session_id="a") as r:
        refused(raw, lambda: r.session.get_state(timeout=timeout))
        refused(raw, lambda: r.session.set_state(b"s", timeout=timeout))
        refused(raw, lambda: r.session.renew_lock(timeout=timeout))


@BOTH_APIS
@pytest.mark.parametrize("value", [*NOT_FINITE, -1, 0])
def test_lock_renewal_durations(env: Any, sb_api: Any, value: float) -> None:
    _, client, raw = env
    refused(raw, lambda: sb_api.AutoLockRenewer(max_lock_renewal_duration=value))
    client.get_queue_sender("q").send_messages(ServiceBusMessage("x"))
    renewer = sb_api.AutoLockRenewer()
    try:
        with client.get_queue_receiver("q") as r:
            [m] = r.receive_messages(1, max_wait_time=5)
            refused(raw, lambda: renewer.register(r, m, max_lock_renewal_duration=value))
            r.complete_message(m)
    finally:
        renewer.close()


@BOTH_APIS
@pytest.mark.parametrize(
    "options",
    [
        *({name: v} for name in ("retry_backoff_factor", "retry_backoff_max") for v in (*BAD_SECONDS, 1e300)),
        *({name: v} for name in ("socket_timeout", "socket_connect_timeout") for v in (*BAD_SECONDS, 0, 1e300)),
        *({"durability_timeout": v} for v in (*BAD_SECONDS, 1e300)),
        *({"reply_poll_time": v} for v in (*BAD_SECONDS, 0.0101, 1e300, "0")),
    ],
    ids=repr,
)
def test_client_options(server: RedisServer, sb_api: Any, options: dict[str, Any]) -> None:
    raw = redis.Redis.from_url(server.url)
    refused(raw, lambda: sb_api.ServiceBusClient.from_connection_string(server.url, **options))


@pytest.mark.parametrize("value", [*NOT_FINITE, -1, 1e300, 10**30])
@pytest.mark.parametrize("name", ["failover_interval", "ping_primary_interval", "syphon_poll_interval"])
def test_paired_namespace_intervals(server: RedisServer, name: str, value: Any) -> None:
    raw = redis.Redis.from_url(server.url)
    refused(raw, lambda: SendAvailabilityPairedNamespaceOptions(secondary=server.url, **{name: value}))
