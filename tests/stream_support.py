"""Shared pieces of the Spark streaming tests: the ``orders`` table with a change
feed, a history of writes of every kind, table states, and the streaming driver run
as a process of its own (tests/spark_stream_driver.py)."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import spi

SPEC = spi.TableSpec(
    "orders",
    [("region", "string"), ("id", "long"), ("total", "double"), ("note", "string"), ("at", "timestamp")],
    primary_key=["region", "id"],
    changes=True,
)
T0 = dt.datetime(2024, 5, 1, 12, 0, 0, 123_456, tzinfo=dt.UTC)
DRIVER = Path(__file__).with_name("spark_stream_driver.py")


def rocksdb(path: Path) -> str:
    """A RocksDB URL for a directory."""
    return f"rocksdb://{os.path.abspath(path)}"


def write_history(url: str, start: int = 0) -> None:
    """Writes in many transactions: puts, updates, deletes, a transaction of several
    writes, expiries (a sweep) and a bulk load."""
    with spi.connect(url) as p:
        if not p.admin.exists(SPEC.name):
            p.admin.create(SPEC)
        t = p.table(SPEC.name)
        for i in range(start, start + 12):
            t.upsert({"region": ["eu", "us"][i % 2], "id": i, "total": i * 1.5, "note": None, "at": T0})
        for i in range(start, start + 12, 3):
            t.update({"region": ["eu", "us"][i % 2], "id": i}, {"note": f"updated {i}"})
        t.delete({"region": "us", "id": start + 1})

        def several(tx: spi.Transaction) -> None:
            tt = tx.table(SPEC.name)
            tt.upsert({"region": "eu", "id": start + 2, "total": -1.0, "note": "é ✓", "at": None})
            tt.delete({"region": "eu", "id": start + 4})
            tt.upsert({"region": "ap", "id": start + 100, "total": 0.0, "note": "", "at": T0})

        p.run(several)
        t.upsert({"region": "ap", "id": start + 101, "total": 1.0, "note": "short", "at": None}, ttl=0.01)
        t.upsert({"region": "ap", "id": start + 102, "total": 2.0, "note": "short", "at": None}, ttl=0.01)
        time.sleep(0.05)
        p.admin.sweep(SPEC.name)
        t.load([{"region": "bulk", "id": start + i, "total": float(i), "note": "b", "at": T0} for i in range(30)])


def stream(spark: Any, url: str, **options: str) -> Any:
    """A streaming read of the orders feed."""
    reader = spark.readStream.format("kvctl").option("url", url).option("table", SPEC.name).option("changes", "true")
    return reader.options(**options).load()


def sink(df: Any, url: str, checkpoint: Path, table: str = SPEC.name) -> None:
    """Run ``df`` into the kvctl sink with Trigger.AvailableNow until it is done."""
    writer = df.writeStream.format("kvctl").option("url", url).option("table", table)
    writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start().awaitTermination()


def table_state(url: str, name: str = SPEC.name) -> list[tuple[dict[str, Any], int]]:
    """A table's rows and versions in key order."""
    with spi.connect(url) as p:
        return [(r.to_dict(), r.version) for r in p.table(name).scan()]


def create_target(url: str) -> None:
    """The orders table without a change feed, empty, at ``url``."""
    with spi.connect(url) as p:
        p.admin.create(spi.TableSpec(SPEC.name, SPEC.fields, SPEC.primary_key))


def start_driver(
    master: str, src: str, dst: str, checkpoint: Path, log: Path, *options: str
) -> subprocess.Popen[bytes]:
    """tests/spark_stream_driver.py as a process (its own session, its own process
    group, output in ``log``): the orders feed at ``src`` into ``dst``."""
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
    env.pop("PYSPARK_PYTHON", None)  # as a user's shell: the session picks this interpreter
    command = [sys.executable, str(DRIVER), master, src, dst, SPEC.name, str(checkpoint), *options]
    with log.open("ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def finish_driver(proc: subprocess.Popen[bytes], log: Path, timeout: float = 240) -> None:
    """Wait for a driver started by :func:`start_driver`; fail with its log unless it printed ``done``."""
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
        code = -9
    text = log.read_text(errors="replace")
    assert code == 0 and "done" in text.splitlines(), f"driver exit {code}:\n{text[-4000:]}"


def commits(checkpoint: Path) -> list[int]:
    """The micro-batches the query's checkpoint records as committed."""
    folder = checkpoint / "commits"
    return sorted(int(n) for n in os.listdir(folder) if n.isdigit()) if folder.is_dir() else []
