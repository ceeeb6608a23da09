#!/usr/bin/env python
"""report: message counts by entity, partition, subqueue, state, dead-letter reason and age.

    spark-submit spark_jobs/report.py --url redis://host:6379/0 [--entity orders ...] --out report/

Reads snapshots (nothing is locked or changed), prints the table and writes report.csv and
report.png (messages by state, by age and by dead-letter reason, per entity) to --out.
"""

from __future__ import annotations

import argparse
import sys

from sbredis.spark._jobs import session
from sbredis.spark._report import report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="report", description=__doc__.split("\n\n")[0])
    ap.add_argument("--url", required=True, help="redis://host:port/db")
    ap.add_argument("--entity", action="append", help="a queue or subscription path (repeatable; default: all)")
    ap.add_argument("--out", help="a directory for report.csv and report.png")
    ap.add_argument("--print-rows", type=int, default=200, help="table rows to print (all are in the CSV)")
    ap.add_argument("--master", help="Spark master when not given by spark-submit, e.g. local[2]")
    ap.add_argument("--remote", help="Spark Connect instead: sc://host:port, or local[2] for a local server")
    args = ap.parse_args(argv)
    spark = session("sbredis-report", args.master, args.remote)
    try:
        summary, _, text = report(spark, args.url, args.entity, args.out, args.print_rows)
    finally:
        spark.stop()
    print(text)
    print(summary.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
