"""kombu's own transport integration tests on sbredis://.

The test classes are kombu's: ``t/integration/common.py`` of the source distribution of the installed
kombu version, downloaded and cached at test time (tests/peers.py; the cache folder is
``$SBREDIS_TEST_CACHE``). When the download fails, `test_kombu_integration_sources_fetched` fails
with pip's message and kombu's classes do not run.

Run: BasicFunctionality, BaseExchangeTypes (direct, routing keys, fanout, topic), BaseMessage,
BaseTimeToLive, BaseFailover (a dead first URL, then a live one) and BaseEventLoop (kombu's Hub
drives the connection, as Celery's worker does; acks made in the loop's thread are completed in
batches). Not run:

* BasePriority: sbredis has no message priorities (delivery is by sequence number).
"""

from __future__ import annotations

import importlib.metadata
import uuid
from collections.abc import Iterator

import pytest

pytest.importorskip("kombu")

import kombu

from tests import peers
from tests.redis_server import free_port

KOMBU_VERSION = importlib.metadata.version("kombu")

try:
    kombu_tests = peers.load_module(
        peers.fetch_sdist("kombu", KOMBU_VERSION) / "t" / "integration" / "common.py", "kombu_integration_common"
    )
    FETCH_ERROR = ""
except peers.PeerSourceError as e:
    kombu_tests = None
    FETCH_ERROR = str(e)

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


def test_kombu_integration_sources_fetched() -> None:
    """kombu's test classes below come from its sdist: without them this run would test nothing."""
    if FETCH_ERROR:
        pytest.fail(FETCH_ERROR, pytrace=False)


if kombu_tests is not None:

    class TestBasicFunctionality(kombu_tests.BasicFunctionality):
        pass

    class TestExchangeTypes(kombu_tests.BaseExchangeTypes):
        pass

    class TestMessage(kombu_tests.BaseMessage):
        pass

    class TestTimeToLive(kombu_tests.BaseTimeToLive):
        pass

    class TestFailover(kombu_tests.BaseFailover):
        pass

    class TestEventLoop(kombu_tests.BaseEventLoop):
        pass
