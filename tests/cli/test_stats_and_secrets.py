"""`sbredis stats` (one shot and --watch with rates) and passwords: never in any output of the CLI,
on a password-protected server, with a wrong password and with an unreachable one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from tests.cli.conftest import run_cli
from tests.redis_server import RedisServer, free_port

pytestmark = pytest.mark.integration
PASSWORD = "cli-s3cret-Pa55"


def test_stats_once_and_watch(sb: Any, make_queue: Any, client: Any) -> None:
    q = make_queue()
    with client.get_queue_sender(q) as s:
        s.send_messages([ServiceBusMessage("x") for _ in range(7)])
    once = sb("stats", q, "--json")
    assert once.code == 0, once
    (row,) = once.json()["entities"]
    assert (row["name"], row["active"], row["dead_letter"]) == (q, 7, 0)
    table = sb("stats", q)
    assert table.out.split("\n")[0].split()[:3] == ["NAME", "KIND", "ACTIVE"] and q in table.out

    watch = sb("stats", q, "--watch", "0.2", "--iterations", "3", "--json")
    assert watch.code == 0, watch
    ticks = [json.loads(line) for line in watch.out.splitlines()]
    assert len(ticks) == 3
    assert "active_per_s" not in ticks[0]["entities"][0]
    assert ticks[2]["entities"][0]["active_per_s"] == 0.0
    human = sb("stats", q, "--watch", "0.2", "--iterations", "2")
    assert "ACTIVE_PER_S" in human.out and "Ctrl-C" in human.out

    assert sb("stats", "no-such-entity").code == 3


@pytest.fixture(scope="module")
def locked_server() -> Iterator[RedisServer]:
    srv = RedisServer("--requirepass", PASSWORD).start()
    yield srv
    srv.stop()


def test_passwords_never_printed(locked_server: RedisServer, tmp_path: Any) -> None:
    good = f"redis://default:{PASSWORD}@127.0.0.1:{locked_server.port}/0"
    runs = [
        run_cli("entities", "create", "queue", "secretq", "--url", good, "-vv"),
        run_cli("send", "secretq", "hi", "--count", "3", "--progress", "--url", good, "-vv"),
        run_cli("entities", "list", "--url", good, "--json", "-vv"),
        run_cli("peek", "secretq", "--url", good),
        run_cli("stats", "--url", good),
        run_cli("dlq", "purge", "secretq", "--url", good),  # refused: no --yes
        run_cli("entities", "delete", "queue", "secretq", "--yes", url=good),  # from $SBREDIS_URL
    ]
    assert [r.code for r in runs] == [0, 0, 0, 0, 0, 3, 0], runs
    assert json.loads(runs[2].out)[0]["name"] == "secretq"
    wrong = run_cli("entities", "list", "--url", good.replace(PASSWORD, "wr0ng-" + PASSWORD[::-1]), "-vv")
    assert wrong.code == 1 and "Authentication" in wrong.err, wrong
    gone = f"redis+cluster://default:{PASSWORD}@127.0.0.1:{free_port()}/0"
    unreachable = run_cli("stats", "--url", gone, "-vv")
    assert unreachable.code == 1 and "default:***@127.0.0.1" in unreachable.err, unreachable
    assert "Traceback" not in unreachable.err
    for r in [*runs, wrong, unreachable]:
        assert PASSWORD not in r.out + r.err and PASSWORD[::-1] not in r.out + r.err, r
