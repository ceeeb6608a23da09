#!/usr/bin/env python
"""consume: drain a queue with peek-lock on a Spark cluster, calling a handler per message.

    spark-submit [--py-files my_handlers.py] spark_jobs/consume.py \
        --url redis://host:6379/0 --entity orders --handler my_handlers:handle

Each Spark task takes broker partitions and receives up to --batch-size messages at a time from
each; a handler that returns completes the message, one that raises abandons it (and, on the
message's last allowed delivery, dead-letters it with reason HandlerError). Locks are renewed
(sbredis.AutoLockRenewer) while the handler works, up to --max-renewal seconds per message. A
task asks its partitions in turn and stops when none had a message for --idle-seconds.
"""

from __future__ import annotations

import argparse
import sys

from sbredis.spark._consume import consume
from sbredis.spark._jobs import session


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="consume", description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="redis://host:port/db")
    ap.add_argument("--entity", required=True, help="a queue or subscription (<topic>/Subscriptions/<name>)")
    ap.add_argument("--handler", required=True, help="module:function called with each message")
    ap.add_argument("--batch-size", type=int, default=100, help="messages per receive (default 100)")
    ap.add_argument("--idle-seconds", type=float, default=2.0, help="stop a partition after this long empty")
    ap.add_argument("--max-deliveries", type=int, help="dead-letter a failure at this delivery (default: the queue's)")
    ap.add_argument("--max-renewal", type=float, default=3600.0, help="renew a lock for at most this long (s)")
    ap.add_argument("--tasks", type=int, help="Spark tasks (default: Spark's default parallelism)")
    ap.add_argument("--master", help="Spark master when not given by spark-submit, e.g. local[2]")
    ap.add_argument("--remote", help="Spark Connect instead: sc://host:port, or local[2] for a local server")
    args = ap.parse_args(argv)
    spark = session("sbredis-consume", args.master, args.remote)
    try:
        summary = consume(
            spark,
            args.url,
            args.entity,
            args.handler,
            batch_size=args.batch_size,
            idle_seconds=args.idle_seconds,
            max_deliveries=args.max_deliveries,
            tasks=args.tasks,
            max_renewal=args.max_renewal,
        )
    finally:
        spark.stop()
    print(summary.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
