"""A client connects with an azure-servicebus connection string, or a namespace and a credential."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.test_connection import NamedKeyCredential

pytestmark = pytest.mark.integration


def test_a_client_connects_with_an_azure_connection_string(redis_server: Any) -> None:
    import redis

    from sbredis import ServiceBusClient, ServiceBusMessage
    from sbredis.management import ServiceBusAdministrationClient

    redis.Redis.from_url(redis_server.url).execute_command("ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all")
    conn = f"Endpoint=sb://127.0.0.1:{redis_server.port}/;SharedAccessKeyName=app;SharedAccessKey=pw;UseDevelopmentEmulator=true"
    with ServiceBusAdministrationClient.from_connection_string(conn) as admin:
        admin.create_queue("conn-q")
    with ServiceBusClient(f"127.0.0.1:{redis_server.port}", NamedKeyCredential("app", "pw")) as client:
        with client.get_queue_sender("conn-q") as sender:
            sender.send_messages(ServiceBusMessage("hi"))
        assert "pw" not in client.fully_qualified_namespace
        with client.get_queue_receiver("conn-q", max_wait_time=1) as receiver:
            assert [str(m) for m in receiver.receive_messages(max_wait_time=1)] == ["hi"]
    with pytest.raises(Exception) as info:  # the wrong key is refused by Redis, and the key is not shown
        ServiceBusAdministrationClient.from_connection_string(conn.replace("=pw", "=wrong")).get_queue("conn-q")
    assert "wrong" not in str(info.value)


def test_every_sdk_client_keyword_is_accepted(redis_server: Any) -> None:
    from sbredis import ServiceBusClient, ServiceBusMessage
    from sbredis.management import ServiceBusAdministrationClient

    sdk = dict(
        logging_enable=True,
        transport_type="AmqpOverWebsocket",
        http_proxy={"proxy_hostname": "127.0.0.1", "proxy_port": 3128},
        custom_endpoint_address="sb://127.0.0.1:1",
        uamqp_transport=False,
        user_agent="app/1.0",
        ssl_context=None,
        connection_verify="/nonexistent/ca.pem",
        try_timeout=5,
        retry_total=1,
    )
    with ServiceBusAdministrationClient.from_connection_string(redis_server.url, api_version="2021-05", **sdk) as a:
        a.create_queue("kw-q")
    with ServiceBusClient.from_connection_string(redis_server.url, **sdk) as client:
        with client.get_queue_sender("kw-q") as sender:
            sender.send_messages(ServiceBusMessage("kw"))
        with client.get_queue_receiver("kw-q") as receiver:
            assert [str(m) for m in receiver.receive_messages(max_wait_time=1)] == ["kw"]


def test_a_misspelt_keyword_is_still_refused(redis_server: Any) -> None:
    from sbredis import ServiceBusClient
    from sbredis.exceptions import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="logging_enabled"):
        ServiceBusClient.from_connection_string(redis_server.url, logging_enabled=True)
