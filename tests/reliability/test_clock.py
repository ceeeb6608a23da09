"""Clock skew: a client process whose wall clock is an hour ahead (or behind) sees the same
enqueue, expiry and lock times as a client with the right clock, and keeps its locks with the
AutoLockRenewer and prefetch: every time comes from the server (TIME in the scripts), and the
client only times its own renewals by the offset the server's replies give it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sbredis import ServiceBusMessage
from tests.redis_server import RedisServer
from tests.reliability.clock import offset_env

pytestmark = [pytest.mark.integration, pytest.mark.reliability]

ROOT = Path(__file__).resolve().parents[2]
LOCK = timedelta(seconds=1)
HOLD = 3.5  # seconds: three and a half lock durations


def server_ms(raw: Any) -> int:
    sec, usec = raw.time()
    return int(sec) * 1000 + int(usec) // 1000


@pytest.mark.parametrize("skew", [3600, -3600], ids=["an-hour-ahead", "an-hour-behind"])
def test_a_client_an_hour_off_sees_the_server_times(
    redis_server: RedisServer, client: Any, admin: Any, queue_name: str, skew: int
) -> None:
    import redis

    raw = redis.Redis.from_url(redis_server.url)
    admin.create_queue(queue_name, lock_duration=LOCK)
    before = server_ms(raw)
    client.get_queue_sender(queue_name).send_messages(
        ServiceBusMessage("from the right clock", time_to_live=timedelta(seconds=60))
    )
    env = {**os.environ, **offset_env(skew), "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.reliability.skewed_client", redis_server.url, queue_name, str(HOLD)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # while the skewed client holds both locks, nobody else gets the messages
        assert proc.stderr is not None
        assert json.loads(proc.stderr.readline()) == {"received": 2}
        with client.get_queue_receiver(queue_name) as other:
            deadline = time.monotonic() + HOLD - 0.5
            while time.monotonic() < deadline:
                assert other.receive_messages(1, max_wait_time=0.2) == []
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    after = server_ms(raw)
    report = json.loads(out)
    assert abs(report["local_clock_ms"] - (before + skew * 1000)) < 60_000, "the client's clock was not shifted"
    msgs = {m["body"]: m for m in report["messages"]}
    assert set(msgs) == {"from the right clock", "from the skewed client"}
    for m in msgs.values():
        assert m["renew_error"] is None
        # the second came from the prefetch buffer, its lock judged by the server's clock: had the
        # client judged it by its own clock, an hour ahead, it would have dropped it as elapsed and
        # got it again only once the lock elapsed, as a redelivery
        assert m["delivery_count"] == 0
        assert before <= m["enqueued_ms"] <= after, "an enqueue time from the client's clock"
        assert m["expires_ms"] - m["enqueued_ms"] == 60_000
        assert before + 1_000 <= m["first_locked_until_ms"] <= after + 1_000, "a lock time from the client's clock"
        assert m["locked_until_ms"] >= m["first_locked_until_ms"] + 2_000, "the renewer did not keep the lock"
    props = admin.get_queue_runtime_properties(queue_name)
    assert props.total_message_count == 0 and props.dead_letter_message_count == 0
