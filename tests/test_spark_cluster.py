"""``kvctl export`` / ``kvctl import`` with ``--master``, and a ``format("kvctl")``
stream, on a real Spark standalone cluster.

The fixture starts a master and two workers from pyspark's own ``spark-class`` on
127.0.0.1 (free ports); the workers run the tasks in executor JVMs of their own (one
per worker and application), apart from the driver. The CLI and the streaming
driver (tests/spark_stream_driver.py) run as real processes, with PYSPARK_PYTHON
left unset: the session must pick this interpreter for the workers by itself.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from cli_support import assert_one_error, run_process
from pg_server import free_port
from spark_session import need_spark
from stream_support import create_target, finish_driver, rocksdb, start_driver, table_state, write_history

import spi

pytestmark = pytest.mark.spark

START_TIMEOUT = 90.0
WORKERS = 2
SPEC = spi.TableSpec(
    "items",
    [spi.Field("id", "long"), spi.Field("name", "string"), spi.Field("at", "timestamp")],
    primary_key=["id"],
)


class StandaloneCluster:
    """A Spark standalone master and :data:`WORKERS` workers (1 core each) on 127.0.0.1."""

    def __init__(self, root: Path) -> None:
        import pyspark

        self.spark_class = Path(pyspark.__file__).parent / "bin" / "spark-class"
        self.root = root
        self.port = free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"}
        self.procs: list[subprocess.Popen[bytes]] = []

    def _start(self, name: str, *args: str, ready: str) -> None:
        log = self.root / f"{name}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [str(self.spark_class), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                start_new_session=True,
            )
        self.procs.append(proc)
        deadline = time.monotonic() + START_TIMEOUT
        while ready not in log.read_text(errors="replace"):
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"the Spark {name} did not start:\n{tail}")
            time.sleep(0.2)

    def start(self) -> StandaloneCluster:
        """Start the master, then the workers; return when every worker has registered."""
        self._start(
            "master",
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(self.port), "--webui-port", str(free_port())),
            ready="I have been elected leader",
        )
        for i in range(WORKERS):
            self._start(
                f"worker{i}",
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                *("--host", "127.0.0.1", "--cores", "1", "--memory", "1g", "--webui-port", str(free_port())),
                *("--work-dir", str(self.root / f"work{i}")),
                ready="Successfully registered with master",
            )
        return self

    def stop(self) -> None:
        """Stop the workers (and their executors) and the master."""
        for proc in reversed(self.procs):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def executor_logs(self) -> list[Path]:
        """The stderr files of the executors the workers launched."""
        return sorted(self.root.glob("work*/app-*/*/stderr"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    need_spark()
    c = StandaloneCluster(tmp_path_factory.mktemp("spark-cluster"))
    try:
        yield c.start()
    finally:
        c.stop()


def kvctl(cluster: StandaloneCluster, url: str, *args: str, python: str | None = None) -> Any:
    """``kvctl --url URL ARGS --master <the cluster>`` as a real process, with
    PYSPARK_PYTHON set to ``python`` (None: unset, as the shared local session set it)."""
    full_env = {"SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": python}
    return run_process("--url", url, *args, "--master", cluster.master_url, env=full_env, timeout=300)


def test_export_and_import_run_on_the_cluster(cluster: StandaloneCluster, tmp_path: Path) -> None:
    import datetime as dt

    url = f"rocksdb://{tmp_path / 'db'}"
    at = dt.datetime(2024, 5, 1, 12, tzinfo=dt.UTC)
    with spi.connect(url) as p:
        p.admin.create(SPEC)
        p.table("items").load({"id": i - 100, "name": f"ñame {i}" if i % 7 else None, "at": at} for i in range(300))
    out = tmp_path / "items.parquet"
    apps_before = len(cluster.executor_logs())

    res = kvctl(cluster, url, "export", "items", "--out", str(out), "--partitions", "3")
    assert res.code == 0, res
    assert res.out.strip() == "300" and "(parquet, 3 partitions)" in res.err
    assert len(cluster.executor_logs()) > apps_before  # the tasks ran in the workers' executors
    exported = pq.read_table(out).sort_by("id").to_pylist()
    with spi.connect(url) as p:
        assert exported == [r.to_dict() for r in p.table("items").scan()]

    res = kvctl(cluster, url, "import", "copy", "--in", str(out), "--create", "--pk", "id")
    assert res.code == 0, res
    assert res.out.strip() == "300"
    with spi.connect(url) as p:
        assert [r.to_dict() for r in p.table("copy").scan()] == exported


def test_workers_without_kvctl_fail_with_a_hint(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """PYSPARK_PYTHON naming an interpreter that cannot import kvctl's dependencies:
    exit 3, one line saying what to fix, nothing written."""
    import sys

    blocked = tmp_path / "blocked"
    (blocked / "pyarrow").mkdir(parents=True)
    (blocked / "pyarrow" / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'pyarrow'\")\n")
    python = tmp_path / "python-without-pyarrow"
    python.write_text(f'#!/bin/sh\nPYTHONPATH="{blocked}:$PYTHONPATH" exec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    url = f"rocksdb://{tmp_path / 'db'}"
    with spi.connect(url) as p:
        p.admin.create(SPEC)
    out = tmp_path / "out"

    res = kvctl(cluster, url, "export", "items", "--out", str(out), python=str(python))
    assert_one_error(res, 3)
    assert "No module named 'pyarrow'" in res.err and "PYSPARK_PYTHON" in res.err
    assert not out.exists()


def test_stream_source_to_sink_runs_on_the_cluster(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """A change feed into another table (RocksDB paths both, which every executor
    opens in turn), AvailableNow in several batches of two tasks: the target ends
    equal to the source, rows and versions, and both workers ran executors."""
    src, dst = rocksdb(tmp_path / "src"), rocksdb(tmp_path / "dst")
    write_history(src)
    write_history(src, start=1000)
    create_target(dst)
    apps_before = len(cluster.executor_logs())
    log = tmp_path / "driver.log"
    options = ("--max-rows", "20", "--partitions", "2")
    finish_driver(start_driver(cluster.master_url, src, dst, tmp_path / "ck", log, *options), log)
    assert table_state(dst) == table_state(src)
    assert len(cluster.executor_logs()) == apps_before + WORKERS
