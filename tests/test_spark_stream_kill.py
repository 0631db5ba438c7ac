"""A SIGKILLed streaming driver (CLI.md "Spark streaming", exactly once): the kvctl
source → kvctl sink query runs in a driver process of its own
(tests/spark_stream_driver.py, its own Spark session, the checkpoint on disk), is
killed with SIGKILL — the driver, its JVM and every Python worker — while a
micro-batch is in flight, then restarted from the same checkpoint; the target ends
equal to the source, rows and versions.

The sink's input has no ``_version``, so every applied row bumps the target's
version: a chunk applied twice (or a batch replayed onto rows it already wrote)
would show as a version above the source's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest
from spark_session import need_spark
from stream_support import (
    commits,
    create_target,
    finish_driver,
    rocksdb,
    start_driver,
    table_state,
    write_history,
)

pytestmark = pytest.mark.spark

OPTIONS = ("--max-rows", "12", "--partitions", "2", "--drop-version")
"""Many small micro-batches (whole revisions, at most 12 events before the next), two tasks each."""


def descendants(pid: int) -> set[int]:
    """The processes ``pid`` started, and theirs (from /proc: the PySpark daemon
    moves its workers to a process group of its own)."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def kill_all(pid: int) -> None:
    """SIGKILL ``pid``, its process group and every process it started; wait until they are gone."""
    family = descendants(pid)
    os.killpg(pid, signal.SIGKILL)
    for child in family:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(Path(f"/proc/{child}").exists() and _alive(child) for child in family):
        assert time.monotonic() < deadline, "the killed driver's processes did not end"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    """False for a process that ended (gone, or a zombie its parent has not reaped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def in_flight(checkpoint: Path) -> bool:
    """True once a batch was committed and a later one is planned (in ``offsets/``) but not committed."""
    done = commits(checkpoint)
    offsets = checkpoint / "offsets"
    planned = [int(n) for n in os.listdir(offsets) if n.isdigit()] if offsets.is_dir() else []
    return bool(done) and bool(planned) and max(planned) > done[-1]


def test_sigkilled_driver_restarts_to_a_target_equal_to_the_source(tmp_path: Path) -> None:
    need_spark()
    src, dst = rocksdb(tmp_path / "src"), rocksdb(tmp_path / "dst")
    for start in range(0, 3000, 1000):
        write_history(src, start=start)
    create_target(dst)
    checkpoint, log = tmp_path / "ck", tmp_path / "driver.log"

    proc = start_driver("local[2]", src, dst, checkpoint, log, *OPTIONS)
    try:
        deadline = time.monotonic() + 180
        while not in_flight(checkpoint):
            assert proc.poll() is None, f"the stream ended before it could be killed:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.02)
        time.sleep(0.1)  # into the batch: its tasks are reading or writing
    finally:
        if proc.poll() is None:
            kill_all(proc.pid)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert "done" not in log.read_text().splitlines()
    killed_at = commits(checkpoint)
    assert table_state(dst) != table_state(src)  # killed mid-stream

    finish_driver(start_driver("local[2]", src, dst, checkpoint, log, *OPTIONS), log)
    assert commits(checkpoint)[0] == killed_at[0] and len(commits(checkpoint)) > len(killed_at)
    assert table_state(dst) == table_state(src)
