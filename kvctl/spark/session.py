"""Creating the Spark session kvctl runs on (local mode unless ``--master`` says otherwise)."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from pathlib import Path
from types import FrameType

from pyspark.sql import SparkSession

import spi
from kvctl.spark.datasource import KvctlDataSource
from kvctl.spark.errors import SparkJobError

DEFAULT_MASTER = "local[*]"
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(spi.__file__)))
"""The directory holding ``spi``, ``providers`` and ``kvctl``: Python workers import them from here."""

_QUIET_LOG4J = """\
rootLogger.level = off
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{HH:mm:ss} %p %c{1}: %m%n
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = off
"""

BASE_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.driver.memory": "1g",
    "spark.sql.shuffle.partitions": "4",
}
"""Settings every kvctl session gets (``conf`` overrides them)."""


def _log4j_file() -> str:
    path = Path(tempfile.gettempdir()) / "kvctl-spark-log4j2.properties"
    if not path.exists() or path.read_text() != _QUIET_LOG4J:
        path.write_text(_QUIET_LOG4J)
    return str(path)


def _python_path() -> str:
    parts = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if REPO_ROOT not in parts:
        parts.insert(0, REPO_ROOT)
    return os.pathsep.join(parts)


def is_local(master: str) -> bool:
    """True for ``local``, ``local[N]`` and ``local[*]`` masters."""
    return master == "local" or master.startswith("local[")


@contextmanager
def _silenced_stderr() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null meanwhile: a JVM started now keeps it for good."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "kvctl",
    conf: Mapping[str, str] | None = None,
    quiet: bool = False,
) -> SparkSession:
    """A Spark session with the ``kvctl`` data source registered.

    Local mode (the default, ``local[*]``): workers run this interpreter
    (``PYSPARK_PYTHON``), everything binds to 127.0.0.1, the UI is off and Spark
    logs only errors. Workers import ``spi``, ``providers`` and ``kvctl`` from
    this installation (``PYTHONPATH``). On a cluster (``spark://...``, ``yarn``...)
    kvctl must be installed on the executors too, for the interpreter
    ``PYSPARK_PYTHON`` names: this one unless it is already set. Timestamps are
    UTC; parquet timestamps are written as microseconds. Spark starts a JVM, so
    this takes seconds: create one session and reuse it. ``quiet`` starts the JVM
    with its stderr on /dev/null (the CLI: Java's start-up banner and logs would
    break its one-error-line rule; Spark's errors still arrive as Python
    exceptions).
    """
    master = master or DEFAULT_MASTER
    python_path = _python_path()
    os.environ["PYTHONPATH"] = python_path
    if is_local(master):
        os.environ["PYSPARK_PYTHON"] = sys.executable
        os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
        os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    else:
        # Spark's default, "python3", is rarely the interpreter kvctl is installed for.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    settings = {
        **BASE_CONF,
        "spark.executorEnv.PYTHONPATH": python_path,
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{_log4j_file()}",
        **({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"} if is_local(master) else {}),
        **(conf or {}),
    }
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    try:
        with _silenced_stderr() if quiet else nullcontext():
            spark = builder.getOrCreate()
    except Exception as exc:  # Java missing, bad master URL...: pyspark raises assorted types
        raise SparkJobError(f"cannot start Spark ({master}): {' '.join(str(exc).split())[:300]}", 3) from None
    spark.sparkContext.setLogLevel("OFF")
    register(spark)
    _interruptible(spark, quiet)
    return spark


def _interruptible(spark: SparkSession, quiet: bool) -> None:
    """Ctrl-C (and SIGTERM, which kvctl handles as Ctrl-C) while a job runs: the jobs
    are cancelled from a thread of their own and the command is interrupted at once.
    PySpark's own handler cancels them inside the signal handler, on the main thread's
    py4j connection, which is waiting for the job: a reentrant call that fails. py4j
    then reports the interrupted call with ``logging.exception`` on the root logger,
    which with no handler there prints a traceback: ``quiet`` (the CLI) gives the root
    logger a ``NullHandler``, so the command's one ``error:`` line stays the only one."""
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers belong to the main thread

    def cancel_and_interrupt(signum: int, frame: FrameType | None) -> None:
        _interrupted.set()
        threading.Thread(target=_cancel_jobs, args=(spark,), name="kvctl-spark-cancel", daemon=True).start()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, cancel_and_interrupt)
    if quiet:
        logging.getLogger().addHandler(logging.NullHandler())


_interrupted = threading.Event()


def interrupted() -> bool:
    """Whether Ctrl-C (or SIGTERM) cancelled this process's Spark jobs: py4j may then
    report the interrupted call as a failed job ("Answer from Java side is empty")."""
    return _interrupted.is_set()


def _cancel_jobs(spark: SparkSession) -> None:
    with contextlib.suppress(Exception):  # the session may be stopping already
        spark.sparkContext.cancelAllJobs()


def register(spark: SparkSession) -> None:
    """Register the ``kvctl`` format in ``spark`` (needed only where the
    ``pyspark_kvctl`` package is not importable for Spark's auto-discovery)."""
    spark.dataSource.register(KvctlDataSource)
