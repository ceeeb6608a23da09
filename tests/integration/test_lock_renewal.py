"""AutoLockRenewer (sync and async) and prefetch_count, against a real Redis with 1 s locks."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from typing import Any

import pytest

import sbredis
import sbredis.aio
import sbredis.aio.management
import sbredis.management
from sbredis import ServiceBusClient, ServiceBusMessage
from sbredis.exceptions import (
    AutoLockRenewFailed,
    AutoLockRenewTimeout,
    InvalidArgumentError,
    InvalidOperationError,
    MessageLockLostError,
)
from tests.conftest import eventually

pytestmark = [pytest.mark.integration, pytest.mark.conformance]
LOCK = timedelta(seconds=1)


def test_renewer_keeps_a_lock_for_three_lock_durations(client: ServiceBusClient, make_queue: Any, sb_api: Any) -> None:
    q = make_queue(lock_duration=LOCK)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("long job"))
    with sb_api.AutoLockRenewer() as renewer, client.get_queue_receiver(q, max_wait_time=0.2) as r:
        (m,) = r.receive_messages(1, max_wait_time=2)
        renewer.register(r, m, max_lock_renewal_duration=30)
        first_until = m.locked_until_utc
        deadline = time.monotonic() + 3
        with client.get_queue_receiver(q) as other:
            while time.monotonic() < deadline:  # nobody else gets it meanwhile
                assert other.receive_messages(1, max_wait_time=0.3) == []
        assert m.locked_until_utc > first_until
        r.complete_message(m)
        assert m.auto_renew_error is None


def test_a_lock_is_renewed_when_a_third_of_it_is_left_not_before(
    client: ServiceBusClient, make_queue: Any, sb_api: Any
) -> None:
    q = make_queue(lock_duration=timedelta(seconds=3))
    client.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
    with sb_api.AutoLockRenewer() as renewer, client.get_queue_receiver(q) as r:
        (m,) = r.receive_messages(1, max_wait_time=2)
        first = m.locked_until_utc
        renewer.register(r, m)
        time.sleep(1)
        assert m.locked_until_utc == first  # 2 s of 3 left: no renewal yet
        eventually(lambda: m.locked_until_utc > first, timeout=5)  # renewed with 1 s left
        r.complete_message(m)


def test_receiver_option_registers_every_message(client: ServiceBusClient, make_queue: Any, sb_api: Any) -> None:
    q = make_queue(lock_duration=LOCK)
    client.get_queue_sender(q).send_messages([ServiceBusMessage(str(i)) for i in range(5)])
    renewer = sb_api.AutoLockRenewer(max_lock_renewal_duration=30)
    with client.get_queue_receiver(q, auto_lock_renewer=renewer) as r:
        got = []
        while len(got) < 5:
            got += r.receive_messages(5, max_wait_time=2)
        time.sleep(2.5)  # 2.5 lock durations with the work "running"
        r.complete_messages(got)  # would raise MessageLockLostError had a lock elapsed
    renewer.close()


def test_failure_callback_gets_the_message_and_the_error(
    client: ServiceBusClient, make_queue: Any, sb_api: Any
) -> None:
    q = make_queue(lock_duration=LOCK)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
    failures: list[tuple[Any, Any]] = []
    with (
        sb_api.AutoLockRenewer(on_lock_renew_failure=lambda m, e: failures.append((m, e))) as renewer,
        client.get_queue_receiver(q) as r,
    ):
        (m,) = r.receive_messages(1, max_wait_time=2)
        with client.get_queue_receiver(q) as thief:
            eventually(lambda: thief.receive_messages(1, max_wait_time=0.2), timeout=5)  # lock elapsed, taken
        renewer.register(r, m)
        eventually(lambda: failures, timeout=3)
    (msg, err), *_ = failures
    assert msg is m
    assert isinstance(err, AutoLockRenewFailed) and isinstance(err.error, MessageLockLostError)
    assert m.auto_renew_error is err


def test_a_failure_callback_that_raises_is_logged_and_renewal_goes_on(
    client: ServiceBusClient, make_queue: Any, sb_api: Any, caplog: pytest.LogCaptureFixture
) -> None:
    q = make_queue(lock_duration=LOCK)
    sender = client.get_queue_sender(q)
    sender.send_messages(ServiceBusMessage("lost"))
    called: list[Any] = []

    def on_failure(m: Any, e: Any) -> None:
        called.append(m)
        raise RuntimeError("a bug in the callback")

    with (
        caplog.at_level(logging.ERROR, "sbredis"),
        sb_api.AutoLockRenewer(on_lock_renew_failure=on_failure) as renewer,
        client.get_queue_receiver(q) as r,
    ):
        (lost,) = r.receive_messages(1, max_wait_time=2)
        with client.get_queue_receiver(q) as thief:
            eventually(lambda: thief.receive_messages(1, max_wait_time=0.2), timeout=5)  # lock elapsed, taken
        renewer.register(r, lost)
        eventually(lambda: called, timeout=3)
        eventually(lambda: "on_lock_renew_failure raised" in caplog.text, timeout=3)
        # the renewer outlives its callback's error: a later message stays locked past its lock duration
        sender.send_messages(ServiceBusMessage("kept"))
        (kept,) = r.receive_messages(1, max_wait_time=5)
        renewer.register(r, kept)
        time.sleep(2.5 * LOCK.total_seconds())
        r.complete_message(kept)
    assert called == [lost]


def test_max_renewal_duration_lets_the_lock_elapse(client: ServiceBusClient, make_queue: Any, sb_api: Any) -> None:
    q = make_queue(lock_duration=LOCK)
    client.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
    failures: list[Any] = []
    with (
        sb_api.AutoLockRenewer(max_lock_renewal_duration=0.5, on_lock_renew_failure=failures.append) as renewer,
        client.get_queue_receiver(q) as r,
    ):
        (m,) = r.receive_messages(1, max_wait_time=2)
        renewer.register(r, m)
        with client.get_queue_receiver(q) as other:
            again = eventually(lambda: other.receive_messages(1, max_wait_time=0.2), timeout=5)
        assert again[0].delivery_count == m.delivery_count + 1
        with pytest.raises(MessageLockLostError):
            r.complete_message(m)
    assert isinstance(m.auto_renew_error, AutoLockRenewTimeout)
    assert failures == []  # a timeout is not a failure (as in the Azure SDK)


def test_stop_renewing_lets_one_lock_elapse_and_keeps_the_others(
    client: ServiceBusClient, make_queue: Any, sb_api: Any
) -> None:
    """stop_renewing (sbredis's own: for a caller that could not settle a message) leaves that
    message's lock to elapse, so it is delivered again; the renewer goes on with the others."""
    q = make_queue(lock_duration=LOCK)
    client.get_queue_sender(q).send_messages([ServiceBusMessage("stopped"), ServiceBusMessage("kept")])
    with sb_api.AutoLockRenewer(max_lock_renewal_duration=30) as renewer, client.get_queue_receiver(q) as r:
        got = r.receive_messages(2, max_wait_time=2)
        stopped, kept = sorted(got, key=lambda m: str(m) != "stopped")
        renewer.register(r, stopped)
        renewer.register(r, kept)
        renewer.stop_renewing(stopped)
        renewer.stop_renewing(stopped)  # again: nothing happens
        with client.get_queue_receiver(q) as other:
            again = eventually(lambda: other.receive_messages(2, max_wait_time=0.2), timeout=5)
            assert [str(m) for m in again] == ["stopped"] and again[0].delivery_count == 1
            other.complete_messages(again)
        r.complete_message(kept)  # still locked: renewed all along
        with pytest.raises(MessageLockLostError):
            r.complete_message(stopped)


def test_max_renewal_duration_ends_on_time_between_renewals(
    client: ServiceBusClient, make_queue: Any, sb_api: Any
) -> None:
    q = make_queue(lock_duration=timedelta(seconds=3))  # the first renewal would be 2 s in
    client.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
    with sb_api.AutoLockRenewer(max_lock_renewal_duration=0.1) as renewer, client.get_queue_receiver(q) as r:
        (m,) = r.receive_messages(1, max_wait_time=2)
        first = m.locked_until_utc
        renewer.register(r, m)
        # at 0.1 s, not when the renewer next wakes for the lock (at most 1 s: IDLE_WAIT)
        eventually(lambda: m.auto_renew_error is not None, timeout=0.7)
        assert isinstance(m.auto_renew_error, AutoLockRenewTimeout)
        assert m.locked_until_utc == first
        r.complete_message(m)  # the lock itself is still held


def test_register_rejects_what_holds_no_lock(client: ServiceBusClient, make_queue: Any, sb_api: Any) -> None:
    q = make_queue()
    client.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
    renewer = sb_api.AutoLockRenewer()
    with client.get_queue_receiver(q) as r:
        (peeked,) = r.peek_messages(1)
        with pytest.raises(InvalidOperationError):
            renewer.register(r, peeked)
        with pytest.raises(InvalidArgumentError):
            renewer.register(r, ServiceBusMessage("not received"))
        with pytest.raises(InvalidArgumentError):
            sb_api.AutoLockRenewer(max_lock_renewal_duration=0)
        (m,) = r.receive_messages(1, max_wait_time=2)
        with pytest.raises(InvalidArgumentError):
            renewer.register(r, m, on_lock_renew_failure="not callable")
        renewer.register(r, m, on_lock_renew_failure=lambda msg, e: None, max_lock_renewal_duration=5)
        r.complete_message(m)
        with pytest.raises(InvalidOperationError):  # settled: its lock is gone
            renewer.register(r, m)
        renewer.close()
        with pytest.raises(InvalidOperationError):
            renewer.register(r, m)


def test_async_renewer(url: str, make_queue: Any) -> None:
    q = make_queue(lock_duration=LOCK)

    async def main() -> None:
        async with sbredis.aio.ServiceBusClient.from_connection_string(url) as c:
            await c.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
            failures: list[Any] = []

            async def on_failure(m: Any, e: Any) -> None:
                failures.append(e)

            async with (
                sbredis.aio.AutoLockRenewer(on_lock_renew_failure=on_failure) as renewer,
                c.get_queue_receiver(q, auto_lock_renewer=renewer) as r,
            ):
                (m,) = await r.receive_messages(1, max_wait_time=2)
                await asyncio.sleep(2.5)
                await r.complete_message(m)
            assert failures == []

    asyncio.run(main())


def test_async_failure_callback_is_awaited_and_its_error_logged(
    url: str, make_queue: Any, caplog: pytest.LogCaptureFixture
) -> None:
    q = make_queue(lock_duration=LOCK)

    async def main() -> list[Any]:
        awaited: list[Any] = []

        async def on_failure(m: Any, e: Any) -> None:
            await asyncio.sleep(0)
            awaited.append(e)
            raise RuntimeError("a bug in the callback")

        async with sbredis.aio.ServiceBusClient.from_connection_string(url) as c:
            await c.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
            renewer = sbredis.aio.AutoLockRenewer(on_lock_renew_failure=on_failure)
            async with c.get_queue_receiver(q) as r:
                (m,) = await r.receive_messages(1, max_wait_time=2)
                async with c.get_queue_receiver(q) as thief:
                    deadline = time.monotonic() + 5
                    while not await thief.receive_messages(1, max_wait_time=0.2):  # lock elapsed, taken
                        assert time.monotonic() < deadline
                renewer.register(r, m)
                deadline = time.monotonic() + 3
                while not awaited and time.monotonic() < deadline:
                    await asyncio.sleep(0.02)
                await renewer.close(wait=False)  # returns at once; the renewer refuses new work
                with pytest.raises(InvalidOperationError):
                    renewer.register(r, m)
        return awaited

    with caplog.at_level(logging.ERROR, "sbredis"):
        awaited = asyncio.run(main())
    assert len(awaited) == 1 and isinstance(awaited[0].error, MessageLockLostError)
    assert "on_lock_renew_failure raised" in caplog.text


def test_an_async_receiver_refuses_a_sync_renewer(url: str, make_queue: Any) -> None:
    q = make_queue(lock_duration=LOCK)
    sq = q + "-s"

    async def main() -> None:
        async with (
            sbredis.aio.management.ServiceBusAdministrationClient.from_connection_string(url) as admin,
            sbredis.aio.ServiceBusClient.from_connection_string(url) as c,
        ):
            await admin.create_queue(sq, requires_session=True)
            await admin.create_topic(q + "-t")
            await admin.create_subscription(q + "-t", "s")
            renewer = sbredis.AutoLockRenewer()
            with pytest.raises(InvalidArgumentError, match=r"sbredis\.aio\.AutoLockRenewer"):
                c.get_queue_receiver(q, auto_lock_renewer=renewer)
            with pytest.raises(InvalidArgumentError):
                c.get_subscription_receiver(q + "-t", "s", auto_lock_renewer=renewer)
            with pytest.raises(InvalidArgumentError):
                c.get_queue_receiver(sq, session_id="a", auto_lock_renewer=renewer)
            # the refused receiver took nothing: the message is there for the next one, no renewer thread
            await c.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
            async with c.get_queue_receiver(q, auto_lock_renewer=sbredis.aio.AutoLockRenewer()) as r:
                assert [str(m) for m in await r.receive_messages(1, max_wait_time=2)] == ["x"]
            assert repr(renewer) == "AutoLockRenewer(registered=0)"

    asyncio.run(main())


def test_a_sync_receiver_refuses_an_async_renewer(url: str, make_queue: Any) -> None:
    q = make_queue(lock_duration=LOCK)
    with sbredis.management.ServiceBusAdministrationClient.from_connection_string(url) as admin:
        admin.create_queue(q + "-s", requires_session=True)
    renewer = sbredis.aio.AutoLockRenewer()
    with ServiceBusClient.from_connection_string(url) as c:
        with pytest.raises(InvalidArgumentError, match=r"sbredis\.AutoLockRenewer"):
            c.get_queue_receiver(q, auto_lock_renewer=renewer)
        with pytest.raises(InvalidArgumentError):
            c.get_queue_receiver(q + "-s", session_id="a", auto_lock_renewer=renewer)
        with pytest.raises(InvalidArgumentError):
            c.get_queue_receiver(q, auto_lock_renewer=object())


def test_register_refuses_a_receiver_of_the_other_api(url: str, make_queue: Any) -> None:
    q = make_queue(lock_duration=LOCK)
    with ServiceBusClient.from_connection_string(url) as c:
        c.get_queue_sender(q).send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])

    async def main() -> None:
        async with (
            sbredis.aio.ServiceBusClient.from_connection_string(url) as ac,
            sbredis.aio.AutoLockRenewer() as renewer,
            ac.get_queue_receiver(q) as r,
        ):
            (m,) = await r.receive_messages(1, max_wait_time=2)
            with sbredis.AutoLockRenewer() as sync_renewer:
                with pytest.raises(InvalidArgumentError, match=r"sbredis\.aio\.AutoLockRenewer"):
                    sync_renewer.register(r, m)
                assert repr(sync_renewer) == "AutoLockRenewer(registered=0)"
            renewer.register(r, m)  # the matching one takes it
            assert repr(renewer) == "AutoLockRenewer(registered=1)"
            await r.complete_message(m)

    asyncio.run(main())
    with ServiceBusClient.from_connection_string(url) as c, c.get_queue_receiver(q) as r:
        (m,) = r.receive_messages(1, max_wait_time=2)
        assert str(m) == "b"

        async def register_in_a_loop() -> None:
            async with sbredis.aio.AutoLockRenewer() as renewer:
                with pytest.raises(InvalidArgumentError, match=r"sbredis\.AutoLockRenewer"):
                    renewer.register(r, m)
                assert repr(renewer) == "AutoLockRenewer(registered=0)"

        asyncio.run(register_in_a_loop())
        r.complete_message(m)


def test_prefetch_keeps_messages_locked_ahead_and_close_releases_them(
    client: ServiceBusClient, make_queue: Any, admin: Any
) -> None:
    q = make_queue()
    client.get_queue_sender(q).send_messages([ServiceBusMessage(str(i)) for i in range(10)])
    with client.get_queue_receiver(q, prefetch_count=4) as r:
        (first,) = r.receive_messages(1, max_wait_time=2)
        with client.get_queue_receiver(q) as other:
            rest = other.receive_messages(10, max_wait_time=0.3)
            assert [str(m) for m in rest] == ["5", "6", "7", "8", "9"]  # 1 handed out + 4 locked ahead
            other.abandon_messages(rest)
        nxt = r.receive_messages(2, wait=False)
        assert [str(m) for m in nxt] == ["1", "2"]  # served from what was kept ahead
        r.complete_messages([first, *nxt])
    with client.get_queue_receiver(q) as r:
        again = r.receive_messages(10, max_wait_time=1)
        counts = {int(str(m)): m.delivery_count for m in again}
        # 3 and 4 were released uncounted on close: this is their first delivery
        assert counts == {3: 0, 4: 0, 5: 1, 6: 1, 7: 1, 8: 1, 9: 1}
    assert admin.get_queue_runtime_properties(q).active_message_count == 7


def test_a_message_whose_lock_elapsed_while_locked_ahead_is_not_handed_out(
    client: ServiceBusClient, make_queue: Any
) -> None:
    """A prefetched message is handed out only while its lock holds: once it elapsed in the
    buffer, the receiver receives again and gets the redelivery (counted, with a fresh lock)."""
    q = make_queue(lock_duration=LOCK)
    client.get_queue_sender(q).send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
    with client.get_queue_receiver(q, prefetch_count=1) as r:
        (a,) = r.receive_messages(1, max_wait_time=2)  # "b" is locked ahead under the same lock
        assert a.locked_until_utc is not None
        until = a.locked_until_utc.timestamp()
        deadline = time.monotonic() + 5
        while time.time() <= until + 0.05:  # both locks elapsed (one clock: server and client share the host)
            assert time.monotonic() < deadline
            time.sleep(0.02)
        got = r.receive_messages(2, max_wait_time=2)
        assert [(str(m), m.delivery_count) for m in got] == [("a", 1), ("b", 1)]
        r.complete_messages(got)  # the fresh locks hold


def test_a_lock_due_before_the_renewers_next_pass_wakes_it(
    client: ServiceBusClient, admin: Any, make_queue: Any, sb_api: Any
) -> None:
    short = make_queue(lock_duration=LOCK)
    long_q = f"{short}-long"
    admin.create_queue(long_q, lock_duration=timedelta(seconds=60))
    for q in (short, long_q):
        client.get_queue_sender(q).send_messages(ServiceBusMessage("x"))
    with (
        sb_api.AutoLockRenewer(max_lock_renewal_duration=30) as renewer,
        client.get_queue_receiver(short) as rs,
        client.get_queue_receiver(long_q) as rl,
    ):
        (b,) = rs.receive_messages(1, max_wait_time=2)  # locked for 1 s from now
        (a,) = rl.receive_messages(1, max_wait_time=2)
        renewer.register(rl, a)  # the renewer's first pass plans the next one a second later
        time.sleep(0.05)
        renewer.register(rs, b)  # due in 2/3 s: before that pass
        time.sleep(1.5)
        rs.complete_message(b)  # MessageLockLostError had b waited for the planned pass
        rl.complete_message(a)
    admin.delete_queue(long_q)


def test_a_message_locked_ahead_is_not_dead_lettered_on_close(
    client: ServiceBusClient, make_queue: Any, admin: Any
) -> None:
    q = make_queue(max_delivery_count=5)
    client.get_queue_sender(q).send_messages([ServiceBusMessage("a"), ServiceBusMessage("b")])
    with client.get_queue_receiver(q) as r:
        for _ in range(3):
            got = r.receive_messages(2, max_wait_time=2)
            assert len(got) == 2
            r.abandon_messages(got)
    admin.update_queue(admin.get_queue(q), max_delivery_count=2)  # both are now past it
    with client.get_queue_receiver(q, prefetch_count=1) as r:
        (a,) = r.receive_messages(1, max_wait_time=2)  # "b" is locked ahead, never handed out
        r.complete_message(a)
    # released uncounted on close: its count stays 3, and an uncounted release dead-letters nothing
    assert admin.get_queue_runtime_properties(q).dead_letter_message_count == 0
    with client.get_queue_receiver(q) as r:
        (b,) = r.receive_messages(1, max_wait_time=2)
        assert (str(b), b.delivery_count) == ("b", 3)
        r.complete_message(b)
