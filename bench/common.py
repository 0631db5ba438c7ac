"""Shared helpers for the benchmark scripts: timing, the result table, the missed-target exit status."""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TARGET_MISSED = 3
"""The exit status of a bench that ran to the end and missed a target it prints.

Not 1, which an uncaught exception (a crash) exits with, nor 2, argparse's usage
error and the benches' own "cannot run" (no server, a missing tool): a smoke test
that accepts 0 or ``TARGET_MISSED`` fails when its bench crashes.
"""


@dataclass
class Result:
    """One benchmarked operation: provider and raw rates, and an optional target ratio."""

    operation: str
    provider_rate: float
    raw_rate: float
    target: float | None = None

    @property
    def ratio(self) -> float:
        """Provider throughput as a fraction of the raw library's."""
        return self.provider_rate / self.raw_rate if self.raw_rate else float("inf")


def rate(n: int, fn: Callable[[], object]) -> float:
    """Operations per second of ``fn`` doing ``n`` operations (best of one run)."""
    start = time.perf_counter()
    fn()
    return n / (time.perf_counter() - start)


def report(title: str, results: list[Result], raw_name: str) -> bool:
    """Print the results table; True when every target is met."""
    print(title)
    print(f"{'operation':<28}{'provider ops/s':>16}{raw_name + ' ops/s':>18}{'ratio':>8}{'target':>9}  result")
    ok = True
    for r in results:
        verdict = "-" if r.target is None else ("pass" if r.ratio >= r.target else "FAIL")
        ok = ok and verdict != "FAIL"
        target = "-" if r.target is None else f">={r.target:g}"
        print(f"{r.operation:<28}{r.provider_rate:>16,.0f}{r.raw_rate:>18,.0f}{r.ratio:>8.3f}{target:>9}  {verdict}")
    return ok


def machine() -> str:
    """One line naming the machine the figures come from (cores, CPU, system, Python)."""
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}, Python {platform.python_version()}"
    )
