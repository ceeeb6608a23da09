"""The demo: a partitioned queue, sends, peek-lock receives, an abandon, a dead-letter, an expiry."""

from __future__ import annotations

import time
from datetime import timedelta

from . import ServiceBusClient, ServiceBusMessage, ServiceBusSubQueue
from .exceptions import MessagingEntityNotFoundError
from .management import ServiceBusAdministrationClient

QUEUE = "demo-orders"


def _counts(admin: ServiceBusAdministrationClient, title: str) -> None:
    p = admin.get_queue_runtime_properties(QUEUE)
    per = " ".join(f"{x.active_message_count}" for x in p.partitions)
    print(
        f"  [{title}] active={p.active_message_count} dead_letter={p.dead_letter_message_count} "
        f"scheduled={p.scheduled_message_count} total={p.total_message_count} size={p.size_in_bytes}B"
        f"  per-partition active: {per}"
    )


def run(url: str) -> int:
    admin = ServiceBusAdministrationClient.from_connection_string(url)
    client = ServiceBusClient.from_connection_string(url)
    try:
        try:
            admin.delete_queue(QUEUE)
        except MessagingEntityNotFoundError:
            pass
        admin.create_queue(
            QUEUE,
            enable_partitioning=True,
            partition_count=4,
            max_delivery_count=2,
            lock_duration=timedelta(seconds=5),
            dead_lettering_on_message_expiration=True,
        )
        print(f"created queue {QUEUE!r}: 4 partitions, max_delivery_count=2, dead-lettering on expiry")

        with client.get_queue_sender(QUEUE) as sender:
            sender.send_messages([ServiceBusMessage(f"order {i}", partition_key=f"customer-{i % 3}") for i in range(8)])
            sender.send_messages(ServiceBusMessage("flash sale", time_to_live=timedelta(milliseconds=300)))
        print("sent 8 orders (3 partition keys) and 1 message with a 300 ms time to live")
        _counts(admin, "after send")

        time.sleep(0.4)  # let the flash sale expire
        with client.get_queue_receiver(QUEUE, max_wait_time=1) as receiver:
            msgs = receiver.receive_messages(max_message_count=8, max_wait_time=2)
            print(f"received {len(msgs)} messages with peek-lock: " + ", ".join(str(m) for m in msgs))
            first, second, rest = msgs[0], msgs[1], msgs[2:]
            receiver.abandon_message(first)
            print(f"abandoned {str(first)!r} (delivery_count {first.delivery_count}); it is available again")
            receiver.dead_letter_message(second, reason="InvalidOrder", error_description="no such product")
            print(f"dead-lettered {str(second)!r} with reason 'InvalidOrder'")
            receiver.complete_messages(rest)
            print(f"completed {len(rest)} messages")
            [again] = receiver.receive_messages(1, max_wait_time=2)
            print(f"received {str(again)!r} again, delivery_count {again.delivery_count}; abandoning it once more")
            receiver.abandon_message(again)  # second delivery: max_delivery_count reached
        _counts(admin, "after settlement")

        with client.get_queue_receiver(QUEUE, sub_queue=ServiceBusSubQueue.DEAD_LETTER) as dlq:
            for m in dlq.receive_messages(10, max_wait_time=1):
                print(f"  dead-letter: {str(m)!r:14} reason={m.dead_letter_reason}")
                dlq.complete_message(m)
        _counts(admin, "after draining the dead-letter subqueue")
        admin.delete_queue(QUEUE)
        return 0
    finally:
        client.close()
        admin.close()
