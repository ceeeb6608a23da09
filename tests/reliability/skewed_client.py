"""A client process for test_clock.py, started with its wall clock shifted (libfaketime).

    python -m tests.reliability.skewed_client URL QUEUE HOLD_SECONDS

Sends one message (TTL 60 s), receives every message of the queue with prefetch and an
AutoLockRenewer, holds them HOLD_SECONDS (several lock durations), completes them, and prints one
JSON line: its own clock and the times it saw on each message (Unix ms).
"""

from __future__ import annotations

import json
import sys
import time
from datetime import timedelta

from sbredis import AutoLockRenewer, ServiceBusClient, ServiceBusMessage


def main() -> None:
    url, queue, hold = sys.argv[1], sys.argv[2], float(sys.argv[3])
    out: dict[str, object] = {"local_clock_ms": int(time.time() * 1000)}
    with ServiceBusClient.from_connection_string(url) as client:
        client.get_queue_sender(queue).send_messages(
            ServiceBusMessage("from the skewed client", time_to_live=timedelta(seconds=60))
        )
        renewer = AutoLockRenewer(max_lock_renewal_duration=60)
        with client.get_queue_receiver(queue, prefetch_count=5, auto_lock_renewer=renewer) as r:
            got = []
            deadline = time.monotonic() + 10
            while len(got) < 2 and time.monotonic() < deadline:
                got += r.receive_messages(1, max_wait_time=2)  # the second comes from the prefetch buffer
            print(json.dumps({"received": len(got)}), file=sys.stderr, flush=True)
            first_until = [m.locked_until_utc.timestamp() * 1000 for m in got]
            time.sleep(hold)
            last_until = [m.locked_until_utc.timestamp() * 1000 for m in got]  # None once settled, as in the SDK
            r.complete_messages(got)  # raises MessageLockLostError had a lock elapsed
        renewer.close()
        out["messages"] = [
            {
                "body": str(m),
                "delivery_count": m.delivery_count,
                "enqueued_ms": m.enqueued_time_utc.timestamp() * 1000,
                "expires_ms": m.expires_at_utc.timestamp() * 1000 if m.expires_at_utc else None,
                "first_locked_until_ms": first,
                "locked_until_ms": last,
                "renew_error": repr(m.auto_renew_error) if m.auto_renew_error else None,
            }
            for m, first, last in zip(got, first_until, last_until, strict=True)
        ]
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
