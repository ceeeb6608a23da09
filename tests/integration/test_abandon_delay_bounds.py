"""abandon_message(delay=...) at the edges of its range, through both APIs: 0 gives the message back
at once, a fraction of a second and the largest delay (MAX_ABANDON_DELAY) are accepted, one second
more is refused."""

from __future__ import annotations

from typing import Any

import pytest

from sbredis import ServiceBusMessage, ServiceBusMessageState
from sbredis._core.settlement import MAX_ABANDON_DELAY
from sbredis.exceptions import InvalidArgumentError
from tests.conftest import eventually

pytestmark = [pytest.mark.integration, pytest.mark.conformance]


def test_the_ends_of_the_delay_range(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage(b) for b in ("now", "half", "longest", "hour")])
    with client.get_queue_receiver(q) as r:
        got = {str(m): m for m in r.receive_messages(4, max_wait_time=5)}
        assert set(got) == {"now", "half", "longest", "hour"}
        with pytest.raises(InvalidArgumentError):
            r.abandon_message(got["longest"], delay=MAX_ABANDON_DELAY + 1)
        r.abandon_message(got["longest"], delay=MAX_ABANDON_DELAY)
        r.abandon_message(got["hour"], delay=3600)
        r.abandon_message(got["half"], delay=0.5)
        r.abandon_message(got["now"], delay=0)  # no delay: available again at once
        (again,) = r.receive_messages(1, max_wait_time=5)
        assert (str(again), again.delivery_count) == ("now", 1)
        r.complete_message(again)
        peeked = {m.sequence_number: m for m in r.peek_messages(10, sequence_number=0)}
        for name in ("hour", "longest"):  # still set aside
            m = peeked.get(got[name].sequence_number)
            assert m is not None and m.state is ServiceBusMessageState.SCHEDULED, (name, list(peeked.values()))
        back = eventually(lambda: r.receive_messages(1, max_wait_time=0.2), timeout=10)
        assert [(str(m), m.delivery_count) for m in back] == [("half", 1)]
        r.complete_messages(back)
