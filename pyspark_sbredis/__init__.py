"""PySpark's data source lookup imports top-level ``pyspark_*`` modules and registers their
``DefaultSource``: this one makes ``spark.read.format("sbredis")`` work once sbredis is installed."""

from sbredis.spark import DefaultSource

__all__ = ["DefaultSource"]
