"""kombu's queue management on sbredis:// against a real server: passive declare, purge, unbind,
delete (if empty, or gone already), a queue deleted by someone else while in use, and an ack or
reject that comes after the lock was lost."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("kombu")

import kombu
from kombu.exceptions import ChannelError

import sbredis
from tests.conftest import eventually
from tests.contrib.test_kombu_transport import publish, sb

pytestmark = pytest.mark.integration


@pytest.fixture()
def qname() -> str:
    return "kqm-" + uuid.uuid4().hex[:10]


@pytest.fixture()
def conn(url: str) -> Iterator[kombu.Connection]:
    c = kombu.Connection(sb(url))
    yield c
    c.release()


def test_passive_declare_reports_a_missing_queue_and_counts_an_existing_one(conn: kombu.Connection, qname: str) -> None:
    channel = conn.default_channel
    with pytest.raises(ChannelError, match=f"NOT_FOUND - no queue '{qname}'"):
        channel.queue_declare(qname, passive=True)
    q = kombu.Queue(qname, kombu.Exchange(qname, "direct"), routing_key=qname)
    for i in range(3):
        publish(conn, q, {"n": i})
    ok = channel.queue_declare(qname, passive=True)
    assert (ok.queue, ok.message_count) == (qname, 3)


def test_purge_removes_the_ready_messages_and_a_missing_queue_has_none(
    conn: kombu.Connection, admin: Any, qname: str
) -> None:
    q = kombu.Queue(qname, kombu.Exchange(qname, "direct"), routing_key=qname)
    for i in range(5):
        publish(conn, q, {"n": i})
    channel = conn.default_channel
    assert channel.queue_purge(qname) == 5
    assert admin.get_queue_runtime_properties(qname).active_message_count == 0
    assert channel.queue_purge("kqm-never-declared-" + uuid.uuid4().hex[:6]) == 0


def test_an_unbound_queue_gets_no_more_of_the_exchange_messages(conn: kombu.Connection, qname: str) -> None:
    exchange = kombu.Exchange(qname + "-x", "direct")
    q = kombu.Queue(qname, exchange, routing_key="orders")
    publish(conn, q, "before")
    channel = conn.default_channel
    channel.queue_unbind(qname, exchange.name, "orders")
    with conn.Producer() as p:
        p.publish("after", exchange=exchange, routing_key="orders")
    with conn.SimpleQueue(q) as sq:
        got = sq.get(timeout=2)
        assert got.payload == "before"
        got.ack()
        with pytest.raises(sq.Empty):
            sq.get(timeout=0.3)


def test_delete_if_empty_keeps_a_queue_with_messages_and_deleting_twice_is_fine(
    conn: kombu.Connection, admin: Any, qname: str
) -> None:
    q = kombu.Queue(qname, kombu.Exchange(qname, "direct"), routing_key=qname)
    publish(conn, q, "kept")
    channel = conn.default_channel
    channel.queue_delete(qname, if_empty=True)
    assert admin.get_queue_runtime_properties(qname).active_message_count == 1
    channel.queue_delete(qname)
    assert qname not in {x.name for x in admin.list_queues()}
    channel.queue_delete(qname)  # gone already
    channel.queue_delete(qname, if_empty=True)  # a queue that is not there is empty


def test_a_queue_deleted_by_someone_else_is_declared_again_by_the_next_publish(
    conn: kombu.Connection, admin: Any, qname: str
) -> None:
    q = kombu.Queue(qname, kombu.Exchange(qname, "direct"), routing_key=qname)
    publish(conn, q, "first")
    admin.delete_queue(qname)  # another process, or an operator
    with conn.Producer() as p:  # no declare: the transport finds the queue gone and makes it again
        p.publish("second", exchange=q.exchange, routing_key=qname)
    assert admin.get_queue_runtime_properties(qname).active_message_count == 1
    with conn.SimpleQueue(q) as sq:
        got = sq.get(timeout=2)
        assert got.payload == "second"
        got.ack()


def test_a_get_from_a_queue_deleted_meanwhile_finds_nothing(conn: kombu.Connection, admin: Any, qname: str) -> None:
    q = kombu.Queue(qname, kombu.Exchange(qname, "direct"), routing_key=qname)
    publish(conn, q, "one")
    channel = conn.default_channel
    first = channel.basic_get(qname)
    assert first is not None and first.payload == "one"
    first.ack()
    admin.delete_queue(qname)
    assert channel.basic_get(qname) is None


@pytest.mark.parametrize("settle", ["ack", "reject"])
def test_a_settlement_after_the_lock_was_lost_is_logged_and_the_message_comes_again(
    url: str, qname: str, settle: str, caplog: Any
) -> None:
    """Lock renewal stops after max_lock_renewal_duration: a consumer slower than that loses the
    lock, the message is delivered again (at least once), and the late ack or reject says so."""
    options = {"queue_properties": {"lock_duration": 1}, "max_lock_renewal_duration": 0.2}
    with kombu.Connection(sb(url), transport_options=options) as c:
        q = kombu.Queue(qname, kombu.Exchange(qname, "direct"), routing_key=qname)
        publish(c, q, "slow")
        channel = c.default_channel
        first = channel.basic_get(qname)
        assert first is not None
        again = eventually(lambda: channel.basic_get(qname), timeout=10, interval=0.1)
        assert again.payload == "slow" and again.delivery_info["delivery_count"] == 2
        with caplog.at_level(logging.WARNING, logger="sbredis.contrib.kombu"):
            getattr(first, settle)()
        assert f"{settle} of" in caplog.text and "the lock was lost; it may be delivered again" in caplog.text
        again.ack()
        assert channel.basic_get(qname) is None


def test_the_driver_version_is_sbredis_version(conn: kombu.Connection) -> None:
    conn.connect()
    assert conn.transport.driver_version() == sbredis.__version__
