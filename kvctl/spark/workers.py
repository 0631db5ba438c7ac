"""Keeping Spark's Python worker processes cheap to run the data source in.

PySpark's daemon forks one Python worker per concurrent task and reuses it; after
every task (and every planning call: schema, partitions) it runs a full
``gc.collect()``. With pyspark, pyarrow, SQLAlchemy and a database driver imported
that walks about 100,000 long-lived objects each time: 30-60 ms of CPU, and it
writes to every page the worker shares with the daemon it was forked from. On a
1,000,000-row export that was about 0.2 CPU-seconds of the 0.45 the workers spent.
Freezing the heap once those modules are loaded moves them out of the collector's
sight (``gc.freeze``); objects made later are collected as usual.
"""

from __future__ import annotations

import gc
import os

SPARK_WORKER_VARIABLE = "PYTHON_WORKER_FACTORY_SECRET"
"""Set by Spark in the environment of every Python worker it starts (daemon or not)."""

_frozen = False


def in_spark_worker() -> bool:
    """Whether this process is a Python worker started by Spark."""
    return SPARK_WORKER_VARIABLE in os.environ


def freeze_loaded_modules() -> None:
    """In a Spark Python worker, move every object alive now into the garbage
    collector's permanent generation, once per process (call it when the provider's
    modules are loaded). Nothing changes but the work: objects alive now would have
    stayed alive anyway (only garbage already in a reference cycle, a few kilobytes
    left over from imports, is kept for good). Anywhere but in a Spark worker (a
    driver, a test) it does nothing: there the process's owner decides."""
    global _frozen
    if not _frozen and in_spark_worker():
        gc.freeze()
        _frozen = True
