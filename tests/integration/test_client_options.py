"""Client options through both APIs (sync and sbredis.aio): bad values are refused with a typed
error before anything is sent (every backend), and ``wait_for_replicas`` on a standalone server
without replicas reports the send as in doubt while the message stays stored."""

from __future__ import annotations

from typing import Any

import pytest

from sbredis import ServiceBusMessage
from sbredis.exceptions import InvalidArgumentError, ServiceBusConnectionError

pytestmark = [pytest.mark.integration, pytest.mark.conformance]

BAD_OPTIONS = [
    ({"wait_for_replicas": -1}, "wait_for_replicas"),
    ({"wait_for_replicas": True}, "wait_for_replicas"),
    ({"wait_for_aof": "yes"}, "wait_for_aof"),
    ({"durability_timeout": "1s"}, "durability_timeout"),
    ({"durability_timeout": False}, "durability_timeout"),
]


@pytest.mark.parametrize(("options", "named"), BAD_OPTIONS)
def test_bad_durability_options_are_refused(url: str, sb_api: Any, options: dict[str, Any], named: str) -> None:
    with pytest.raises(InvalidArgumentError, match=named):
        sb_api.ServiceBusClient.from_connection_string(url, **options)


def test_an_unsupported_scheme_is_refused(url: str, sb_api: Any) -> None:
    with pytest.raises(InvalidArgumentError, match="scheme 'http'"):
        sb_api.ServiceBusClient.from_connection_string("http://" + url.split("://", 1)[1])


@pytest.mark.standalone  # memory:// has no WAIT (docs/memory.md); the cluster's twin is in test_cluster.py
def test_wait_for_replicas_without_replicas_reports_in_doubt(redis_server: Any, sb_api: Any, queue_name: str) -> None:
    with sb_api.ServiceBusAdministrationClient.from_connection_string(redis_server.url) as admin:
        admin.create_queue(queue_name)
    with sb_api.ServiceBusClient.from_connection_string(
        redis_server.url, wait_for_replicas=1, durability_timeout=0.05, retry_total=0
    ) as c:
        with c.get_queue_sender(queue_name) as s, pytest.raises(ServiceBusConnectionError) as info:
            s.send_messages([ServiceBusMessage("x"), ServiceBusMessage("y")])
        assert "0 of 1 replicas" in info.value.message
        with c.get_queue_receiver(queue_name) as r:
            assert [str(m) for m in r.peek_messages(5)] == ["x", "y"]  # stored on the primary: in doubt, not lost
