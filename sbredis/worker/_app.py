"""App: a thin task registry over queues, in Celery's shape.

    app = App("redis://127.0.0.1:6379/0")

    @app.task(entity="orders", dead_letter_on=(ValueError,), retry=Retry(backoff=1, max_retries=5))
    def charge(order_id: int, amount: float) -> None: ...

    charge.send(17, amount=9.5)                  # a message on "orders"; returns its sequence number
    charge.send_at(when, 17, amount=9.5)          # a scheduled message
    app.worker("orders", concurrency=8).run()     # or: sbredis worker myapp:app --entity orders

A task message is an sbredis message whose ``subject`` is the task's name and whose body is JSON
``{"args": [...], "kwargs": {...}}`` (``content_type`` ``application/json``), so any sbredis client
can send or read one. Tasks may be plain or coroutine functions. The worker runs the task the
subject names; an unknown name, or an exception of the task's ``dead_letter_on`` types,
dead-letters the message (reason ``UnknownTask`` or the exception's type name). Another
exception of a task with a ``retry`` policy brings the message back after the policy's delay
(:class:`~._retry.Retry`), and dead-letters it with reason ``MaxRetriesExceeded`` when its retries
are used up; without one, the worker's ``retry`` (if any) decides.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any, Generic, ParamSpec, TypeVar

from sbredis import ServiceBusClient, ServiceBusMessage, ServiceBusReceivedMessage, ServiceBusSender
from sbredis._core.entity import check_name
from sbredis.exceptions import InvalidArgumentError, InvalidOperationError

from ._processor import DeadLetter, Worker, retries_exhausted
from ._retry import Retry, RetryAfter

P = ParamSpec("P")
R = TypeVar("R")
CONTENT_TYPE = "application/json"
_PAST = datetime(2000, 1, 1, tzinfo=UTC)


class Task(Generic[P, R]):
    """A registered function: call it to run it here, ``send`` it to run it on a worker."""

    def __init__(
        self,
        app: App,
        fn: Callable[P, R],
        name: str,
        entity: str,
        dead_letter_on: tuple[type[BaseException], ...],
        retry: Retry | None = None,
    ) -> None:
        self.app = app
        self.fn = fn
        self.name = name
        self.entity = entity
        self.dead_letter_on = dead_letter_on
        self.retry = retry
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def message(self, *args: P.args, **kwargs: P.kwargs) -> ServiceBusMessage:
        """The message that runs this task with these arguments (JSON-serializable ones).

        Raises:
            InvalidArgumentError: an argument JSON cannot encode.
        """
        try:
            body = json.dumps({"args": list(args), "kwargs": kwargs}, separators=(",", ":"))
        except (TypeError, ValueError) as e:
            raise InvalidArgumentError(f"the arguments of task {self.name!r} must be JSON-serializable: {e}") from e
        return ServiceBusMessage(body, subject=self.name, content_type=CONTENT_TYPE)

    def send(self, *args: P.args, **kwargs: P.kwargs) -> int:
        """Send the task to its queue; returns the message's sequence number once Redis stored it.

        Raises:
            As ServiceBusSender.send_messages.
        """
        # send_messages returns None (the Azure SDK's shape); a schedule time in the past stores
        # the message as available at once, and schedule_messages returns its sequence number
        (seq,) = self.app.sender(self.entity).schedule_messages(self.message(*args, **kwargs), _PAST)
        return seq

    def send_at(self, schedule_time_utc: datetime, *args: P.args, **kwargs: P.kwargs) -> int:
        """Schedule the task for `schedule_time_utc`; returns the scheduled message's sequence number
        (for ``cancel_scheduled_messages``)."""
        (seq,) = self.app.sender(self.entity).schedule_messages(self.message(*args, **kwargs), schedule_time_utc)
        return seq

    def __repr__(self) -> str:
        return f"<Task {self.name} on {self.entity!r}>"


class App:
    """A registry of tasks by queue, with one sync client for sending (made on first send).

    Keyword options go to ``ServiceBusClient.from_connection_string`` (and to the workers).
    """

    def __init__(self, url: str, **client_options: Any) -> None:
        self.url = url
        self.client_options = client_options
        self.tasks: dict[str, Task[Any, Any]] = {}
        self._client: ServiceBusClient | None = None
        self._senders: dict[str, ServiceBusSender] = {}
        self._lock = threading.Lock()

    def task(
        self,
        *,
        entity: str,
        name: str | None = None,
        dead_letter_on: type[BaseException] | Iterable[type[BaseException]] = (),
        retry: Retry | None = None,
    ) -> Callable[[Callable[P, R]], Task[P, R]]:
        """Register a task on `entity` (``@app.task(entity="orders")``); `retry`: how a failed
        call comes back (see Retry; without one, the worker's retry policy applies).

        Raises:
            InvalidArgumentError: a bad entity name, retry policy, or a task name registered already.
        """
        check_name(entity)
        if retry is not None and not isinstance(retry, Retry):
            raise InvalidArgumentError("retry must be a sbredis.worker.Retry or None")
        kinds = (dead_letter_on,) if isinstance(dead_letter_on, type) else tuple(dead_letter_on)

        def register(f: Callable[P, R]) -> Task[P, R]:
            task_name = name or f"{f.__module__}.{f.__qualname__}"
            if task_name in self.tasks:
                raise InvalidArgumentError(f"a task named {task_name!r} is registered already")
            t = Task(self, f, task_name, entity, kinds, retry)
            self.tasks[task_name] = t
            return t

        return register

    @property
    def entities(self) -> list[str]:
        return sorted({t.entity for t in self.tasks.values()})

    def handler(self, entity: str) -> Callable[[ServiceBusReceivedMessage], Any]:
        """The worker handler for `entity`: runs the task a message's subject names."""
        tasks = {n: t for n, t in self.tasks.items() if t.entity == entity}

        def run(message: ServiceBusReceivedMessage) -> Any:
            task = tasks.get(message.subject or "")
            if task is None:
                raise DeadLetter("UnknownTask", f"no task named {message.subject!r} on {entity!r}")
            try:
                call = json.loads(message.body_bytes or b"")
                args, kwargs = call.get("args", []), call.get("kwargs", {})
            except (ValueError, AttributeError) as e:
                raise DeadLetter("BadTaskMessage", f"the body is not a task call: {e}") from e
            if inspect.iscoroutinefunction(task.fn):
                return _guard_async(task, message, task.fn(*args, **kwargs))
            try:
                return task.fn(*args, **kwargs)
            except Exception as e:
                raise _instruction(task, message, e) from e

        run.__name__ = f"handler[{entity}]"
        return run

    def worker(self, entity: str | None = None, **options: Any) -> Worker:
        """A Worker running this app's tasks of `entity` (optional when they all use one queue).

        Raises:
            InvalidOperationError: no entity given and the tasks use several (or none).
        """
        if entity is None:
            if len(self.entities) != 1:
                raise InvalidOperationError(f"name the queue to work on; this app's tasks use {self.entities}")
            entity = self.entities[0]
        return Worker(self.url, self.handler(entity), entity=entity, **{**self.client_options, **options})

    def sender(self, entity: str) -> ServiceBusSender:
        """The app's sender to `entity`, which its tasks' send() and send_at() share (made on first
        use; close() closes it)."""
        with self._lock:
            if self._client is None:
                self._client = ServiceBusClient.from_connection_string(self.url, **self.client_options)
            sender = self._senders.get(entity)
            if sender is None:
                sender = self._senders[entity] = self._client.get_queue_sender(entity)
            return sender

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
            self._senders.clear()
        if client is not None:
            client.close()

    def __enter__(self) -> App:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"App(tasks={len(self.tasks)}, entities={self.entities})"


async def _guard_async(task: Task[Any, Any], message: ServiceBusReceivedMessage, coro: Any) -> Any:
    try:
        return await coro
    except Exception as e:
        raise _instruction(task, message, e) from e


def _instruction(task: Task[Any, Any], message: ServiceBusReceivedMessage, error: Exception) -> Exception:
    """What the worker should do with `message` after `task` raised `error`: a DeadLetter, a
    RetryAfter (the task's retry policy), or `error` itself (the worker's own policy)."""
    if isinstance(error, (DeadLetter, RetryAfter)):
        return error
    if task.dead_letter_on and isinstance(error, task.dead_letter_on):
        return DeadLetter(type(error).__name__, str(error)[:4096])
    if task.retry is None:
        return error
    dc = message.delivery_count + 1  # the attempt number: delivery_count counts the ones before
    if task.retry.exhausted(dc):
        return DeadLetter(*retries_exhausted(dc, error))
    return RetryAfter(task.retry.delay(dc), repr(error))
