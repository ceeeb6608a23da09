"""Sequence-number arguments that are neither an int nor an iterable of ints (a float, a string,
bytes, None) are refused with InvalidArgumentError before anything is sent, through both APIs."""

from __future__ import annotations

from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis.exceptions import InvalidArgumentError

pytestmark = [pytest.mark.integration, pytest.mark.conformance, pytest.mark.standalone]

BAD = [1.5, "12", b"1", None]


def test_bad_sequence_number_arguments(client: Any, make_queue: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s, client.get_queue_receiver(q) as r:
        s.send_messages(ServiceBusMessage("x"))
        for bad in BAD:
            with pytest.raises(InvalidArgumentError, match="sequence numbers"):
                r.receive_deferred_messages(bad)
            with pytest.raises(InvalidArgumentError, match="sequence numbers"):
                s.cancel_scheduled_messages(bad)
        assert [str(m) for m in r.receive_messages(1, max_wait_time=2)] == ["x"]  # nothing was touched
