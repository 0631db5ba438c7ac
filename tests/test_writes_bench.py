"""The writes benchmark (issue 23) still runs on both providers (tiny size; no timings are asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
FIGURES = (
    "postgres upsert",
    "postgres increment",
    "postgres compare_and_swap",
    "postgres 4-thread upsert",
    "postgres update_range 50%",
    "postgres delete_range 50%",
    "postgres fed load / plain (cost)",
    "postgres load vs COPY",
    "rocksdb upsert",
    "rocksdb increment",
    "rocksdb point read",
    "rocksdb load",
    "rocksdb full scan",
)


def test_bench_smoke(tmp_path: Path, pg_server: Any) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    sizes = ["--rows", "2000", "--ops", "100", "--rocksdb-ops", "2000", "--load-rows", "2000"]
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "writes.py"), *sizes, "--url", pg_server.url, "--dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode in (0, 1), result.stderr  # 1: a target missed (expected at this tiny size)
    for figure in FIGURES:
        assert figure in result.stdout
    assert "targets" in result.stdout.splitlines()[-1]
