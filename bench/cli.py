"""Cold start of the kvctl command next to a bare interpreter.

    python bench/cli.py [--runs N]

Times ``python -c pass``, ``python -m kvctl --version`` and ``python -m kvctl get``
(one row on a fresh RocksDB store in a temp dir) as fresh processes; prints the
median of N runs and each as a multiple of ``python -c pass``. No target: the
figures are for watching the trend (and the import list: see tests/test_cli_process.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Installed kvctl has bytecode caches; let the warm-up run write them (even if the caller disabled that).
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": REPO}


def run(args: list[str]) -> None:
    """Run one command; fail loudly if it fails."""
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=ENV)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.strip()}")


def median_seconds(args: list[str], runs: int) -> float:
    """Median wall time of ``runs`` fresh processes (after one warm-up for the OS caches)."""
    run(args)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run(args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Print the cold-start table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory(prefix="kvctl-bench-") as tmp:
        url = f"rocksdb://{tmp}/db"
        run(
            [
                "-m",
                "kvctl",
                "--url",
                url,
                "table",
                "create",
                "t",
                "--field",
                "k:string",
                "--field",
                "v:long",
                "--pk",
                "k",
            ]
        )
        run(["-m", "kvctl", "--url", url, "put", "t", '{"k": "a", "v": 1}'])
        cases = [
            ("python -c pass", ["-c", "pass"]),
            ("kvctl --version", ["-m", "kvctl", "--version"]),
            ("kvctl get (rocksdb)", ["-m", "kvctl", "--url", url, "get", "t", "k=a"]),
        ]
        results = [(name, median_seconds(args, runs)) for name, args in cases]
    base = results[0][1]
    print(f"cold start, median of {runs} runs")
    print(f"{'command':<24}{'ms':>8}{'x python':>10}")
    for name, seconds in results:
        print(f"{name:<24}{seconds * 1000:>8.0f}{seconds / base:>10.1f}")


if __name__ == "__main__":
    main()
