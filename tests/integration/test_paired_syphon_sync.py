"""The sync client's syphon with backlog messages it can never deliver, while the primary is away
and after it is back (test_paired_async.py runs the same scenario on sbredis.aio)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.paired import PATH
from tests.conftest import eventually
from tests.integration.test_paired import Pair, drain


@pytest.fixture()
def pair() -> Iterator[Pair]:
    p = Pair()
    yield p
    p.stop()


def test_the_sync_syphon_retries_while_the_primary_is_away_and_dead_letters_what_it_can_never_deliver(
    pair: Pair,
) -> None:
    with pair.admin() as a:
        a.create_queue("orders")
    with pair.client(backlog_queue_count=1) as c:
        paired = c.paired_namespace
        assert paired is not None
        paired.create_backlog_queues()
        with ServiceBusClient(pair.secondary.url) as sc, sc.get_queue_sender("x-servicebus-transfer/0") as s:
            s.send_messages(
                [
                    ServiceBusMessage("orphan"),  # no destination
                    ServiceBusMessage("gone", application_properties={PATH: "missing"}),
                    ServiceBusMessage("ok", application_properties={PATH: "orders"}),
                ]
            )
        pair.primary.kill()
        c.start_syphon()
        # the primary is away: nothing is delivered yet, the batch is abandoned and received again
        eventually(lambda: paired.metrics.backlog_receives >= 3, timeout=10)
        assert paired.metrics.siphon_messages_sent == 0
        pair.primary.start()
        eventually(lambda: paired.metrics.siphon_messages_sent == 1 and paired.metrics.siphon_dead_lettered == 2, 20)

    with ServiceBusClient(pair.secondary.url) as sc:
        with sc.get_queue_receiver("x-servicebus-transfer/0", sub_queue="deadletter") as r:
            dead = r.receive_messages(10, max_wait_time=0.5)
        assert sorted((str(m), m.dead_letter_reason) for m in dead) == [
            ("gone", "MessagingEntityNotFoundError"),
            ("orphan", "InvalidOperationError"),
        ]
        assert all(m.delivery_count >= 1 for m in dead)  # abandoned while the primary was away
    with ServiceBusClient(pair.primary.url) as pc:
        got = drain(pc, "orders", 1)
    assert [str(m) for m in got] == ["ok"] and got[0].sent_application_properties is None
