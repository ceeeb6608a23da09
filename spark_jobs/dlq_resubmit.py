#!/usr/bin/env python
"""dlq_resubmit: send selected dead-lettered messages back to their queue, then remove them.

    spark-submit spark_jobs/dlq_resubmit.py --url redis://host:6379/0 --entity orders \
        [--reason HandlerError] [--older-than 3600] [--where "subject = 'invoice'"] [--dry-run]

A dead-lettered message is completed (removed from the dead-letter subqueue) only after its copy
was stored in the queue. A copy keeps the message id, so on a queue with duplicate detection a
message dead-lettered within the detection window would be dropped as a duplicate: it then stays
in the dead-letter subqueue (counted as duplicates_kept_in_dlq); --new-message-id avoids that.
"""

from __future__ import annotations

import argparse
import sys

from sbredis.spark._dlq import resubmit
from sbredis.spark._jobs import session


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="dlq_resubmit", description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="redis://host:port/db")
    ap.add_argument("--entity", required=True, help="the queue")
    ap.add_argument("--reason", help="only messages with this dead-letter reason")
    ap.add_argument("--older-than", type=float, help="only messages enqueued more than this many seconds ago")
    ap.add_argument("--where", help="a Spark SQL condition on the data source's columns")
    ap.add_argument("--new-message-id", action="store_true", help="give each copy a new message id")
    ap.add_argument("--batch-size", type=int, default=100, help="messages per receive (default 100)")
    ap.add_argument("--dry-run", action="store_true", help="only count what would be resubmitted")
    ap.add_argument("--master", help="Spark master when not given by spark-submit, e.g. local[2]")
    ap.add_argument("--remote", help="Spark Connect instead: sc://host:port, or local[2] for a local server")
    args = ap.parse_args(argv)
    spark = session("sbredis-dlq-resubmit", args.master, args.remote)
    try:
        summary = resubmit(
            spark,
            args.url,
            args.entity,
            reason=args.reason,
            older_than=args.older_than,
            where=args.where,
            new_message_id=args.new_message_id,
            batch_size=args.batch_size,
            dry_run=args.dry_run,
        )
    finally:
        spark.stop()
    print(summary.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
