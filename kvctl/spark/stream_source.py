"""A table's change feed as a Spark source: ``format("kvctl")`` with ``changes=true``.

    spark.readStream.format("kvctl").option("url", URL).option("table", "orders")
        .option("changes", "true").option("startingRevision", "earliest").load()

Each row is one recorded event (:func:`kvctl.spark.types.change_schema`): the table's
columns (key columns always set, the others null for a delete or expire), then
``_revision``, ``_op``, ``_version``, ``_time``. Offsets are revisions,
``{"revision": N}``: a micro-batch holds the events with ``start < revision <= end``.
``maxRowsPerBatch`` admits whole revisions while the batch holds fewer than N events
(a revision larger than N is one batch). A batch's events are split into
``partitions`` tasks by a hash of the encoded key, so every event of one key is in
one task, in commit order; a task reads the feed from ``start`` and keeps its keys,
which is why a replayed batch (same offsets) reads exactly the same events. A batch
read with ``changes=true`` gives the events after ``startingRevision`` (default:
the oldest kept) up to the revision when it is planned.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

import spi
from kvctl.spark.errors import guard, reports_errors
from kvctl.spark.reading import TableReader
from kvctl.spark.workers import freeze_loaded_modules
from spi.arrow import arrow_schema, columns_to_batch
from spi.codec import encode_key

EARLIEST = "earliest"
"""``startingRevision``: the oldest revision the feed still keeps."""
LATEST = "latest"
"""``startingRevision``: the store's revision when the query starts (only new events)."""


def change_arrow_schema(spec: spi.TableSpec) -> pa.Schema:
    """The Arrow schema of change-event batches, as :func:`kvctl.spark.types.change_schema`."""
    base = arrow_schema(spec)
    nullable = [pa.field(f.name, f.type, nullable=True) if not spec.is_key(f.name) else f for f in base]
    extra = [
        pa.field("_revision", pa.int64(), nullable=False),
        pa.field("_op", pa.string(), nullable=False),
        pa.field("_version", pa.int64(), nullable=True),
        pa.field("_time", pa.timestamp("us", "UTC"), nullable=False),
    ]
    return pa.schema(nullable + extra)


def require_feed(spec: spi.TableSpec) -> spi.TableSpec:
    """``spec`` if its table records a change feed, else the CLI's error with the hint."""
    if not spec.changes:
        from kvctl.feeds import no_feed  # lazy: the CLI's modules (Typer), kept out of Spark's workers

        raise spi.SchemaError(no_feed(spec.name))
    return spec


def oldest_kept(p: spi.Provider, table: str) -> int:
    """The oldest ``since`` the table's feed still accepts (0: nothing compacted)."""
    try:
        _first(p, table, 0)
    except spi.RevisionCompactedError as exc:
        return exc.oldest
    return 0


def _first(p: spi.Provider, table: str, since: int) -> spi.Change | None:
    """The first event after ``since`` (raises :class:`spi.RevisionCompactedError`
    when ``since`` was compacted)."""
    return next(iter(p.changes(table, since=since, limit=1)), None)


def starting_revision(p: spi.Provider, table: str, text: Any, default: str) -> int:
    """The revision a read starts after: ``earliest``, ``latest`` or a revision R
    (the events after R, as ``--since R``); a compacted R is an error naming the
    oldest kept revision."""
    text = default if text is None else str(text).strip().lower()
    if text == LATEST:
        return p.revision()
    if text == EARLIEST:
        return oldest_kept(p, table)
    try:
        revision = int(text)
    except ValueError:
        revision = -1
    if revision < 0:
        raise spi.InvalidFieldError(
            f"option 'startingRevision' must be earliest, latest or a revision (a non-negative integer), got {text!r}"
        )
    _first(p, table, revision)
    return revision


def admitted_end(p: spi.Provider, table: str, start: int, max_rows: int, cap: int | None) -> int:
    """The end of the next batch after ``start``: whole revisions, taking no further
    revision once the batch holds ``max_rows`` events; ``cap`` (AvailableNow's
    target) bounds it. ``start`` when there is nothing to read."""
    end, held = start, 0
    events = p.changes(table, since=start)
    try:
        for event in events:
            if cap is not None and event.revision > cap:
                break
            if event.revision != end:
                if held >= max_rows:
                    break
                end = event.revision
            held += 1
    finally:
        close = getattr(events, "close", None)
        if close is not None:
            close()
    return end


def available_end(p: spi.Provider, table: str, start: int, cap: int | None) -> int:
    """The end of a batch taking every event after ``start`` (up to ``cap``): the
    store's revision when the table has an event after ``start``, else ``start``."""
    revision = p.revision() if cap is None else min(cap, p.revision())
    first = _first(p, table, start)
    return revision if first is not None and first.revision <= revision else start


@dataclass
class ChangePartition(InputPartition):
    """One read task: the events in ``(start, end]`` whose key hashes to ``index`` of ``count``."""

    index: int
    count: int
    start: int
    end: int


def change_partitions(start: int, end: int, count: int) -> list[InputPartition]:
    """The tasks of a batch ``(start, end]``: ``count`` key-hash buckets (none when empty)."""
    if end <= start:
        return []
    return [ChangePartition(i, count, start, end) for i in range(count)]


def _bucket(spec: spi.TableSpec, key: dict[str, Any], count: int) -> int:
    """The partition of a key: a stable hash of its encoded bytes (the same in every process)."""
    if count == 1:
        return 0
    return zlib.crc32(encode_key(spec.key_types, tuple(key[k] for k in spec.primary_key))) % count


def read_changes(
    url: str, spec_json: str, partition: ChangePartition, batch_rows: int, counter: Any = None
) -> Iterator[pa.RecordBatch]:
    """The partition's events as Arrow batches of at most ``batch_rows`` rows (their
    count added to ``counter``, a Spark accumulator, when given)."""
    for batch in guard(
        _read_changes(url, spi.TableSpec.from_json(spec_json), partition, batch_rows),
        lambda: f"reading the change feed (partition {partition.index}): ",
    ):
        if counter is not None:
            counter.add(batch.num_rows)
        yield batch


def _read_changes(
    url: str, spec: spi.TableSpec, partition: ChangePartition, batch_rows: int
) -> Iterator[pa.RecordBatch]:
    schema = change_arrow_schema(spec)
    columns = spec.columns
    names = [*columns, "_revision", "_op", "_version", "_time"]
    batch: dict[str, list[Any]] = {name: [] for name in names}
    held = 0
    with spi.connect(url, create=False) as p:
        freeze_loaded_modules()
        for event in p.changes(spec.name, since=partition.start):
            if event.revision > partition.end:
                break
            if _bucket(spec, event.key, partition.count) != partition.index:
                continue
            values = event.row if event.row is not None else event.key
            for c in columns:
                batch[c].append(values.get(c))
            batch["_revision"].append(event.revision)
            batch["_op"].append(event.op)
            batch["_version"].append(event.version)
            batch["_time"].append(event.time)
            held += 1
            if held >= batch_rows:
                yield columns_to_batch(batch, schema)
                batch = {name: [] for name in names}
                held = 0
    if held:
        yield columns_to_batch(batch, schema)


@dataclass(eq=False)
class KvctlChangesReader(TableReader):
    """A batch read of a table's events (``spark.read`` with ``changes=true``) after
    ``starting`` (the ``startingRevision`` option; None: the oldest kept)."""

    starting: str | None = None

    @reports_errors
    def partitions(self) -> list[InputPartition]:  # type: ignore[override]
        """The events after ``startingRevision`` up to the store's revision now."""
        spec = spi.TableSpec.from_json(self.spec_json)
        with spi.connect(self.url, create=False) as p:
            start = starting_revision(p, spec.name, self.starting, EARLIEST)
            end = p.revision()
        return change_partitions(start, end, self.n)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        """The partition's events, in commit order."""
        assert isinstance(partition, ChangePartition)
        return read_changes(self.url, self.spec_json, partition, self.batch_rows, self.counter)


class KvctlStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """A streaming read of a table's events; offsets are ``{"revision": N}``."""

    def __init__(
        self,
        url: str,
        spec_json: str,
        starting: str | None,
        max_rows: int | None,
        partitions: int,
        batch_rows: int,
    ) -> None:
        self.url = url
        self.spec_json = spec_json
        self.table = spi.TableSpec.from_json(spec_json).name
        self.starting = starting
        self.max_rows = max_rows
        self.n = partitions
        self.batch_rows = batch_rows
        self.target: int | None = None
        """AvailableNow's last revision (None: no bound)."""

    @reports_errors
    def initialOffset(self) -> dict[str, int]:
        """Where a new query starts: ``startingRevision`` (default ``latest``)."""
        with spi.connect(self.url, create=False) as p:
            return {"revision": starting_revision(p, self.table, self.starting, LATEST)}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxRowsPerBatch`` as Spark's read limit (none: every available event)."""
        return ReadAllAvailable() if self.max_rows is None else ReadMaxRows(self.max_rows)

    @reports_errors
    def prepareForTriggerAvailableNow(self) -> None:
        """AvailableNow: read up to the store's revision now, and no further."""
        with spi.connect(self.url, create=False) as p:
            self.target = p.revision()

    @reports_errors
    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        """The next batch's end after ``start`` (``start`` itself when nothing is new);
        a compacted ``start`` fails naming the oldest kept revision."""
        begin = _revision_of(start)
        with spi.connect(self.url, create=False) as p:
            if isinstance(limit, ReadMaxRows):
                end = admitted_end(p, self.table, begin, limit.max_rows, self.target)
            else:
                end = available_end(p, self.table, begin, self.target)
        return {"revision": end}

    @reports_errors
    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:  # type: ignore[override]
        """The batch's key-hash tasks."""
        return change_partitions(_revision_of(start), _revision_of(end), self.n)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:  # type: ignore[override]
        """The partition's events, in commit order (the same ones on a replay)."""
        assert isinstance(partition, ChangePartition)
        return read_changes(self.url, self.spec_json, partition, self.batch_rows)

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to release: the feed keeps events until compaction or retention."""


def _revision_of(offset: Any) -> int:
    """The revision of an offset ``{"revision": N}``."""
    if not isinstance(offset, dict) or not isinstance(offset.get("revision"), int):
        raise spi.InvalidFieldError(f'a kvctl offset is {{"revision": N}}, got {offset!r}')
    return int(offset["revision"])


__all__ = [
    "EARLIEST",
    "LATEST",
    "ChangePartition",
    "KvctlChangesReader",
    "KvctlStreamReader",
    "admitted_end",
    "available_end",
    "change_arrow_schema",
    "oldest_kept",
    "require_feed",
    "starting_revision",
]
