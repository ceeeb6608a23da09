"""A send torn in the append-only file by a SIGKILL, then acknowledged sends, then another restart.

A SIGKILL during redis-server's write(2) of its AOF buffer can cut the file inside the MULTI/EXEC
block of a send script (seen in test_redis_kills.py: the file cut at a page boundary). The send
was not acknowledged (in doubt). redis-server's own recovery (aof-load-truncated) cuts the file at
the last complete command, inside the block, so the next load runs the torn half together with the
block written after it: the torn send's messages come back and take the sequence numbers (stream
ids) of sends acknowledged since, which are then lost; the in-doubt send, retried meanwhile, is
stored twice. `redis-check-aof --fix` (RedisServer.repair_torn_aof) cuts before the MULTI instead,
and then every acknowledged send is there exactly once. Both outcomes are asserted: the first is
redis-server's (6.2 and 8.2 here; Valkey fixed it, docs/reliability.md), the second sbredis's.
"""

from __future__ import annotations

import uuid
from collections import Counter
from datetime import timedelta

import pytest

from sbredis import ServiceBusClient, ServiceBusMessage, ServiceBusReceiveMode
from sbredis.management import ServiceBusAdministrationClient
from tests.redis_server import RedisServer, server_binary
from tests.reliability.test_redis_kills import redis_72_binary

pytestmark = [pytest.mark.integration, pytest.mark.reliability]
A = [f"a{i}" for i in range(10)]  # the send torn by the kill, retried after the restart
B = [f"b{i}" for i in range(10)]  # a send acknowledged after the restart


def send(server: RedisServer, q: str, ids: list[str], waitaof: bool) -> None:
    with ServiceBusClient.from_connection_string(server.url, wait_for_aof=waitaof, durability_timeout=3.0) as c:
        c.get_queue_sender(q).send_messages([ServiceBusMessage(i, message_id=i) for i in ids])


@pytest.mark.parametrize("repaired", [False, True], ids=["redis_recovery", "check_aof_fix"])
@pytest.mark.parametrize("setup", ["always", "everysec_waitaof"])
def test_sends_after_a_torn_send(setup: str, repaired: bool) -> None:
    waitaof = setup == "everysec_waitaof"
    binary = redis_72_binary() if waitaof else server_binary()
    fsync = "everysec" if waitaof else "always"
    server = RedisServer("--appendonly", "yes", "--appendfsync", fsync, binary=binary).start()
    q = "torn-" + uuid.uuid4().hex[:8]
    try:
        admin = ServiceBusAdministrationClient.from_connection_string(server.url)
        admin.create_queue(
            q, requires_duplicate_detection=True, duplicate_detection_history_time_window=timedelta(minutes=30)
        )
        send(server, q, A, waitaof)
        server.kill()
        server.tear_last_transaction()  # A's script block, cut inside its last command: A is in doubt
        if repaired:
            assert server.repair_torn_aof()
        server.start()
        send(server, q, B, waitaof)  # acknowledged (with WAITAOF: fsynced)
        send(server, q, A, waitaof)  # the in-doubt send retried with the same message ids
        server.kill()  # B and A's retry are in the AOF, after the torn block (unless repaired)
        server.start()
        with (
            ServiceBusClient.from_connection_string(server.url) as c,
            c.get_queue_receiver(q, receive_mode=ServiceBusReceiveMode.RECEIVE_AND_DELETE) as r,
        ):
            stored = Counter(str(m) for m in r.receive_messages(100, max_wait_time=1))
    finally:
        server.stop()
    if not repaired:  # redis-server's recovery: B acknowledged and lost, A stored twice
        assert stored == Counter({a: 2 for a in A}), stored
    else:
        assert stored == Counter(A + B), stored
