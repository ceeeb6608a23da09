"""No credentials in log lines, error messages or reprs: a password-protected redis-server, a
wrong password, and a server that is not there, with every log record captured at DEBUG."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.aio import ServiceBusClient as AsyncClient
from sbredis.exceptions import ServiceBusAuthenticationError, ServiceBusConnectionError, ServiceBusError
from sbredis.management import ServiceBusAdministrationClient
from sbredis.worker import Worker
from tests.redis_server import RedisServer, free_port

PASSWORD = "s3cret-Pa55"
WRONG = "wr0ng-Pa55"


@pytest.fixture(scope="module")
def locked_server() -> Iterator[RedisServer]:
    srv = RedisServer("--requirepass", PASSWORD).start()
    yield srv
    srv.stop()


def url_with(server: RedisServer, password: str) -> str:
    return f"redis://default:{password}@127.0.0.1:{server.port}/0"


def assert_clean(caplog: pytest.LogCaptureFixture, *texts: str) -> None:
    lines = [r.getMessage() for r in caplog.records] + [caplog.text, *texts]
    for secret in (PASSWORD, WRONG):
        assert not any(secret in line for line in lines), f"{secret} leaked: {[x for x in lines if secret in x]}"


def test_reprs_and_namespace_hide_the_password(locked_server: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url = url_with(locked_server, PASSWORD)
    with ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue("secret-q")
        try:
            with ServiceBusClient.from_connection_string(url) as client:
                sender = client.get_queue_sender("secret-q")
                receiver = client.get_queue_receiver("secret-q", max_wait_time=1)
                sender.send_messages(ServiceBusMessage("x"))
                (m,) = receiver.receive_messages(1, max_wait_time=2)
                receiver.complete_message(m)
                texts = [repr(client), repr(sender), repr(receiver), repr(m), client.fully_qualified_namespace]
                texts += [repr(admin), repr(client._transport), repr(AsyncClient(url))]
                assert "default:***@127.0.0.1" in repr(client)
        finally:
            admin.delete_queue("secret-q")
    assert_clean(caplog, *texts)


def test_a_wrong_password_is_reported_without_it(locked_server: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client = ServiceBusClient.from_connection_string(url_with(locked_server, WRONG), retry_total=0)
    with client, pytest.raises(ServiceBusAuthenticationError) as info:
        client.get_queue_sender("any").send_messages(ServiceBusMessage("x"))
    assert_clean(caplog, str(info.value), repr(info.value), str(info.value.__cause__))


def test_an_unreachable_server_is_logged_without_the_password(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    url = f"redis://user:{PASSWORD}@127.0.0.1:{free_port()}/0"
    errors: list[ServiceBusError] = []

    async def scenario() -> int:
        async with AsyncClient.from_connection_string(url, retry_total=0) as client:
            sender = client.get_queue_sender("gone")
            await sender.send_messages(ServiceBusMessage("x"), presettled=True)  # fails later: logged
            try:
                await sender.send_messages(ServiceBusMessage("x"))
            except ServiceBusConnectionError as e:
                errors.append(e)
            await sender.close()
        worker = Worker(url, lambda m: None, entity="gone", retry_total=0)
        return await worker.serve()  # cannot start: logged

    assert asyncio.run(scenario()) == 1
    assert errors, "the send to a server that is not there did not fail"
    assert any("pre-settled send failed" in r.getMessage() for r in caplog.records)
    assert any("cannot start a worker" in r.getMessage() for r in caplog.records)
    assert_clean(caplog, *(str(e) for e in errors))


def test_bad_connection_strings_are_refused_without_echoing_them(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    texts: list[Any] = []
    for url in (f"redis://user:{PASSWORD}@host:notaport/0", f"redis+cluster://u:{PASSWORD}@h/5"):
        with pytest.raises(ServiceBusError) as info:
            ServiceBusClient.from_connection_string(url)
        texts.append(str(info.value))
    assert_clean(caplog, *texts)
