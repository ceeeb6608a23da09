#!/usr/bin/env python
"""dlq_export: write a queue's dead-letter subqueue to Parquet (a snapshot; nothing is removed).

    spark-submit spark_jobs/dlq_export.py --url redis://host:6379/0 --entity orders \
        --out /data/orders-dlq [--where "deadLetterReason = 'HandlerError'"] [--mode overwrite]

The columns are the data source's (body, messageId, deadLetterReason, deadLetterErrorDescription,
enqueuedTime, applicationProperties, ...).
"""

from __future__ import annotations

import argparse
import sys

from sbredis.spark._dlq import export
from sbredis.spark._jobs import session


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="dlq_export", description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="redis://host:port/db")
    ap.add_argument("--entity", required=True, help="queue or subscription path (its DLQ is exported)")
    ap.add_argument("--out", required=True, help="the Parquet output path")
    ap.add_argument("--where", help="a Spark SQL condition on the columns, e.g. \"subject = 'x'\"")
    ap.add_argument("--mode", default="errorifexists", choices=("errorifexists", "overwrite", "append"))
    ap.add_argument("--master", help="Spark master when not given by spark-submit, e.g. local[2]")
    ap.add_argument("--remote", help="Spark Connect instead: sc://host:port, or local[2] for a local server")
    args = ap.parse_args(argv)
    spark = session("sbredis-dlq-export", args.master, args.remote)
    try:
        summary = export(spark, args.url, args.entity, args.out, mode=args.mode, where=args.where)
    finally:
        spark.stop()
    print(summary.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
