"""TLS: ``rediss://`` and ``rediss+cluster://`` with a CA, client certificates (mutual TLS) and AUTH.

No TLS-capable redis-server installs from PyPI here, so each real redis-server (standalone and a
3-primary cluster) sits behind a TLS-terminating proxy (tests/tls_proxy.py, Python's ssl) with
certificates made at test time (tests/tls_certs.py). The client's TLS is real: handshakes,
certificate and host name checks, client certificates; Redis's own TLS code is not exercised.
The cluster's nodes announce the proxies' ports, so CLUSTER SLOTS and MOVED send the client to the
TLS endpoints; a TLS client cannot talk to a plaintext port, and each proxy counts its handshakes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis._core.ops import partition_of
from sbredis.aio import ServiceBusClient as AsyncServiceBusClient
from sbredis.aio.management import ServiceBusAdministrationClient as AsyncAdmin
from sbredis.exceptions import (
    InvalidArgumentError,
    OperationTimeoutError,
    ServiceBusAuthenticationError,
    ServiceBusConnectionError,
)
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_cluster import RedisCluster
from tests.redis_server import RedisServer, free_port
from tests.tls_certs import TestPKI
from tests.tls_proxy import TLSProxy

pytestmark = [pytest.mark.integration]
SECRET = "tls-S3cret-pa55"
USER = "sbtls"
FAST = {"retry_total": 1, "retry_backoff_factor": 0.01, "socket_timeout": 3}


@dataclass
class Certs:
    ca: str
    server: tuple[str, str]  # for 127.0.0.1 and localhost
    client: tuple[str, str]  # a client certificate from the same CA
    misnamed: tuple[str, str]  # trusted CA, but for another host name
    rogue: tuple[str, str]  # for 127.0.0.1, from a CA the client does not trust
    rogue_client: tuple[str, str]


@dataclass
class Endpoints:
    server: RedisServer
    tls: TLSProxy  # server certificate only
    mtls: TLSProxy  # requires a client certificate
    misnamed: TLSProxy
    rogue: TLSProxy


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    d: Path = tmp_path_factory.mktemp("tls")
    pki, other = TestPKI(d), TestPKI(d, "untrusted")
    return Certs(
        ca=pki.ca_file,
        server=pki.issue("server", "127.0.0.1", "localhost"),
        client=pki.issue("client", client=True),
        misnamed=pki.issue("misnamed", "redis.elsewhere.invalid"),
        rogue=other.issue("rogue", "127.0.0.1"),
        rogue_client=other.issue("rogue-client", client=True),
    )


def add_user(client: Any) -> None:
    client.execute_command("ACL", "SETUSER", USER, "reset", "on", f">{SECRET}", "~*", "&*", "+@all")


@pytest.fixture(scope="module")
def endpoints(certs: Certs) -> Iterator[Endpoints]:
    server = RedisServer().start()
    add_user(server_client(server))
    proxies = [
        TLSProxy(server.port, *certs.server),
        TLSProxy(server.port, *certs.server, client_ca=certs.ca),
        TLSProxy(server.port, *certs.misnamed),
        TLSProxy(server.port, *certs.rogue),
    ]
    try:
        for p in proxies:
            p.start()
        yield Endpoints(server, *proxies)
    finally:
        for p in proxies:
            p.stop()
        server.stop()


def server_client(server: RedisServer) -> Any:
    import redis

    return redis.Redis.from_url(server.url)


def auth_url(proxy: TLSProxy) -> str:
    return f"rediss://{USER}:{SECRET}@127.0.0.1:{proxy.port}/0"


def round_trip(url: str, queue: str, **tls: Any) -> Any:
    """Create a queue, send, peek-lock receive, complete; returns the runtime properties."""
    with (
        ServiceBusAdministrationClient.from_connection_string(url, **tls) as admin,
        ServiceBusClient.from_connection_string(url, **tls) as client,
    ):
        admin.create_queue(queue)
        client.get_queue_sender(queue).send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
        with client.get_queue_receiver(queue, max_wait_time=2) as r:
            got: list[Any] = []
            while len(got) < 2:
                got += r.receive_messages(2 - len(got), max_wait_time=2)
            assert sorted(str(m) for m in got) == ["a", "b"]
            assert all(m.locked_until_utc is not None for m in got)  # peek-lock: locked until settled
            r.complete_messages(got)
        props = admin.get_queue_runtime_properties(queue)
        admin.delete_queue(queue)
        return props


def test_rediss_with_a_ca_file_sync(certs: Certs, endpoints: Endpoints) -> None:
    before = endpoints.tls.accepted
    props = round_trip(endpoints.tls.url(), "tls-sync", ssl_ca_certs=certs.ca)
    assert props.active_message_count == 0 and props.total_message_count == 0
    assert {p.node for p in props.partitions} == {f"127.0.0.1:{endpoints.tls.port}"}
    assert endpoints.tls.accepted > before  # the traffic went through the TLS endpoint


def test_rediss_with_a_ca_file_async(certs: Certs, endpoints: Endpoints) -> None:
    before = endpoints.tls.accepted

    async def main() -> Any:
        url = endpoints.tls.url()
        async with (
            AsyncAdmin.from_connection_string(url, ssl_ca_certs=certs.ca) as admin,
            AsyncServiceBusClient.from_connection_string(url, ssl_ca_certs=certs.ca) as client,
        ):
            await admin.create_queue("tls-async")
            async with client.get_queue_sender("tls-async") as s:
                await s.send_messages(ServiceBusMessage("x"))
            async with client.get_queue_receiver("tls-async", max_wait_time=2) as r:
                (m,) = await r.receive_messages(1, max_wait_time=2)
                assert str(m) == "x"
                locked = (await admin.get_queue_runtime_properties("tls-async")).partitions[0].locked_message_count
                assert locked == 1
                await r.complete_message(m)
            props = await admin.get_queue_runtime_properties("tls-async")
            await admin.delete_queue("tls-async")
            return props

    props = asyncio.run(main())
    assert props.active_message_count == 0 and props.partitions[0].locked_message_count == 0
    assert endpoints.tls.accepted > before


def test_mutual_tls_with_a_client_certificate(certs: Certs, endpoints: Endpoints) -> None:
    certfile, keyfile = certs.client
    before = endpoints.mtls.accepted
    props = round_trip(endpoints.mtls.url(), "mtls", ssl_ca_certs=certs.ca, ssl_certfile=certfile, ssl_keyfile=keyfile)
    assert props.total_message_count == 0
    assert endpoints.mtls.accepted > before


@pytest.mark.parametrize("client_cert", ["none", "untrusted"])
def test_mutual_tls_refuses_a_client_without_a_trusted_certificate(
    certs: Certs, endpoints: Endpoints, client_cert: str
) -> None:
    tls: dict[str, Any] = {"ssl_ca_certs": certs.ca, **FAST}
    if client_cert == "untrusted":
        tls.update(ssl_certfile=certs.rogue_client[0], ssl_keyfile=certs.rogue_client[1])
    accepted, refused = endpoints.mtls.accepted, endpoints.mtls.refused
    with (
        ServiceBusClient.from_connection_string(auth_url(endpoints.mtls), **tls) as client,
        pytest.raises(ServiceBusConnectionError) as info,
    ):
        client.get_queue_sender("anything").send_messages(ServiceBusMessage("x"))
    assert endpoints.mtls.accepted == accepted and endpoints.mtls.refused > refused  # nothing reached Redis
    assert SECRET not in str(info.value) and SECRET not in repr(info.value)
    assert "TLS" in info.value.message  # says where to look


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("untrusted CA", "certificate verify failed"),
        ("no CA file", "certificate verify failed"),
        ("host name mismatch", "mismatch"),
    ],
)
def test_a_server_certificate_the_client_cannot_verify_is_refused(
    certs: Certs, endpoints: Endpoints, case: str, expected: str
) -> None:
    proxy = {"untrusted CA": endpoints.rogue, "no CA file": endpoints.tls}.get(case, endpoints.misnamed)
    tls: dict[str, Any] = {} if case == "no CA file" else {"ssl_ca_certs": certs.ca}
    accepted = proxy.accepted
    for make in (ServiceBusClient, ServiceBusAdministrationClient):
        with make.from_connection_string(auth_url(proxy), **tls, **FAST) as c:  # type: ignore[attr-defined]
            with pytest.raises(ServiceBusConnectionError) as info:
                if isinstance(c, ServiceBusClient):
                    c.get_queue_sender("anything").send_messages(ServiceBusMessage("x"))
                else:
                    c.create_queue("never")
            text = str(info.value)
            assert expected in text and "TLS" in text
            assert SECRET not in text and SECRET not in repr(info.value)
    assert proxy.accepted == accepted  # the client gave up in the handshake: nothing sent


def test_async_client_refuses_an_untrusted_server(certs: Certs, endpoints: Endpoints) -> None:
    async def main() -> ServiceBusConnectionError:
        url = auth_url(endpoints.rogue)
        async with AsyncServiceBusClient.from_connection_string(url, ssl_ca_certs=certs.ca, **FAST) as c:
            try:
                async with c.get_queue_sender("anything") as s:
                    await s.send_messages(ServiceBusMessage("x"))
            except ServiceBusConnectionError as e:
                return e
        raise AssertionError("the untrusted server was accepted")

    err = asyncio.run(main())
    assert "certificate verify failed" in err.message and SECRET not in str(err)


def test_check_hostname_off_and_cert_reqs_none_are_passed_through(certs: Certs, endpoints: Endpoints) -> None:
    # the same servers as above, accepted once the user turns the matching check off
    props = round_trip(endpoints.misnamed.url(), "noname", ssl_ca_certs=certs.ca, ssl_check_hostname=False)
    assert props.total_message_count == 0
    props = round_trip(endpoints.rogue.url(), "noverify", ssl_cert_reqs="none", ssl_check_hostname=False)
    assert props.total_message_count == 0


def test_tls_options_on_a_plaintext_url_are_a_typed_error(certs: Certs, endpoints: Endpoints) -> None:
    with pytest.raises(InvalidArgumentError) as info:
        ServiceBusClient.from_connection_string(
            f"redis://{USER}:{SECRET}@127.0.0.1:{endpoints.server.port}/0", ssl_ca_certs=certs.ca
        )
    assert "ssl_ca_certs" in str(info.value) and SECRET not in str(info.value)


@pytest.mark.parametrize("api", ["sync", "async"])
def test_tls_to_a_server_without_tls_says_what_to_try(endpoints: Endpoints, api: str) -> None:
    """A plain-text server reads the TLS handshake as the start of a command and waits for the rest:
    the client hears nothing until its timeout, which names the likely cause (an azure-servicebus
    `Endpoint=` connection string means TLS unless it says otherwise)."""
    port = endpoints.server.port
    urls = [
        f"rediss://{USER}:{SECRET}@127.0.0.1:{port}/0",
        f"Endpoint=sb://127.0.0.1:{port}/;SharedAccessKeyName={USER};SharedAccessKey={SECRET}",
    ]
    options = {"socket_timeout": 0.5, "retry_total": 0}

    async def create(url: str) -> None:
        async with AsyncAdmin.from_connection_string(url, **options) as admin:
            await admin.create_queue("never")

    for url in urls:
        with pytest.raises(OperationTimeoutError) as info:
            if api == "sync":
                with ServiceBusAdministrationClient.from_connection_string(url, **options) as admin:
                    admin.create_queue("never")
            else:
                asyncio.run(create(url))
        text = str(info.value)
        assert "connecting to Redis" in text and "does not speak TLS" in text and "use redis://" in text
        assert SECRET not in text and SECRET not in repr(info.value)
    with ServiceBusAdministrationClient.from_connection_string(endpoints.server.url) as admin:
        assert "never" not in [q.name for q in admin.list_queues()]  # nothing was written


def test_auth_and_tls_in_one_url_never_show_the_password(
    certs: Certs, endpoints: Endpoints, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    url = auth_url(endpoints.mtls)
    tls = {"ssl_ca_certs": certs.ca, "ssl_certfile": certs.client[0], "ssl_keyfile": certs.client[1]}
    texts: list[str] = []
    props = round_trip(url, "auth-tls", **tls)
    assert props.total_message_count == 0
    with (
        ServiceBusClient.from_connection_string(url, **tls) as client,
        ServiceBusAdministrationClient.from_connection_string(url, **tls) as admin,
    ):
        admin.create_queue("auth-tls")
        clients = server_client(endpoints.server).execute_command("CLIENT", "LIST")
        assert f"user={USER} ".encode() in clients  # the connection through the proxy is authenticated as USER
        admin.delete_queue("auth-tls")
        texts += [repr(client), repr(admin), client.fully_qualified_namespace, repr(client._transport)]
        texts.append(repr(client.get_queue_sender("nope")))
        assert f"{USER}:***@127.0.0.1:{endpoints.mtls.port}" in client.fully_qualified_namespace
    wrong = url.replace(SECRET, "not-the-password")
    with ServiceBusClient.from_connection_string(wrong, **tls) as client:
        with pytest.raises(ServiceBusAuthenticationError) as e:
            client.get_queue_sender("q").send_messages(ServiceBusMessage("x"))
        texts += [str(e.value), repr(e.value)]
    texts += [r.getMessage() for r in caplog.records]
    assert texts and not [t for t in texts if SECRET in t or "not-the-password" in t]


# -- cluster


@dataclass
class TLSCluster:
    cluster: RedisCluster
    proxies: list[TLSProxy]

    def url(self, *seeds: str) -> str:
        listed = [*seeds, *(f"127.0.0.1:{p.port}" for p in self.proxies)]
        return f"rediss+cluster://{USER}:{SECRET}@" + ",".join(listed)


@pytest.fixture(scope="module")
def tls_cluster(certs: Certs) -> Iterator[TLSCluster]:
    """3 primaries, each behind a proxy that requires a client certificate; the nodes announce the
    proxies' ports (CLUSTER SLOTS, MOVED) and the real bus ports (gossip stays direct)."""
    cluster = RedisCluster(3)
    proxies = [TLSProxy(n.port, *certs.server, client_ca=certs.ca) for n in cluster.primaries]
    for node, proxy in zip(cluster.primaries, proxies, strict=True):
        node.extra += ["--cluster-announce-port", str(proxy.port)]
        node.extra += ["--cluster-announce-bus-port", str(node.port + 10000)]
    try:
        for p in proxies:
            p.start()
        cluster.start()
        for node in cluster.primaries:
            add_user(node.client())
        yield TLSCluster(cluster, proxies)
    finally:
        for p in proxies:
            p.stop()
        cluster.stop()


def test_cluster_over_tls_with_auth_and_a_dead_seed(certs: Certs, tls_cluster: TLSCluster) -> None:
    tls = {"ssl_ca_certs": certs.ca, "ssl_certfile": certs.client[0], "ssl_keyfile": certs.client[1]}
    url = tls_cluster.url(f"127.0.0.1:{free_port()}")  # the first seed is dead
    before = [p.accepted for p in tls_cluster.proxies]
    keys = {partition_of(f"k{i}", 16): f"k{i}" for i in range(400)}
    assert sorted(keys) == list(range(16))
    with (
        ServiceBusAdministrationClient.from_connection_string(url, **tls) as admin,
        ServiceBusClient.from_connection_string(url, **tls) as client,
    ):
        assert SECRET not in repr(client) and SECRET not in client.fully_qualified_namespace
        admin.create_queue("tls-parts", enable_partitioning=True, partition_count=16)
        client.get_queue_sender("tls-parts").send_messages(
            [ServiceBusMessage(f"m{p}", partition_key=k) for p, k in keys.items()]
        )
        props = admin.get_queue_runtime_properties("tls-parts")
        assert [p.active_message_count for p in props.partitions] == [1] * 16
        # every partition lives on a TLS endpoint, and every endpoint holds some
        assert {p.node for p in props.partitions} == {f"127.0.0.1:{p.port}" for p in tls_cluster.proxies}
        with client.get_queue_receiver("tls-parts", max_wait_time=1) as r:
            got: list[Any] = []
            while len(got) < 16 and (batch := r.receive_messages(16, max_wait_time=1)):
                r.complete_messages(batch)
                got += batch
        assert sorted(m.partition_id for m in got) == list(range(16))
        assert {str(m): m.partition_id for m in got} == {f"m{p}": p for p in range(16)}
        assert admin.get_queue_runtime_properties("tls-parts").total_message_count == 0
        admin.delete_queue("tls-parts")
    assert all(p.accepted > b for p, b in zip(tls_cluster.proxies, before, strict=True))


def test_cluster_over_tls_async(certs: Certs, tls_cluster: TLSCluster) -> None:
    tls = {"ssl_ca_certs": certs.ca, "ssl_certfile": certs.client[0], "ssl_keyfile": certs.client[1]}
    url = tls_cluster.url()

    async def main() -> list[int]:
        async with (
            AsyncAdmin.from_connection_string(url, **tls) as admin,
            AsyncServiceBusClient.from_connection_string(url, **tls) as client,
        ):
            await admin.create_queue("tls-aparts", enable_partitioning=True, partition_count=16)
            async with client.get_queue_sender("tls-aparts") as s:
                await s.send_messages([ServiceBusMessage(str(i)) for i in range(32)])
            got: list[Any] = []
            async with client.get_queue_receiver("tls-aparts", max_wait_time=1) as r:
                while len(got) < 32 and (batch := await r.receive_messages(32, max_wait_time=1)):
                    await r.complete_messages(batch)
                    got += batch
            await admin.delete_queue("tls-aparts")
            return sorted(int(str(m)) for m in got)

    assert asyncio.run(main()) == list(range(32))


def test_cluster_without_a_client_certificate_is_a_typed_error(certs: Certs, tls_cluster: TLSCluster) -> None:
    url = tls_cluster.url()
    with (
        ServiceBusClient.from_connection_string(url, ssl_ca_certs=certs.ca, **FAST) as client,
        pytest.raises(ServiceBusConnectionError) as info,
    ):
        client.get_queue_sender("anything").send_messages(ServiceBusMessage("x"))
    assert "No node of the cluster" in info.value.message and "TLS" in info.value.message
    assert SECRET not in str(info.value)
