"""The Celery app the worker subprocesses of test_celery_worker.py run (configured from the environment).

SBREDIS_TEST_BROKER: the sbredis:// broker URL; SBREDIS_TEST_REDIS: a redis:// URL where tasks
record what they did; SBREDIS_TEST_QUEUE: the task queue; SBREDIS_TEST_IDLE: the transport's
auto_delete_on_idle (seconds), if set.
"""

from __future__ import annotations

import os
import time
from typing import Any

import redis
from celery import Celery, Task

import sbredis.contrib.celery  # noqa: F401  (registers sbredis://)


def create_app(broker: str, queue: str) -> Celery:
    app = Celery("sbredis_test", broker=broker)
    idle = os.environ.get("SBREDIS_TEST_IDLE")
    app.conf.update(
        task_default_queue=queue,
        task_acks_late=True,
        task_acks_on_failure_or_timeout=False,  # a failed task is rejected: dead-lettered
        task_reject_on_worker_lost=True,
        worker_lost_wait=1.0,  # how long a prefork worker waits for a killed child's result
        worker_prefetch_multiplier=1,
        broker_connection_retry_on_startup=True,
        broker_transport_options={
            "queue_properties": {"lock_duration": 1, "max_delivery_count": 3},
            **({"auto_delete_on_idle": float(idle)} if idle else {}),
        },
        worker_hijack_root_logger=False,
    )
    return app


app = create_app(
    os.environ.get("SBREDIS_TEST_BROKER", "sbredis://127.0.0.1:6379/0"), os.environ.get("SBREDIS_TEST_QUEUE", "celery")
)
_log = redis.Redis.from_url(os.environ.get("SBREDIS_TEST_REDIS", "redis://127.0.0.1:6379/0"))


def record(key: str, *parts: Any) -> None:
    _log.rpush(key, " ".join(str(p) for p in parts))


@app.task(name="t.ok")
def ok(key: str, value: str) -> str:
    record(key, value)
    return value


@app.task(name="t.flaky", bind=True)
def flaky(self: Task, key: str) -> None:
    record(key, "try", self.request.retries)
    if self.request.retries == 0:
        raise self.retry(countdown=0.5)


@app.task(name="t.boom")
def boom(key: str) -> None:
    record(key, "boom")
    raise ValueError("boom")


@app.task(name="t.sleepy", bind=True)
def sleepy(self: Task, key: str, seconds: float) -> None:
    record(key, "start", os.getpid(), self.request.delivery_info.get("redelivered"))
    time.sleep(seconds)
    record(key, "done")


@app.task(name="t.slow", bind=True)
def slow(self: Task, key: str) -> None:
    redelivered = bool(self.request.delivery_info.get("redelivered"))
    record(key, "start", os.getpid(), redelivered, self.request.delivery_info.get("delivery_count"))
    if not redelivered:
        time.sleep(60)  # killed meanwhile
    record(key, "done", os.getpid())
