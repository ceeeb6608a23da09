"""Celery on sbredis: importing this module registers the ``sbredis://`` broker URL scheme.

kombu has no entry point for transports, so the scheme exists once this module (or
``sbredis.contrib.kombu``) is imported, in every process that connects: the worker (import it from
the module that creates the Celery app) and every client that sends tasks or runs
``celery inspect``::

    import sbredis.contrib.celery  # noqa: F401  (registers sbredis://)
    from celery import Celery

    app = Celery("proj", broker="sbredis://127.0.0.1:6379/0")
    app.conf.task_acks_late = True                        # ack (complete) after the task ran
    app.conf.task_acks_on_failure_or_timeout = False      # a failed task is dead-lettered
    app.conf.task_reject_on_worker_lost = True
    app.conf.broker_transport_options = {"queue_properties": {"lock_duration": 30, "max_delivery_count": 5}}

Without the import, name the transport instead: ``broker_url="redis://127.0.0.1:6379/0"`` with
``broker_transport="sbredis.contrib.kombu:Transport"``.

What Celery gets (see ``sbredis.contrib.kombu`` for the whole mapping):

* With ``task_acks_late``, a task's message stays locked while the task runs, its lock renewed,
  so a long task is never given to a second worker (no visibility timeout to tune). A worker that
  is killed stops renewing: the message is delivered again once its lock elapses
  (``self.request.delivery_info["redelivered"]``), and after the queue's ``max_delivery_count``
  deliveries it goes to the dead-letter subqueue (reason ``MaxDeliveryCountExceeded``).
* ``task_acks_on_failure_or_timeout = False`` makes Celery reject a failed task without requeue:
  the message is dead-lettered (reason ``Rejected``; ``broker_transport_options["dead_letter_reason"]``
  changes it). Raising ``celery.exceptions.Reject(requeue=False)`` does the same; ``requeue=True``
  abandons it (delivered again, counted).
* ETA and countdown tasks (and ``retry(countdown=..)``) are scheduled messages: they stay in
  sbredis until their time instead of waiting unacknowledged in a worker.
* ``celery inspect`` / ``celery control`` broadcast through the fanout emulation (one copy per
  worker's ``*.celery.pidbox`` queue).
* Priorities are not supported.

Read the dead-lettered tasks with sbredis itself::

    from sbredis import ServiceBusClient, ServiceBusSubQueue
    client = ServiceBusClient.from_connection_string("redis://127.0.0.1:6379/0")
    with client.get_queue_receiver("celery", sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
        for m in dlq.peek_messages(10):
            print(m.subject, m.dead_letter_reason)   # subject is the task name
"""

from __future__ import annotations

import sys
from typing import Any

from celery import bootsteps, signals
from celery.worker.request import Request as _CeleryRequest

from .kombu import SCHEME, Transport, register

TRANSPORT = "sbredis.contrib.kombu:Transport"
REQUEST = "sbredis.contrib.celery:Request"
_DEFAULT_REQUEST = "celery.worker.request:Request"
LOST_CHILD_CHECK = 0.05  # seconds between a prefork worker's looks for the tasks of dead children


class Request(_CeleryRequest):  # type: ignore[misc]
    """Celery's task request with the Service Bus delivery count in ``delivery_info``.

    Celery copies four keys of a message's delivery_info into ``task.request.delivery_info``;
    this adds ``delivery_count`` (1 on the first delivery). A worker on sbredis:// uses it for
    every task that keeps Celery's default request class; a task with a request class of its
    own can derive it from this one.
    """

    def __init__(self, message: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(message, *args, **kwargs)
        count = (message.delivery_info or {}).get("delivery_count")
        if count is not None:
            self._delivery_info["delivery_count"] = count


class FindLostTasks(bootsteps.StartStopStep):  # type: ignore[misc]
    """A prefork worker in Celery's event loop looks for the tasks of children that died every
    LOST_CHILD_CHECK seconds, not only every 5 s (the pool's own timer).

    billiard gives a dead child's task ``worker_lost_wait`` seconds for a late result, and only
    notices that the time is up on its next look. With ``task_reject_on_worker_lost`` the task is
    then abandoned and delivered again at once, so this brings it back ``worker_lost_wait`` after
    the death instead of up to 5 s later (in Celery's blocking loop billiard's supervisor thread
    looks every 0.1 s; the event loop has no such thread).
    """

    requires = ("celery.worker.components:Pool",)

    def start(self, w: Any) -> None:
        maintain = getattr(getattr(w.pool, "_pool", None), "maintain_pool", None)
        if getattr(w, "hub", None) is not None and maintain is not None:
            w.hub.call_repeatedly(LOST_CHILD_CHECK, maintain)


def _use_request(sender: Any = None, **_: Any) -> None:
    """On a worker whose broker is sbredis, give the tasks with Celery's default request class
    this module's Request (the consumer reads ``task.Request`` when it starts, after this), and
    add FindLostTasks to its bootsteps (the worker builds them after this signal)."""
    app = getattr(sender, "app", None)
    if app is None:
        return
    with app.connection_for_read() as conn:
        if not isinstance(conn.transport, Transport):
            return
    for task in app.tasks.values():
        if task.Request == _DEFAULT_REQUEST:
            task.Request = REQUEST
    app.steps["worker"].add(FindLostTasks)


signals.worker_init.connect(_use_request, weak=False)
register()
if "flower" in sys.modules:  # celery -A proj flower: queue lengths in Flower (sbredis.contrib.flower)
    from . import flower as _flower  # noqa: F401

__all__ = ["REQUEST", "SCHEME", "TRANSPORT", "FindLostTasks", "Request", "Transport", "register"]
