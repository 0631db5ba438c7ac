"""Whole-process timing for the benchmark scripts: run a command, time it, judge a target.

The commands run as a user runs them: the console scripts installed next to the
interpreter (``kvctl``, ``sqlite-utils``), each a fresh process, with this checkout
first on ``PYTHONPATH`` so the code under test is the checkout's.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import IO

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
# Installed packages have bytecode caches; let the warm-up run write ours (even if the caller disabled that).
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}, "PYTHONPATH": REPO}


def script(name: str) -> list[str]:
    """The command line of the console script ``name`` of this interpreter's environment.

    kvctl falls back to ``python -m kvctl`` when it is not installed there (the same
    code, without the console script's few lines).
    """
    path = os.path.join(BIN, name)
    if os.path.exists(path):
        return [path]
    if name == "kvctl":
        return [sys.executable, "-m", "kvctl"]
    raise SystemExit(f"error: {name} is not installed next to {sys.executable} (pip install -e '.[bench]')")


@dataclass(frozen=True)
class Timing:
    """What one process (or several, added up) took: wall time and CPU time (user + system), in seconds."""

    wall: float
    cpu: float

    def __add__(self, other: Timing) -> Timing:
        return Timing(self.wall + other.wall, self.cpu + other.cpu)


def run(argv: list[str], stdout: int | IO[bytes] = subprocess.DEVNULL, env: dict[str, str] | None = None) -> Timing:
    """Run ``argv`` to completion and return its times; exit loudly if it fails.

    The CPU time is the difference in this process's waited-for children's usage, so
    it counts the process and any of its own children (none run at the same time).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, env=env or ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip()
        raise SystemExit(f"error: {' '.join(argv)} exited {proc.returncode}: {message}")
    return Timing(wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)


def median(timings: list[Timing]) -> Timing:
    """The median wall time and, separately, the median CPU time."""
    return Timing(statistics.median(t.wall for t in timings), statistics.median(t.cpu for t in timings))


def output(argv: list[str], env: dict[str, str] | None = None) -> bytes:
    """Run ``argv`` and return what it printed (for checking both sides' answers)."""
    proc = subprocess.run(argv, capture_output=True, env=env or ENV)
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip()
        raise SystemExit(f"error: {' '.join(argv)} exited {proc.returncode}: {message}")
    return proc.stdout


@dataclass
class Verdict:
    """One measured figure against its target."""

    name: str
    value: float
    target: float
    at_most: bool
    """True when the value must not exceed the target, False when it must reach it."""

    @property
    def passed(self) -> bool:
        """Whether the target is met."""
        return self.value <= self.target if self.at_most else self.value >= self.target

    @property
    def target_text(self) -> str:
        """The target as printed: ``<= 4x`` or ``>= 1.5``."""
        return f"{'<=' if self.at_most else '>='} {self.target:g}"

    @property
    def result_text(self) -> str:
        """``pass`` or ``FAIL``."""
        return "pass" if self.passed else "FAIL"
