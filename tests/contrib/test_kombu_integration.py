"""kombu's own transport integration tests (vendored in kombu_common.py) on sbredis://.

Run: BasicFunctionality, BaseExchangeTypes (direct, routing keys, fanout, topic), BaseMessage,
BaseTimeToLive and BaseFailover (a dead first URL, then a live one). Not run:

* BasePriority: sbredis has no message priorities (delivery is by sequence number).
* BaseEventLoop: it drives the connection from kombu's Hub, which only asynchronous transports
  (a socket to watch: py-amqp, Redis with BRPOP) support; this transport polls (as kombu's
  SQS-less virtual transports do), and Celery runs it with its synchronous consumer loop.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

pytest.importorskip("kombu")

import kombu

from tests.contrib.kombu_common import (
    BaseExchangeTypes,
    BaseFailover,
    BaseMessage,
    BaseTimeToLive,
    BasicFunctionality,
)
from tests.redis_server import free_port

pytestmark = pytest.mark.integration


def sbredis_url(url: str) -> str:
    import sbredis.contrib.kombu  # noqa: F401  (registers the scheme)

    return "sbredis" + url[len("redis") :]


@pytest.fixture()
def connection(url: str) -> Iterator[kombu.Connection]:
    # kombu's tests use fixed queue and exchange names: a prefix per test keeps them apart.
    prefix = f"k{uuid.uuid4().hex[:8]}."
    conn = kombu.Connection(sbredis_url(url), transport_options={"queue_name_prefix": prefix})
    yield conn
    conn.release()


@pytest.fixture()
def invalid_connection(url: str) -> kombu.Connection:
    return kombu.Connection(sbredis_url(f"redis://127.0.0.1:{free_port()}/0"))


@pytest.fixture()
def failover_connection(url: str) -> Iterator[kombu.Connection]:
    prefix = f"k{uuid.uuid4().hex[:8]}."
    dead = sbredis_url(f"redis://127.0.0.1:{free_port()}/0")
    conn = kombu.Connection(f"{dead};{sbredis_url(url)}", transport_options={"queue_name_prefix": prefix})
    yield conn
    conn.release()


class TestBasicFunctionality(BasicFunctionality):
    pass


class TestExchangeTypes(BaseExchangeTypes):
    pass


class TestMessage(BaseMessage):
    pass


class TestTimeToLive(BaseTimeToLive):
    pass


class TestFailover(BaseFailover):
    pass
