"""The RocksDB benchmark still runs (tiny size; no timings are asserted)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.common import TARGET_MISSED

ROOT = Path(__file__).resolve().parents[1]


def test_bench_smoke(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "rocksdb.py"), "--rows", "2000", "--dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # TARGET_MISSED: a target missed at this tiny size; 1 (a crash) or 2 (an error) fails
    assert result.returncode in (0, TARGET_MISSED), f"exit {result.returncode}: {result.stderr}"
    for op in ("load", "point read", "full scan", "1% equality"):
        assert op in result.stdout
