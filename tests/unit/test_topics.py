"""Topics, subscriptions, rules and forwarding without a server: validation, key layout, publish
planning and the parsing of script replies."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from redis.crc import key_slot

from sbredis import ServiceBusMessage
from sbredis._core import codec, fanout, keys, topic_entity
from sbredis._core.entity import MIN_IDLE_ENV, build_queue, min_auto_delete_on_idle
from sbredis._core.protocol import forward_out
from sbredis._core.rules import RuleSyntaxError, SqlRuleAction, SqlRuleFilter
from sbredis.exceptions import InvalidArgumentError, InvalidOperationError, MessageSizeExceededError


def test_subscription_keys_share_the_topic_partition_slot_and_shape() -> None:
    topic = keys.partition_keys("orders", 3)
    sub = keys.subscription_keys("orders", "audit", 3)
    transfer = keys.transfer_keys(sub)
    assert len(sub) == len(transfer) == keys.NUM_PARTITION_KEYS
    assert len({key_slot(k.encode()) for k in (*topic, *sub, *transfer)}) == 1
    assert sub[0] == "{sb:orders:3}:s:audit:cfg" and transfer[4] == "{sb:orders:3}:s:audit:x:locked"
    assert keys.entity_keys("orders/Subscriptions/audit", 3) == sub
    assert keys.entity_keys("orders/Subscriptions/audit/$Transfer", 3) == transfer
    assert keys.entity_keys("orders", 3) == topic
    assert keys.entity_keys("q/$Transfer", 0) == keys.transfer_keys(keys.partition_keys("q", 0))
    assert set(sub).isdisjoint(keys.subscription_keys("orders", "audit2", 3))


@pytest.mark.parametrize("name", ["a", "sub-1", "a.b_c", "x" * 50])
def test_good_subscription_names(name: str) -> None:
    assert topic_entity.check_subscription_name(name) == name


@pytest.mark.parametrize("name", ["", "a/b", "x" * 51, "-a", "a:b", "a$", 7])
def test_bad_subscription_names(name: Any) -> None:
    with pytest.raises(InvalidArgumentError):
        topic_entity.check_subscription_name(name)


@pytest.mark.parametrize("name", ["a/Subscriptions/b", "a/subscriptions/b/c"])
def test_queue_and_topic_names_cannot_look_like_subscription_paths(name: str) -> None:
    with pytest.raises(InvalidArgumentError):
        build_queue(name)
    with pytest.raises(InvalidArgumentError):
        topic_entity.build_topic(name)


def test_topic_defaults_and_validation() -> None:
    t = topic_entity.build_topic("t")
    assert t.partition_count == 1 and not t.requires_duplicate_detection
    assert topic_entity.build_topic("t", enable_partitioning=True).partition_count == 16
    with pytest.raises(InvalidArgumentError):
        topic_entity.build_topic("t", status="ReceiveDisabled")
    with pytest.raises(InvalidArgumentError):
        topic_entity.build_topic("t", lock_duration=timedelta(seconds=1))  # not a topic property
    with pytest.raises(InvalidOperationError):
        topic_entity.build_topic("t", partition_count=4)


def test_subscription_defaults_and_validation() -> None:
    s = topic_entity.build_subscription("t", "s")
    assert s.dead_lettering_on_filter_evaluation_exceptions is True and s.max_delivery_count == 10
    with pytest.raises(InvalidOperationError):
        topic_entity.build_subscription("t", "s", forward_to="t/Subscriptions/s")
    with pytest.raises(InvalidArgumentError):
        topic_entity.build_subscription("t", "s", forward_to="x/Subscriptions/y")
    assert topic_entity.build_subscription("t", "s", forward_to="q").forward_to == "q"
    s = topic_entity.build_subscription("t", "s", requires_session=True, forward_to="q")  # sessions forward too
    assert s.requires_session and s.forward_to == "q"


BUILDERS = {
    "queue": lambda **kw: build_queue("e", **kw),
    "topic": lambda **kw: topic_entity.build_topic("e", **kw),
    "subscription": lambda **kw: topic_entity.build_subscription("t", "e", **kw),
}


@pytest.mark.parametrize("what", sorted(BUILDERS))
def test_queues_topics_and_subscriptions_refuse_alike(what: str) -> None:
    build = BUILDERS[what]
    with pytest.raises(InvalidArgumentError, match=rf"^unknown {what} properties: bogus, zap"):
        build(zap=1, bogus=2)
    with pytest.raises(InvalidArgumentError, match=r"^enable_batched_operations must be a bool, not int"):
        build(enable_batched_operations=1)
    with pytest.raises(InvalidArgumentError, match=r"^unknown status 'Sleeping'"):
        build(status="Sleeping")
    assert build(status="Disabled").status == "Disabled"
    if what == "subscription":
        return  # a subscription is partitioned as its topic
    assert build(enable_partitioning=True, partition_count=None).partition_count == 16
    assert build(enable_partitioning=True, partition_count=3).partition_count == 3
    with pytest.raises(InvalidOperationError, match=r"^partition_count needs enable_partitioning=True"):
        build(partition_count=2)
    with pytest.raises(InvalidArgumentError, match=r"^partition_count must be"):
        build(enable_partitioning=True, partition_count=10_000)


def test_auto_delete_minimum_and_the_test_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(MIN_IDLE_ENV, raising=False)
    assert min_auto_delete_on_idle() == timedelta(minutes=5)
    with pytest.raises(InvalidArgumentError):
        build_queue("q", auto_delete_on_idle=timedelta(minutes=1))
    assert build_queue("q", auto_delete_on_idle=timedelta(minutes=5)).auto_delete_on_idle == timedelta(minutes=5)
    monkeypatch.setenv(MIN_IDLE_ENV, "2")
    assert build_queue("q", auto_delete_on_idle=3).auto_delete_on_idle == timedelta(seconds=3)
    with pytest.raises(InvalidArgumentError):
        topic_entity.build_subscription("t", "s", auto_delete_on_idle=1)
    monkeypatch.setenv(MIN_IDLE_ENV, "soon")
    with pytest.raises(InvalidArgumentError):
        build_queue("q", auto_delete_on_idle=3)


def test_rules_compile_at_creation() -> None:
    rule, program, action = topic_entity.build_rule("r", SqlRuleFilter("a = 1"), SqlRuleAction("SET b = 2"))
    assert program.startswith("[1,") and action is not None and action.startswith("[1,")
    _, program, action = topic_entity.build_rule("$Default")
    assert program == "[1,true]" and action is None
    with pytest.raises(RuleSyntaxError):
        topic_entity.build_rule("r", SqlRuleFilter("a = = 1"))
    with pytest.raises(InvalidArgumentError):
        topic_entity.build_rule("r", "a = 1")
    with pytest.raises(InvalidArgumentError):
        topic_entity.build_rule("bad/name")
    record = topic_entity.rule_record(rule, 1000)
    back = topic_entity.rule_from_record(record)
    assert back.name == "r" and back.filter == rule.filter and back.action == rule.action


def test_subscription_commands_announce_it_in_every_topic_partition() -> None:
    t = topic_entity.build_topic("t", enable_partitioning=True, partition_count=2)
    s = topic_entity.build_subscription("t", "s", forward_to="q")
    cmds = topic_entity.subscription_set_commands(t, s, 1000)
    for p in range(2):
        cfg = keys.partition_keys("t", p)[0]
        assert ("HSET", cfg, "sub:s", 1) in cmds and ("HINCRBY", cfg, "subv", 1) in cmds
        sub_cfg = [c for c in cmds if c[1] == keys.subscription_keys("t", "s", p)[0]]
        assert sub_cfg and "fwd" in sub_cfg[0] and "q" in sub_cfg[0] and "dlf" in sub_cfg[0]
    assert ("ZREM", keys.IDLE, "t/Subscriptions/s") in cmds


def test_plan_publish_groups_by_partition_with_the_cached_subscription_set() -> None:
    meta = fanout.TopicMeta("t", 4, False, 1024, "topic")
    meta.subs[1] = fanout.TopicSubs("7", ("a", "b"), ("b",))
    msgs = [ServiceBusMessage(str(i), partition_key=f"k{i}") for i in range(8)]
    calls, where = fanout.plan_publish(msgs, meta, 0)
    assert sorted({c.partition for c in calls}) == sorted(set(where))
    for c in calls:
        k = int(c.args[1])
        assert len(c.keys) == keys.NUM_PARTITION_KEYS + 1 + len(keys.FAN_KEY_NAMES) * k  # + the journal
        if c.partition == 1:
            assert c.args[:4] == ("7", 2, "a", "b")
        else:
            assert c.args[:2] == ("-1", 0)
        n = c.args[3 + k]
        assert len(c.args) == 4 + k + 7 * n
    with pytest.raises(MessageSizeExceededError):
        fanout.plan_publish([ServiceBusMessage(b"x" * 2000)], meta, 0)


def test_stale_reply_rebuilds_the_call() -> None:
    call = fanout.publish_call("t", 2, fanout.TopicSubs(), "", [""] * 6 + [b"blob"])
    subs = fanout.stale_subs([-1, b"3", b"b", b"0", b"a", b"1"])
    assert subs == fanout.TopicSubs("3", ("a", "b"), ("a",))
    again = fanout.rebuild(call, "t", subs)
    assert again.args[:4] == ("3", 2, "a", "b") and again.args[4:] == call.args[2:]
    n, f = keys.NUM_PARTITION_KEYS + 1, len(keys.FAN_KEY_NAMES)  # the partition's keys and its journal
    assert again.keys[n : n + f] == keys.subscription_fan_keys("t", "a", 2)
    assert fanout.stale_subs([1234, 5]) is None


def test_outbox_parsing_and_dead_letter_annotation() -> None:
    blob = ServiceBusMessage("body", message_id="m", application_properties={"x": 1}).encoded()
    reply = [10, b"inc", 0, b"3", b"q2", b"2", b"0", blob, b"bad", b"why"]
    inc, [e] = fanout.parse_outbox(reply)
    assert not forward_out.more(reply) and forward_out.more([10, b"inc", 1])
    assert inc == "inc" and (e.seq, e.destination, e.hop, e.expires_ms) == (3, "q2", 2, 0)
    out = fanout.delivered_blob(e, "q1")
    header = codec.header_of(out)
    assert header["dls"] == "q1" and header["ap"] == {
        "x": 1,
        "DeadLetterReason": "bad",
        "DeadLetterErrorDescription": "why",
    }
    assert codec.body_of(out) == b"body"
    meta = fanout.meta_from_record("q2", {"name": "q2", "partition_count": 4, "requires_duplicate_detection": True})
    args = fanout.delivery_args(e, out, meta)
    assert args[0] == "m" and args[3] == 3 and args[5] == 3  # message id for dedup, hop + 1, outbox seq
    assert fanout.destination_partition(out, meta) == fanout.partition_of("m", 4)
