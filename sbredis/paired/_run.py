"""``run_syphon``: a syphon in this process, until SIGINT or SIGTERM (what ``sbredis syphon`` runs)."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from ._core import PairedNamespaceMetrics, SendAvailabilityPairedNamespaceOptions


def run_syphon(
    primary_url: str,
    secondary_url: str,
    backlog_queue_count: int = 10,
    *,
    poll_interval: timedelta | float = 1.0,
    duration: float | None = None,
    on_start: Callable[[], None] | None = None,
    **client_options: Any,
) -> PairedNamespaceMetrics:
    """Run a syphon in this process until SIGINT or SIGTERM (or `duration` seconds, or until a
    side of the pairing faults): backlog messages in `secondary_url` move to their destinations in
    `primary_url`. Several syphons may run at once (each backlog queue is moved by one at a time).
    `client_options` go to the primary's ServiceBusClient (retry_total, socket_timeout, ...);
    `on_start` is called once the syphon runs (and SIGINT / SIGTERM stop it). Returns the pairing's
    metrics.

    Raises:
        InvalidArgumentError: bad options.
    """
    options = SendAvailabilityPairedNamespaceOptions(
        secondary=secondary_url,
        backlog_queue_count=backlog_queue_count,
        enable_syphon=True,
        syphon_poll_interval=poll_interval
        if isinstance(poll_interval, timedelta)
        else timedelta(seconds=poll_interval),
    )
    return asyncio.run(_syphon(primary_url, options, duration, on_start, client_options))


async def _syphon(
    primary_url: str,
    options: SendAvailabilityPairedNamespaceOptions,
    duration: float | None,
    on_start: Callable[[], None] | None,
    client_options: dict[str, Any],
) -> PairedNamespaceMetrics:
    from ..aio import ServiceBusClient  # the client imports this package

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):  # not the main thread
            loop.add_signal_handler(sig, stop.set)
    async with ServiceBusClient(primary_url, paired_namespace=options, **client_options) as client:
        paired = client.paired_namespace
        assert paired is not None
        # a secondary that is not there yet is logged: the syphon keeps trying
        await paired.start_syphon(wait_for_secondary=True)
        if on_start is not None:
            on_start()
        deadline = None if duration is None else loop.time() + duration
        while not stop.is_set() and paired.syphon_running:
            wait = 0.5 if deadline is None else min(0.5, deadline - loop.time())
            if wait <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), wait)
        return paired.metrics
