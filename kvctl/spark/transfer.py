"""``kvctl export`` and ``kvctl import`` without the command line: tables ↔ files through Spark.

Both stream (no ``collect``), report progress through a callback and return how
many rows moved. Errors are spi errors (the CLI maps them to exit codes) or
:class:`~kvctl.spark.errors.SparkJobError` with its own exit code.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, TimestampType

import spi
from kvctl.headers import column_names, report
from kvctl.spark.convert import check_columns
from kvctl.spark.datasource import DEFAULT_BATCH_ROWS, KvctlDataSource
from kvctl.spark.errors import SparkJobError, unwrap
from kvctl.spark.folders import write_spec
from kvctl.spark.types import spec_from_schema
from kvctl.spark.urls import check_url

FORMATS = ("parquet", "csv", "json", "orc")
EXPORT_MODES = ("error", "overwrite")
IMPORT_MODES = ("append", "overwrite")
TIMESTAMP_TEXT = "yyyy-MM-dd'T'HH:mm:ss.SSSSSSxxx"
"""ISO 8601 with offset and microseconds, for timestamps in CSV and JSON files."""
CSV_OPTIONS = {
    "header": "true",
    "quote": '"',
    "escape": '"',  # RFC 4180 doubling, as every other CSV tool expects (Spark's default is \\)
    "encoding": "UTF-8",
}
CSV_WRITE_OPTIONS = {**CSV_OPTIONS, "ignoreLeadingWhiteSpace": "false", "ignoreTrailingWhiteSpace": "false"}
CSV_READ_OPTIONS = {**CSV_OPTIONS, "multiLine": "true", "mode": "FAILFAST"}
_group_ids = itertools.count(1)


@dataclass(frozen=True)
class Progress:
    """Where a transfer is: its phase, Spark tasks done of total, rows counted so far
    (rows are counted when a task finishes)."""

    phase: str
    tasks_done: int
    tasks_total: int
    rows: int


ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True)
class TransferResult:
    """A finished export or import: rows moved, the path, the format, Spark tasks run."""

    rows: int
    path: str
    format: str
    tasks: int
    replaced: int = 0
    """An import's input rows whose key a later row of the input repeated (that row
    was written instead: ``rows`` counts distinct keys)."""


def counted_source(counter: Any) -> type[KvctlDataSource]:
    """A ``kvctl`` data source class whose readers and writers add their rows to ``counter``
    (a Spark accumulator), registered under its own format name."""
    name = f"kvctl_counted_{id(counter)}"
    # Built with type(): not importable by name, so Spark pickles the class by value, accumulator included.
    return type(
        "KvctlCounted",
        (KvctlDataSource,),
        {"counter": counter, "name": classmethod(lambda cls: name), "__module__": __name__},
    )


def _check_choice(value: str, choices: tuple[str, ...], what: str) -> None:
    if value not in choices:
        raise spi.InvalidFieldError(f"{what} must be one of {', '.join(choices)}, got {value!r}")


def _condition(exc: BaseException) -> str | None:
    """Spark's error condition of ``exc`` (``PATH_NOT_FOUND``...), None for other errors."""
    get = getattr(exc, "getCondition", None)
    return get() if callable(get) else None


class _Monitor:
    """Runs Spark jobs under a job group and reports their progress from a polling thread."""

    def __init__(self, spark: SparkSession, phase: str, counter: Any, callback: ProgressCallback | None) -> None:
        self.sc = spark.sparkContext
        self.phase = phase
        self.counter = counter
        self.callback = callback
        self.group = f"kvctl-{phase}-{next(_group_ids)}"
        self.tasks_total = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name=self.group, daemon=True)

    def __enter__(self) -> _Monitor:
        self.sc.setJobGroup(self.group, f"kvctl {self.phase}")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.sc.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
        self.sc.setLocalProperty("spark.job.description", None)  # type: ignore[arg-type]
        self._report()

    def _report(self) -> None:
        tracker = self.sc.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(self.group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job is not None else ():
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        self.tasks_total = max(self.tasks_total, total)
        if self.callback is not None and total:
            self.callback(Progress(self.phase, done, total, int(self.counter.value) if self.counter else 0))

    def _poll(self) -> None:
        while not self._stop.wait(0.5):
            self._report()


def _text_columns(df: DataFrame) -> DataFrame:
    """Bytes as base64 and timestamps as ISO 8601 with offset (CSV and JSON files)."""
    columns: list[Column] = []
    for field in df.schema.fields:
        column = F.col(f"`{field.name}`")
        if isinstance(field.dataType, BinaryType):
            column = F.base64(column)
        elif isinstance(field.dataType, TimestampType):
            column = F.date_format(column, TIMESTAMP_TEXT)
        columns.append(column.alias(field.name))
    return df.select(*columns)


def export_table(
    spark: SparkSession,
    url: str,
    table: str,
    out: str,
    *,
    format: str = "parquet",
    where: str | None = None,
    partitions: int | None = None,
    mode: str = "error",
    progress: ProgressCallback | None = None,
    changes: bool = False,
    since: int | None = None,
) -> TransferResult:
    """Write ``table`` (rows matching ``where``) to ``out`` as parquet, csv, json or orc.

    ``partitions`` read tasks (default: Spark's default parallelism), at most one
    output file each. ``mode="error"`` refuses an existing ``out`` and changes
    nothing (:class:`SparkJobError`, exit code 1); ``"overwrite"`` replaces it.
    With ``changes`` it writes the table's recorded events after ``since`` (default:
    the oldest kept) instead, with the columns of :func:`kvctl.spark.types.change_schema`
    (one partition unless ``partitions`` says: each reads the feed and keeps its keys).
    A table's rows written to a local folder come with its spec,
    ``out/_kvctl_spec.json`` (:mod:`kvctl.spark.folders`), which :func:`import_table`
    takes back.
    """
    check_url(url)
    _check_choice(format, FORMATS, "format")
    _check_choice(mode, EXPORT_MODES, "mode")
    if partitions is not None and (not isinstance(partitions, int) or partitions < 1):
        raise spi.InvalidFieldError(f"partitions must be a positive integer, got {partitions!r}")
    with spi.connect(url, create=False) as p:
        spec = p.admin.get_spec(table)
    if where:
        spi.parse_where(where, spec)
    n = partitions or (1 if changes else spark.sparkContext.defaultParallelism)
    counter = spark.sparkContext.accumulator(0)
    source = counted_source(counter)
    spark.dataSource.register(source)
    options = {"url": url, "table": table, "partitions": str(n), **({"where": where} if where else {})}
    if changes:
        options.update(changes="true", startingRevision="earliest" if since is None else str(since))
    monitor = _Monitor(spark, "export", counter, progress)
    try:
        df = spark.read.format(source.name()).options(**options).load()  # Spark asks a Python worker for the schema
        if format in ("csv", "json"):
            df = _text_columns(df)
        writer = df.write.format(format).mode("overwrite" if mode == "overwrite" else "errorifexists")
        if format == "csv":
            writer = writer.options(**CSV_WRITE_OPTIONS)
        elif format == "json":
            writer = writer.option("ignoreNullFields", "false")
        with monitor:
            writer.save(out)  # Spark refuses an existing path before any job runs
    except Exception as exc:
        if _condition(exc) == "PATH_ALREADY_EXISTS":
            raise SparkJobError(
                f"{out} already exists; nothing was written (use --mode overwrite to replace it)", 1
            ) from None
        raise unwrap(exc) from None
    if not changes:
        write_spec(out, spec)
    return TransferResult(int(counter.value), out, format, monitor.tasks_total)


def _read_input(spark: SparkSession, path: str, format: str, typed: bool) -> DataFrame:
    """The input file as a DataFrame; CSV (and JSON for an existing table) as text columns."""
    reader = spark.read.format(format)
    if format == "csv":
        reader = reader.options(**CSV_READ_OPTIONS)
    elif format == "json" and not typed:
        reader = reader.option("primitivesAsString", "true").option("mode", "FAILFAST")
    elif format == "json":
        reader = reader.option("mode", "FAILFAST")
    return reader.load(path)


def _column_names(df: DataFrame) -> DataFrame:
    """``df`` with its columns named by :func:`kvctl.headers.column_names` (each renamed
    one listed on stderr), the rule of ``put --file`` and ``table create --from``."""
    names = column_names(df.columns)
    if names == df.columns:
        return df
    report(df.columns)
    return df.toDF(*names)


def import_table(
    spark: SparkSession,
    url: str,
    table: str,
    path: str,
    *,
    format: str = "parquet",
    mode: str = "append",
    create_pk: list[str] | None = None,
    create_spec: spi.TableSpec | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    progress: ProgressCallback | None = None,
) -> TransferResult:
    """Load the parquet, csv, json or orc files at ``path`` into ``table``.

    Every row is converted to the table's types and checked first (a Spark pass
    that writes nothing), so a bad value fails before anything changes (a table
    made by ``create_pk`` or ``create_spec`` is dropped again). Then
    ``mode="append"`` upserts and ``"overwrite"`` replaces the table's rows
    atomically (loaded into a staging table, swapped in when every task is done). With
    ``create_pk`` the table is created from the input's schema, with ``create_spec``
    (named ``table``; :func:`kvctl.spark.folders.spec_for_import` reads an export's)
    as that spec; it must not exist. Input column names that are not column names are
    renamed first (:mod:`kvctl.headers`; stderr lists them). A key the input holds more
    than once gets its last row (in input order; the result's ``replaced`` counts the others).
    Each task loads in batches of ``batch_rows`` rows, one transaction each.
    """
    check_url(url)
    _check_choice(format, FORMATS, "format")
    _check_choice(mode, IMPORT_MODES, "mode")
    if create_spec is not None and (create_pk is not None or create_spec.name != table):
        raise spi.InvalidFieldError(f"create_spec must be table {table!r}'s spec, without create_pk")
    creating = create_pk is not None or create_spec is not None
    try:
        df = _read_input(spark, path, format, typed=create_pk is not None)
    except Exception as exc:
        if _condition(exc) == "PATH_NOT_FOUND":
            raise SparkJobError(f"{path} does not exist; nothing was imported", 2) from None
        raise unwrap(exc) from None
    df = _column_names(df)
    with spi.connect(url) as p:
        if creating and p.admin.exists(table):
            raise spi.TableExistsError(f"table {table!r} already exists; import into it without --create")
        try:
            if create_spec is not None:
                spec = create_spec
            elif create_pk is not None:
                spec = spec_from_schema(table, df.schema, create_pk)
            else:
                spec = p.admin.get_spec(table)
            check_columns(spec, df.columns)
        except Exception as exc:
            raise unwrap(exc) from None
        text_rules = "csv" if format == "csv" else "json"
        if format == "csv":
            # CLI.md: an empty CSV field is the empty string in a string column.
            df = df.na.fill("", [f.name for f in df.schema.fields if spec.type_of(f.name) is spi.FieldType.STRING])
        if creating:
            p.admin.create(spec)
        try:
            checked = _load(spark, df, url, table, "check", progress, text_rules=text_rules, dry_run=True)
        except BaseException:
            if creating:
                p.admin.drop(table)  # we created it a moment ago and it is still empty
            raise
    if checked.rows == 0 and mode == "append":
        return TransferResult(0, path, format, checked.tasks)
    df, replaced = _last_per_key(spark, df, spec.primary_key, checked.rows)
    loaded = _load(
        spark,
        df,
        url,
        table,
        "import",
        progress,
        text_rules=text_rules,
        overwrite=mode == "overwrite",
        batch_rows=batch_rows,
    )
    return TransferResult(loaded.rows, path, format, loaded.tasks, replaced)


_ORDER, _RANK = "__kvctl_input_order", "__kvctl_rank"


def _last_per_key(spark: SparkSession, df: DataFrame, key: Sequence[str], rows: int) -> tuple[DataFrame, int]:
    """``df`` (of ``rows`` rows) keeping only the last row of each key, in input order,
    and how many rows that leaves out: a Spark count of the distinct keys, then,
    only if some repeat, a window over the key (so parallel tasks never write one key
    twice, in either order)."""
    keys = [F.col(f"`{k}`") for k in key]
    try:
        with _Monitor(spark, "keys", None, None):
            distinct = df.select(*keys).distinct().count()
    except Exception as exc:
        raise unwrap(exc) from None
    if distinct == rows:
        return df, 0
    latest_first = Window.partitionBy(*keys).orderBy(F.col(_ORDER).desc())
    last = (
        df.withColumn(_ORDER, F.monotonically_increasing_id())  # increasing in input order
        .withColumn(_RANK, F.row_number().over(latest_first))
        .where(F.col(_RANK) == 1)
        .drop(_ORDER, _RANK)
    )
    return last, rows - distinct


def _load(
    spark: SparkSession,
    df: DataFrame,
    url: str,
    table: str,
    phase: str,
    progress: ProgressCallback | None,
    *,
    text_rules: str,
    overwrite: bool = False,
    dry_run: bool = False,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> TransferResult:
    """Write ``df`` through the kvctl source (or only check it, with ``dry_run``)."""
    counter = spark.sparkContext.accumulator(0)
    source = counted_source(counter)
    spark.dataSource.register(source)
    writer = (
        df.write.format(source.name())
        .options(url=url, table=table, batch_rows=str(batch_rows), dry_run=str(dry_run).lower(), text_rules=text_rules)
        .mode("overwrite" if overwrite else "append")
    )
    monitor = _Monitor(spark, phase, counter, progress)
    try:
        with monitor:
            writer.save()
    except Exception as exc:
        raise unwrap(exc) from None
    return TransferResult(int(counter.value), table, "kvctl", monitor.tasks_total)


__all__ = [
    "FORMATS",
    "Progress",
    "TransferResult",
    "counted_source",
    "export_table",
    "import_table",
]
