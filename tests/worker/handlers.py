"""Handlers and an App for the `sbredis worker` subprocess tests (they record into SBREDIS_TEST_REDIS)."""

from __future__ import annotations

import os
import time

import redis

from sbredis import ServiceBusReceivedMessage
from sbredis.worker import App

_log = redis.Redis.from_url(os.environ.get("SBREDIS_TEST_REDIS", "redis://127.0.0.1:6379/0"))
KEY = os.environ.get("SBREDIS_TEST_KEY", "worker-log")


def handle(message: ServiceBusReceivedMessage) -> None:
    """`sleep <seconds>` sleeps, `fail` raises KeyError, anything else is recorded."""
    body = message.body_bytes.decode()
    _log.rpush(KEY, f"start {body} {message.delivery_count + 1}")
    if body.startswith("sleep"):
        time.sleep(float(body.split()[1]))
    if body == "fail":
        raise KeyError(body)
    _log.rpush(KEY, f"done {body}")


app = App(os.environ.get("SBREDIS_TEST_URL", "redis://127.0.0.1:6379/0"))


@app.task(entity=os.environ.get("SBREDIS_TEST_QUEUE", "tasks"), name="add")
def add(a: int, b: int) -> None:
    _log.rpush(KEY, f"add {a + b}")
