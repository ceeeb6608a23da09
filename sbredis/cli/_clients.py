"""The clients a command uses (from --url) and entity paths as the commands take them."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .. import ServiceBusClient
from .._core.keys import SUBSCRIPTIONS
from ..management import ServiceBusAdministrationClient
from ._registry import UsageError, require_url

# A command line gives up sooner than a service: two quick retries of retryable errors.
OPTIONS: dict[str, Any] = {"retry_total": 2, "retry_backoff_factor": 0.2, "socket_timeout": 10.0}


@contextmanager
def admin(args: argparse.Namespace) -> Iterator[ServiceBusAdministrationClient]:
    with ServiceBusAdministrationClient.from_connection_string(require_url(args), **OPTIONS) as a:
        yield a


@contextmanager
def client(args: argparse.Namespace) -> Iterator[ServiceBusClient]:
    with ServiceBusClient.from_connection_string(require_url(args), **OPTIONS) as c:
        yield c


def split(path: str) -> tuple[str, str | None]:
    """(queue or topic, None) or (topic, subscription) for ``TOPIC/Subscriptions/SUB`` or ``TOPIC:SUB``
    (entity names cannot contain ':' nor '/Subscriptions/')."""
    if ":" in path:
        topic, _, sub = path.partition(":")
        return topic, sub
    i = path.lower().find(SUBSCRIPTIONS.lower())
    if i >= 0:
        return path[:i], path[i + len(SUBSCRIPTIONS) :]
    return path, None


def receiver(c: ServiceBusClient, path: str, **kwargs: Any) -> Any:
    """A receiver for a queue or a subscription path."""
    topic, sub = split(path)
    if not topic or sub == "":
        raise UsageError(f"{path!r} is not QUEUE, TOPIC/Subscriptions/SUB or TOPIC:SUB")
    if sub is None:
        return c.get_queue_receiver(topic, **kwargs)
    return c.get_subscription_receiver(topic, sub, **kwargs)
