"""The handler the worker-kill test runs in `sbredis worker` processes.

Each delivery is recorded (RPUSH to $SBREDIS_BATTERY_LOG: "<body> <attempt number: delivery_count + 1> <pid>") before
the handler's work ($SBREDIS_BATTERY_WORK seconds of sleep), and "done <body> <pid>" after it; a
body starting with "poison" always fails.
"""

from __future__ import annotations

import os
import time

import redis

from sbredis import ServiceBusReceivedMessage

_log = redis.Redis.from_url(os.environ["SBREDIS_BATTERY_REDIS"])
_KEY = os.environ["SBREDIS_BATTERY_LOG"]
_WORK = float(os.environ.get("SBREDIS_BATTERY_WORK", "0"))
_PID = os.getpid()


def handle(message: ServiceBusReceivedMessage) -> None:
    body = message.body_bytes.decode()
    _log.rpush(_KEY, f"{body} {message.delivery_count + 1} {_PID}")
    if body.startswith("poison"):
        raise ValueError("a poison message")
    if _WORK:
        time.sleep(_WORK)
    _log.rpush(_KEY, f"done {body} {_PID}")
