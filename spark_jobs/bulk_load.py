#!/usr/bin/env python
"""bulk_load: send the rows of Parquet, JSON or CSV files to a queue, one message per row.

    spark-submit spark_jobs/bulk_load.py --url redis://host:6379/0 --entity orders \
        --input /data/orders.parquet [--input more.parquet] [--rename payload:body] \
        [--reject-path /data/rejects]

Rows need a body column (rename one with --rename old:new); optional columns are messageId,
partitionKey, sessionId, applicationProperties, timeToLive, scheduledEnqueueTime, contentType,
correlationId, subject. A bad row fails the job naming the row, or with --reject-path is written
there as a JSON line. With messageId and duplicate detection on the queue, running the job again
after a failure adds no duplicates.
"""

from __future__ import annotations

import argparse
import sys

from sbredis.spark._bulk import FORMATS, bulk_load
from sbredis.spark._jobs import session


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bulk_load", description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="redis://host:port/db")
    ap.add_argument("--entity", required=True, help="a queue or topic")
    ap.add_argument("--input", required=True, action="append", help="a file or directory (repeatable)")
    ap.add_argument("--format", choices=FORMATS, help="default: from the first input's extension")
    ap.add_argument("--rename", action="append", default=[], help="old:new column rename (repeatable)")
    ap.add_argument("--reject-path", help="write bad rows here as JSON lines instead of failing")
    ap.add_argument("--send-batch-size", type=int, default=500, help="messages per send (default 500)")
    ap.add_argument("--partitions", type=int, help="repartition the input into this many tasks")
    ap.add_argument("--limit", type=int, help="load only this many rows (a trial run)")
    ap.add_argument("--master", help="Spark master when not given by spark-submit, e.g. local[2]")
    ap.add_argument("--remote", help="Spark Connect instead: sc://host:port, or local[2] for a local server")
    args = ap.parse_args(argv)
    rename = dict(r.split(":", 1) for r in args.rename)
    spark = session("sbredis-bulk-load", args.master, args.remote)
    try:
        summary = bulk_load(
            spark,
            args.url,
            args.entity,
            args.input,
            fmt=args.format,
            rename=rename,
            reject_path=args.reject_path,
            send_batch_size=args.send_batch_size,
            partitions=args.partitions,
            limit=args.limit,
        )
    finally:
        spark.stop()
    print(summary.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
