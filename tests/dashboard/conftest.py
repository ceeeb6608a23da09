"""The dashboard on a real redis-server, served by uvicorn from a thread on a free loopback port,
and headless Chromium (Debian's /usr/bin/chromium) driven by Playwright. Playwright never
downloads a browser here: `executable_path` points at the system one."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.management import ServiceBusAdministrationClient, SqlRuleAction, SqlRuleFilter
from tests.redis_server import RedisServer

CHROMIUM = os.environ.get("SBREDIS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROOT = Path(__file__).resolve().parents[2]
DOC_IMAGES = ROOT / "docs" / "images" / "dashboard"

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from sbredis.dashboard.app import Settings  # noqa: E402
from sbredis.dashboard.server import Running, start  # noqa: E402


@pytest.fixture(scope="module")
def server() -> Iterator[RedisServer]:
    srv = RedisServer().start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def redis_url(server: RedisServer) -> str:
    return server.url


@pytest.fixture(scope="module")
def admin(redis_url: str) -> Iterator[ServiceBusAdministrationClient]:
    with ServiceBusAdministrationClient.from_connection_string(redis_url) as a:
        yield a


@pytest.fixture(scope="module")
def client(redis_url: str) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(redis_url) as c:
        yield c


def dead_letter(client: ServiceBusClient, queue: str, n: int, reason: str = "BadOrder") -> None:
    with client.get_queue_receiver(queue) as r:
        got: list[Any] = []
        while len(got) < n:
            got += r.receive_messages(n - len(got), max_wait_time=2)
        r.dead_letter_messages(got, reason=reason, error_description="rejected by the test")


@pytest.fixture(scope="module")
def namespace(admin: ServiceBusAdministrationClient, client: ServiceBusClient) -> dict[str, Any]:
    """orders (4 partitions): 12 active, 5 dead-lettered, 2 scheduled, 1 deferred; events (topic)
    with `audit` (SQL rule and action) and `lost` (forwards to a queue deleted since: its messages
    land in the transfer dead-letter subqueue); carts (sessions, one with state); archive."""
    admin.create_queue("orders", enable_partitioning=True, partition_count=4, max_delivery_count=3)
    admin.create_queue("archive")
    admin.create_queue("carts", requires_session=True)
    admin.create_queue("gone")
    admin.create_topic("events", enable_partitioning=True, partition_count=2)
    admin.create_subscription("events", "audit")
    admin.delete_rule("events", "audit", "$Default")
    admin.create_rule(
        "events", "audit", "eu-only", filter=SqlRuleFilter("region = 'eu'"), action=SqlRuleAction("SET audited = 1")
    )
    admin.create_subscription("events", "lost", forward_to="gone")
    admin.delete_queue("gone")
    with client.get_queue_sender("orders") as s:
        s.send_messages(
            [
                ServiceBusMessage(
                    f'{{"order": {i}, "total": {i * 10}}}',
                    message_id=f"order-{i}",
                    content_type="application/json",
                    application_properties={"region": "eu" if i % 2 else "us", "n": i},
                )
                for i in range(18)
            ]
        )
        later = datetime.now(UTC) + timedelta(days=1)
        s.schedule_messages([ServiceBusMessage(f"later-{i}", message_id=f"later-{i}") for i in range(2)], later)
    dead_letter(client, "orders", 5)
    with client.get_queue_receiver("orders") as r:
        (m,) = r.receive_messages(1, max_wait_time=2)
        r.defer_message(m)
    with client.get_topic_sender("events") as s:
        s.send_messages([ServiceBusMessage(f"event-{i}", application_properties={"region": "eu"}) for i in range(3)])
    with client.get_queue_sender("carts") as s:
        s.send_messages([ServiceBusMessage("item", session_id=f"cart-{i}") for i in range(2)])
    with client.get_queue_receiver("carts", session_id="cart-0") as r:
        r.session.set_state(b'{"step": "checkout"}')
    return {"orders": "orders", "topic": "events"}


@pytest.fixture(scope="module")
def dashboard(redis_url: str, namespace: dict[str, Any]) -> Iterator[Running]:
    running = start(Settings.make(redis_url, poll_seconds=0.5))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        why = f"no Chromium at {CHROMIUM} (apt-get install -y chromium)"
        if os.environ.get("SBREDIS_REQUIRE_BROWSER") == "1":  # CI: a missing browser is a failure, not a skip
            pytest.fail(why)
        pytest.skip(why)
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(15_000)
    yield pg
    context.close()


@pytest.fixture()
def shoot(tmp_path: Path) -> Callable[[Any, str], Path]:
    """Save a full-page screenshot under the test's tmp dir (and into docs/images/dashboard/ when
    SBREDIS_DASHBOARD_SCREENSHOTS=docs, to refresh the docs page's images)."""

    def take(page: Any, name: str) -> Path:
        path = tmp_path / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 1000
        if os.environ.get("SBREDIS_DASHBOARD_SCREENSHOTS") == "docs":
            DOC_IMAGES.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, DOC_IMAGES / path.name)
        return path

    return take
