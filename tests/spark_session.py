"""The one local Spark session the test run shares (fixture ``spark`` in conftest.py).

Starting Spark takes seconds, so every Spark test uses this session: local[2],
small memory, workers importing this checkout (``kvctl.spark.session`` puts the
repository root on ``PYTHONPATH``), and PostgreSQL's JDBC driver when it is installed
(for the export benchmark's smoke test).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from typing import Any

_session: Any = None
JDBC_JAR = "/usr/share/java/postgresql.jar"


def need_spark() -> None:
    """Skip (or fail under KVCTL_REQUIRE_ALL=1) when Java or pyspark is missing."""
    from conftest import need

    need("Spark", importlib.util.find_spec("pyspark") is not None, "pyspark is not installed")
    need("Spark", shutil.which("java") is not None, "no java on PATH (Spark needs Java 17+)")


def start() -> Any:
    """The shared session, started on first use (see :func:`need_spark`)."""
    global _session
    need_spark()
    if _session is None:
        from kvctl.spark.session import spark_session

        conf = {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"}
        if os.path.exists(JDBC_JAR):
            conf["spark.jars"] = JDBC_JAR
        _session = spark_session("local[2]", app_name="kvctl-tests", conf=conf)
    return _session
