"""The Spark export benchmark still runs (tiny size, one round, no warm-up, in the test
run's Spark session; no timings are asserted)."""

from __future__ import annotations

import importlib.util
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.spark
@pytest.mark.postgres
def test_export_bench_smoke(spark: Any, pg_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conftest import need
    from pg_server import drop_schemas
    from spark_session import JDBC_JAR

    need("The PostgreSQL JDBC driver", os.path.exists(JDBC_JAR), "apt-get install libpostgresql-jdbc-java")
    module = importlib.util.spec_from_file_location("bench_export", ROOT / "bench" / "export.py")
    assert module is not None and module.loader is not None
    bench = importlib.util.module_from_spec(module)
    module.loader.exec_module(bench)
    schema = f"kvctl_bench_{uuid.uuid4().hex[:8]}"
    url = f"{pg_server.url}?schema={schema}"
    try:
        bench.ensure_table(url, 3000)
        bench.run(url, 3000, None, "", str(tmp_path), rounds=1, warm_ups=0, spark=spark)
    finally:
        drop_schemas(pg_server.dsn, [schema])
    lines = capsys.readouterr().out.splitlines()
    for path in ("kvctl data source", "Spark JDBC reader", "pyarrow write_table (floor)"):
        assert any(line.startswith(path) for line in lines), lines
    assert any(line.startswith("kvctl speed vs JDBC") for line in lines), lines
