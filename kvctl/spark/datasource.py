"""The ``kvctl`` PySpark data source: read and write any provider's tables from Spark.

    df = spark.read.format("kvctl").option("url", URL).option("table", "orders").load()
    df.write.format("kvctl").option("url", URL).option("table", "orders").mode("append").save()

Reading: the driver splits the table with ``table.split(partitions)``; every
partition opens its own provider and reads its key range with the auto-commit
``table.scan_batches`` (column batches of ``batch_rows`` rows; ``where`` pushed to
the provider's scan). By default each batch is its own short transaction (so N
partitions on one RocksDB path take turns instead of one holding the path for the
whole export); PostgreSQL streams each partition from one read-only snapshot. Each
column batch becomes one Arrow record batch typed exactly by the table's spec, an
array per column. Writing: every partition converts
its rows to the table's types and calls ``table.load`` (one transaction per
batch); ``mode("overwrite")`` loads into a staging table instead, which the job's
commit swaps in (:mod:`spi.staging`), so a failed or killed job leaves the table's
rows as they were. With ``changes=true`` the source reads the table's change feed
instead (:mod:`kvctl.spark.stream_source`), as a batch or a stream;
``writeStream`` applies a stream of rows or events (:mod:`kvctl.spark.stream_sink`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

import spi
from kvctl.spark.convert import TEXT_RULES, batch_rows, check_batches, check_columns
from kvctl.spark.errors import guard, reports_errors
from kvctl.spark.reading import TableReader
from kvctl.spark.stream_sink import KvctlStreamWriter, check_input
from kvctl.spark.stream_source import KvctlChangesReader, KvctlStreamReader, require_feed
from kvctl.spark.types import change_schema, spark_schema
from kvctl.spark.urls import check_url
from kvctl.spark.workers import freeze_loaded_modules
from spi.arrow import arrow_schema as spi_arrow_schema
from spi.load import LOAD_MODES

NAME = "kvctl"
"""The format name: ``spark.read.format("kvctl")``."""
DEFAULT_BATCH_ROWS = 10_000
"""Rows per Arrow batch (reading) and per ``load`` transaction (writing)."""


def _positive_int(options: Any, name: str, default: int) -> int:
    text = options.get(name)
    if text is None:
        return default
    try:
        value = int(str(text))
    except ValueError:
        value = 0
    if value < 1:
        raise spi.InvalidFieldError(f"option {name!r} must be a positive integer, got {text!r}")
    return value


class KvctlDataSource(DataSource):
    """The ``kvctl`` format. Options: ``url`` and ``table`` (required); reading:
    ``where`` (the CLI's ``--where`` syntax, run by the provider), ``partitions``
    (ranges from ``table.split``; default 1), ``batch_rows``; writing:
    ``batch_rows`` (rows per transaction), ``load_mode`` (upsert, insert, replace),
    ``dry_run`` (``true``: convert and check every row, write nothing), ``text_rules``
    (how text columns convert to the table's types: ``json``, the default, or ``csv``);
    the change feed: ``changes`` (``true``: read the table's events), ``startingRevision``
    (``earliest``, ``latest`` or a revision), ``maxRowsPerBatch`` (streams)."""

    counter: Any = None
    """A Spark accumulator that readers and writers add their row counts to; set on a
    subclass by :func:`kvctl.spark.transfer.counted_source` (None: no counting)."""

    @reports_errors
    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.url = check_url(options.get("url"))
        self.table = options.get("table") or ""
        if not self.table:
            raise spi.InvalidFieldError('the kvctl data source needs option("table", ...)')
        self.where = options.get("where") or None
        self.partitions = _positive_int(options, "partitions", 1)
        self.batch_rows = _positive_int(options, "batch_rows", DEFAULT_BATCH_ROWS)
        self.load_mode = options.get("load_mode", "upsert")
        if self.load_mode not in LOAD_MODES:
            raise spi.InvalidFieldError(f"option 'load_mode' must be one of {', '.join(LOAD_MODES)}")
        self.dry_run = str(options.get("dry_run", "false")).lower() == "true"
        self.spec_json: str | None = None
        """The table's spec as read by :meth:`schema` (None until then)."""
        self.text_rules = options.get("text_rules", "json")
        if self.text_rules not in TEXT_RULES:
            raise spi.InvalidFieldError(f"option 'text_rules' must be one of {', '.join(TEXT_RULES)}")
        changes = str(options.get("changes", "false")).lower()
        if changes not in ("true", "false"):
            raise spi.InvalidFieldError(f"option 'changes' must be true or false, got {options.get('changes')!r}")
        self.changes = changes == "true"
        self.starting = options.get("startingRevision")
        self.max_rows = _positive_int(options, "maxRowsPerBatch", 0) or None
        if self.changes and self.where:
            raise spi.InvalidFieldError("option 'where' filters rows, not change events; leave it out with changes")

    @classmethod
    def name(cls) -> str:
        """The format name, ``kvctl``."""
        return NAME

    def _read_spec(self) -> spi.TableSpec:
        # The table must exist, so the store must too: a misspelt URL is an error, not a new store.
        with spi.connect(self.url, create=False) as p:
            return p.admin.get_spec(self.table)

    def _spec(self) -> spi.TableSpec:
        """The table's spec: as :meth:`schema` read it, else from the catalog now."""
        return spi.TableSpec.from_json(self.spec_json) if self.spec_json else self._read_spec()

    @reports_errors
    def schema(self) -> StructType:
        """The table's columns as a Spark schema (see :mod:`kvctl.spark.types`). The
        spec is kept: Spark pickles this instance after calling ``schema`` and plans
        the read with it, so :meth:`reader` need not read the catalog again."""
        spec = self._read_spec()
        freeze_loaded_modules()
        self.spec_json = spec.to_json()
        return change_schema(require_feed(spec)) if self.changes else spark_schema(spec)

    def _check_schema(self, schema: StructType, spec: spi.TableSpec) -> None:
        if schema != (change_schema(spec) if self.changes else spark_schema(spec)):
            raise spi.InvalidFieldError(
                f"the kvctl source reads table {self.table!r} with its own schema; do not pass .schema(...)"
            )

    @reports_errors
    def reader(self, schema: StructType) -> DataSourceReader:
        """A reader of the table (of its events with ``changes``); the where text is
        checked here, on the driver."""
        spec = self._spec()
        self._check_schema(schema, spec)
        if self.changes:
            return KvctlChangesReader(
                self.url, spec.to_json(), self.partitions, self.batch_rows, self.counter, starting=self.starting
            )
        if self.where:
            spi.parse_where(self.where, spec)
        return KvctlReader(self.url, spec.to_json(), self.partitions, self.batch_rows, self.counter, where=self.where)

    @reports_errors
    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """A streaming reader of the table's change feed (needs ``changes=true``)."""
        if not self.changes:
            raise spi.InvalidFieldError(
                'a stream from a kvctl table reads its change feed: add option("changes", "true")'
            )
        spec = require_feed(self._spec())
        self._check_schema(schema, spec)
        return KvctlStreamReader(
            self.url, spec.to_json(), self.starting, self.max_rows, self.partitions, self.batch_rows
        )

    @reports_errors
    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """A streaming sink into the table; the input's columns are checked here, before any batch."""
        if overwrite:
            raise spi.InvalidFieldError("the kvctl streaming sink applies rows; outputMode must be append or update")
        spec = self._spec()
        check_input(spec, schema.fieldNames())
        return KvctlStreamWriter(self.url, spec.to_json(), self.batch_rows)

    @reports_errors
    def writer(self, schema: StructType, overwrite: bool) -> KvctlWriter:
        """A writer into the table; checks the columns and, for overwrite, makes the
        staging table the tasks load into (once, here)."""
        spec = self._spec()
        check_columns(spec, schema.fieldNames())
        staging = None
        if overwrite and not self.dry_run:
            with spi.connect(self.url) as p:
                staging = p.admin.create_staging(self.table)
        return KvctlWriter(
            self.url,
            spec.to_json(),
            self.load_mode,
            self.batch_rows,
            self.counter,
            self.dry_run,
            self.text_rules,
            staging,
        )


@dataclass
class KeyRangePartition(InputPartition):
    """One read task: a key range as plain values (tuples of Python values pickle anywhere)."""

    index: int
    start: tuple[Any, ...] | None
    end: tuple[Any, ...] | None
    start_inclusive: bool
    end_inclusive: bool

    def range(self) -> spi.Range:
        """The partition's :class:`spi.Range`."""
        return spi.Range(self.start, self.end, start_inclusive=self.start_inclusive, end_inclusive=self.end_inclusive)


@dataclass(eq=False)
class KvctlReader(TableReader):
    """Reads a table in key-range partitions, each from its own provider handle
    (``where``: the rows' filter, pushed to each range's scan)."""

    where: str | None = None

    @reports_errors
    def partitions(self) -> list[InputPartition]:  # type: ignore[override]
        """``table.split(n)`` on the driver, one task per range."""
        spec = spi.TableSpec.from_json(self.spec_json)
        with spi.connect(self.url, create=False) as p:
            ranges = p.table(spec.name).split(self.n)
        freeze_loaded_modules()
        out: list[InputPartition] = []
        for i, r in enumerate(ranges):
            resolved = r.resolve(spec)
            out.append(
                KeyRangePartition(i, resolved.start, resolved.end, resolved.start_inclusive, resolved.end_inclusive)
            )
        return out

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        """Stream the partition's rows as Arrow batches typed by the spec."""
        assert isinstance(partition, KeyRangePartition)
        return guard(self._read(partition), lambda: f"reading partition {partition.index}: ")

    def _read(self, partition: KeyRangePartition) -> Iterator[pa.RecordBatch]:
        spec = spi.TableSpec.from_json(self.spec_json)
        schema = spi_arrow_schema(spec)
        where = spi.parse_where(self.where, spec) if self.where else None
        rng = partition.range()
        with spi.connect(self.url, create=False) as p:
            for batch in p.table(spec.name).scan_arrow(rng, where=where, batch_size=self.batch_rows):
                if batch.schema != schema:
                    batch = batch.cast(schema)
                if self.counter is not None:
                    self.counter.add(batch.num_rows)
                freeze_loaded_modules()  # at the first batch: the database driver is loaded by then
                yield batch


@dataclass
class LoadedRows(WriterCommitMessage):
    """What one write task loaded."""

    rows: int


class KvctlWriter(DataSourceArrowWriter):
    """Loads each partition's rows through ``table.load`` in batches (each batch atomic);
    with ``dry_run`` only converts and validates them. With ``staging`` the tasks load
    into that staging table, and the job's commit swaps its rows into the table."""

    def __init__(
        self,
        url: str,
        spec_json: str,
        load_mode: str,
        batch_rows: int,
        counter: Any = None,
        dry_run: bool = False,
        text_rules: str = "json",
        staging: str | None = None,
    ) -> None:
        self.url = url
        self.spec_json = spec_json
        self.load_mode = load_mode
        self.batch_rows = batch_rows
        self.counter = counter
        self.dry_run = dry_run
        self.text_rules = text_rules
        self.staging = staging

    def write(self, iterator: Iterator[pa.RecordBatch]) -> LoadedRows:
        """Convert and load this task's rows; a bad value fails naming column and value."""
        from pyspark import TaskContext

        context = TaskContext.get()
        verb = "checking" if self.dry_run else "writing"
        prefix = f"{verb} partition {context.partitionId()}: " if context is not None else ""
        return LoadedRows(sum(guard(self._write(iterator), lambda: prefix)))

    def _write(self, iterator: Iterator[pa.RecordBatch]) -> Iterator[int]:
        spec = spi.TableSpec.from_json(self.spec_json)
        if self.dry_run:
            for batch in iterator:
                n = check_batches(spec, [batch], self.text_rules)
                if self.counter is not None:
                    self.counter.add(n)
                yield n
            return
        rows = (row for batch in iterator for row in batch_rows(spec, batch, self.text_rules))
        done = 0

        def progress(written: int) -> None:
            nonlocal done
            if self.counter is not None:
                self.counter.add(written - done)
            done = written

        with spi.connect(self.url) as p:
            table = p.table(self.staging or spec.name)
            freeze_loaded_modules()
            yield table.load(rows, mode=self.load_mode, batch_size=self.batch_rows, progress=progress)

    @reports_errors
    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Every task loaded its rows: swap the staging table's rows in (one commit) and
        drop it, with the old rows."""
        if self.staging is not None:
            with spi.connect(self.url) as p:
                p.admin.swap_rows(spi.TableSpec.from_json(self.spec_json).name, self.staging)
                p.admin.drop(self.staging)

    @reports_errors
    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        """A task failed: drop the staging table; the table keeps its rows."""
        if self.staging is not None:
            with spi.connect(self.url) as p:
                p.admin.drop(self.staging, missing_ok=True)
