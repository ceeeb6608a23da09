"""The bulk load job: Parquet, JSON or CSV files into a queue through the ``sbredis`` sink."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from ..exceptions import InvalidArgumentError
from ._jobs import Summary, Timer, describe

FORMATS = ("parquet", "json", "csv")


def guess_format(path: str) -> str:
    """The file format from the path's extension (a directory: its first data file's)."""
    name = path.rstrip("/")
    if os.path.isdir(name):
        for entry in sorted(os.listdir(name)):
            if not entry.startswith(("_", ".")):
                return guess_format(os.path.join(name, entry))
    for fmt, exts in (("parquet", (".parquet",)), ("json", (".json", ".jsonl", ".ndjson")), ("csv", (".csv",))):
        if name.endswith(exts):
            return fmt
    raise InvalidArgumentError(f"cannot tell the format of {path!r}; pass --format parquet|json|csv")


def bulk_load(
    spark: Any,
    url: str,
    entity: str,
    paths: list[str],
    *,
    fmt: str | None = None,
    rename: dict[str, str] | None = None,
    reject_path: str | None = None,
    send_batch_size: int = 500,
    partitions: int | None = None,
    limit: int | None = None,
) -> Summary:
    """Send every row of the files as a message; messages = stored (duplicates and rejects apart).

    Raises:
        InvalidArgumentError: an unknown format; the write's errors (a bad row without
            reject_path names the row).
    """
    timer = Timer()
    fmt = fmt or guess_format(paths[0])
    if fmt not in FORMATS:
        raise InvalidArgumentError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    reader = spark.read.format(fmt)
    if fmt == "csv":
        reader = reader.option("header", "true")
    df = reader.load(paths)
    for old, new in (rename or {}).items():
        df = df.withColumnRenamed(old, new)
    if limit is not None:
        df = df.limit(limit)
    if partitions:
        df = df.repartition(partitions)
    fd, report_path = tempfile.mkstemp(prefix="sbredis-bulk-", suffix=".json")
    os.close(fd)
    try:
        w = (
            df.write.format("sbredis")
            .option("url", url)
            .option("entity", entity)
            .option("sendBatchSize", str(send_batch_size))
            .option("reportPath", report_path)
            .mode("append")
        )
        if reject_path:
            w = w.option("rejectPath", reject_path)
        describe(spark, f"sbredis bulk_load {entity}")
        w.save()
        with open(report_path, encoding="utf-8") as f:
            counts = json.load(f)
    finally:
        os.unlink(report_path)
    return Summary(
        "bulk_load",
        int(counts["sent"]),
        timer.seconds(),
        {"duplicates": int(counts["duplicates"]), "rejected": int(counts["rejected"])},
    )
