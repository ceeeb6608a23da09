"""The transaction buffer (sans-IO): where each operation goes at commit, and the rules checked
when an operation is added (docs/transactions.md)."""

from __future__ import annotations

import pytest

from sbredis import ServiceBusMessage
from sbredis._core import fanout
from sbredis._core.keys import NUM_PARTITION_KEYS, partition_tag
from sbredis._core.ops import EntityMeta, partition_of
from sbredis._core.transaction import MAX_OPERATIONS, TxBuffer, joinable
from sbredis.exceptions import InvalidArgumentError, InvalidOperationError, MessageSizeExceededError

Q1 = EntityMeta("q1", 1, False, 1024)
Q4 = EntityMeta("q4", 4, False, 1024)
T2 = fanout.TopicMeta("t2", 2, False, 1024, "topic")


def test_the_first_queue_send_is_home_and_the_rest_goes_via_its_transfer_queue() -> None:
    tx = TxBuffer()
    tx.add_send(T2, [ServiceBusMessage("t", partition_key="k")])
    tx.add_send(Q4, [ServiceBusMessage("a", partition_key="k")])
    tx.add_send(Q1, [ServiceBusMessage("b")])
    tx.add_send(Q4, [ServiceBusMessage("c", session_id="k")])
    plan = tx.plan()
    assert plan is not None and plan.call is not None
    p = partition_of("k", 4)
    assert (plan.home, plan.partition, plan.transfers) == ("q4", p, ("t2", "q1"))
    assert plan.call.keys[0] == f"{partition_tag('q4', p)}:cfg"
    assert plan.call.keys[NUM_PARTITION_KEYS] == f"{partition_tag('q4', p)}:x:cfg"
    args = plan.call.args
    assert args[1:3] == (600_000, 0)  # marker time, no settlements
    assert args[3] == 2  # "a" and "c" stored in the home partition
    assert args[12] == 2 and args[13] == "t2" and args[15] == "q1"


def test_sends_to_one_topic_partition_only_are_one_publish() -> None:
    tx = TxBuffer()
    tx.add_send(T2, [ServiceBusMessage("a", partition_key="k"), ServiceBusMessage("b", partition_key="k")])
    plan = tx.plan()
    assert plan is not None and plan.call is None and plan.publish is not None
    assert plan.publish[0] is T2 and len(plan.publish[1]) == 2
    call = tx.publish_call(*plan.publish)
    assert call.script.name == "publish" and call.partition == partition_of("k", 2)
    tx.add_send(fanout.TopicMeta("t3", 1, False, 1024, "topic"), [ServiceBusMessage("c")])
    with pytest.raises(InvalidOperationError, match="several topics"):
        tx.plan()


def test_rules_are_checked_when_added_and_a_rejected_batch_adds_nothing() -> None:
    tx = TxBuffer()
    with pytest.raises(InvalidOperationError, match="partition key"):
        tx.add_send(Q4, [ServiceBusMessage("a")])
    with pytest.raises(InvalidOperationError, match="same partition key"):
        tx.add_send(Q4, [ServiceBusMessage("a", partition_key="x"), ServiceBusMessage("b", partition_key="y")])
    assert len(tx) == 0 and tx.key is None
    with pytest.raises(InvalidOperationError, match="two sessions"):
        tx.add_send(Q1, [ServiceBusMessage("a", session_id="s"), ServiceBusMessage("b", session_id="t")])
    assert tx.session is None
    with pytest.raises(MessageSizeExceededError):
        tx.add_send(Q1, [ServiceBusMessage(b"x" * 2000)])
    with pytest.raises(InvalidOperationError, match="queues and topics"):
        tx.add_send(EntityMeta("t/Subscriptions/s", 1, False, 1024, "subscription"), [ServiceBusMessage("a")])
    tx.add_send(Q1, [ServiceBusMessage(str(i)) for i in range(MAX_OPERATIONS)])
    with pytest.raises(InvalidOperationError, match="at most"):
        tx.add_send(Q1, [ServiceBusMessage("one more")])
    assert tx.plan() is not None and TxBuffer().plan() is None


def test_joinable_takes_only_transactions() -> None:
    with pytest.raises(InvalidArgumentError):
        joinable(object())
