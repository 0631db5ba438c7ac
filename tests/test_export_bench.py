"""The Spark export benchmark still runs (tiny size; no timings are asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
JAR = "/usr/share/java/postgresql.jar"


@pytest.mark.spark
@pytest.mark.postgres
def test_export_bench_smoke(pg_server: Any) -> None:
    from conftest import need
    from pg_server import drop_schemas
    from spark_session import need_spark

    need_spark()
    need("The PostgreSQL JDBC driver", os.path.exists(JAR), "apt-get install libpostgresql-jdbc-java")
    schema = f"kvctl_bench_{uuid.uuid4().hex[:8]}"
    try:
        result = subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "export.py"),
                "--rows",
                "3000",
                "--url",
                f"{pg_server.url}?schema={schema}",
            ],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        drop_schemas(pg_server.dsn, [schema])
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    for path in ("kvctl data source", "Spark JDBC reader", "pyarrow write_table (floor)"):
        assert any(line.startswith(path) for line in lines), result.stdout
    assert any(line.startswith("kvctl speed vs JDBC") for line in lines), result.stdout
