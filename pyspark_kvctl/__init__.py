"""Makes ``spark.read.format("kvctl")`` work in any Spark job with kvctl installed.

Spark (4.0+) imports every top-level module whose name starts with ``pyspark_``
and registers its ``DefaultSource`` under the source's name.
"""

from kvctl.spark.datasource import KvctlDataSource as DefaultSource

__all__ = ["DefaultSource"]
