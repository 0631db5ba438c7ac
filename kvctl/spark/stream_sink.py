"""A Spark streaming sink into a table: ``df.writeStream.format("kvctl")``.

    events.writeStream.format("kvctl").option("url", URL).option("table", "orders")
        .option("checkpointLocation", DIR).start()

The input holds the table's key columns, any of its other columns, and optionally
``_op``, ``_version``, ``_revision``, ``_time`` (the columns of a ``changes=true``
read, so a change stream of one table applies onto another as it is). Each input
row is one write, in order (ordered by ``_revision`` when the input has it, input
order otherwise): an upsert (without ``_version`` the row's version goes up by 1;
with it the row gets that version, as ``copy`` writes rows), or a delete for
``_op`` ``delete``/``expire``.

Exactly once: every task writes its rows in transactions of ``batch_rows`` rows (fewer
when the store refuses one that large: etcd's limits), and each transaction also
records its place — micro-batch B, the last row N it applied of Spark partition P's
rows of the query Q (Q's id lives in the checkpoint) — as an applied position
(:mod:`spi.applied`, source ``spark:Q:P``) in the same transaction. A batch that runs
again after a crash (Spark replays it from the checkpoint with the same offsets, so
its tasks get the same rows, in the same order) skips every row at or below the
recorded position, however its transactions were cut: nothing is applied twice,
nothing is missed. Every event of one key must be in one
partition of the input (the kvctl source puts them there; repartition by key
otherwise), so that for one key the later row wins.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSourceStreamArrowWriter, WriterCommitMessage

import spi
from kvctl.spark.convert import batch_rows, check_columns
from kvctl.spark.errors import guard
from kvctl.spark.workers import freeze_loaded_modules
from spi import applied
from spi.changes import DELETE, EXPIRE, OPS
from spi.fitting import Fitting

META_COLUMNS = ("_op", "_version", "_revision", "_time")
"""Input columns that are not table columns: what each row does and where it came from."""
QUERY_ID = "sql.streaming.queryId"
"""The Spark local property holding the streaming query's id (kept in its checkpoint)."""
BATCH_ID = "streaming.sql.batchId"
"""The Spark local property holding the micro-batch id."""
ROWS_PER_BATCH = 1 << 31
"""Positions are ``batch * ROWS_PER_BATCH + n + 1`` once a task has applied its rows
0..n of the batch: ordered by batch, then row."""


def check_input(spec: spi.TableSpec, columns: list[str]) -> None:
    """The sink's input columns: key columns, other table columns and :data:`META_COLUMNS`."""
    check_columns(spec, [c for c in columns if c not in META_COLUMNS])


@dataclass(frozen=True)
class Write:
    """One input row: its table values, whether it deletes, its kept version (None:
    version + 1) and its source revision (None: input order)."""

    values: dict[str, Any]
    delete: bool
    version: int | None
    revision: int | None


@dataclass
class AppliedRows(WriterCommitMessage):
    """What one sink task did: rows written, and rows skipped as applied before."""

    rows: int
    skipped: int


def _writes(spec: spi.TableSpec, batch: pa.RecordBatch) -> Iterator[Write]:
    """The writes of one input batch (table columns converted to the table's types)."""
    names = batch.schema.names
    meta = {name: batch.column(names.index(name)).to_pylist() for name in META_COLUMNS if name in names}
    table = batch.select([n for n in names if n not in META_COLUMNS])
    ops = meta.get("_op")
    versions = meta.get("_version")
    revisions = meta.get("_revision")
    for i, values in enumerate(batch_rows(spec, table)):
        op = None if ops is None else ops[i]
        if op is not None and op not in OPS:
            raise spi.InvalidFieldError(f"column '_op' must be one of {', '.join(OPS)}, got {op!r}", column="_op")
        yield Write(
            values,
            op in (DELETE, EXPIRE),
            None if versions is None else versions[i],
            None if revisions is None else revisions[i],
        )


def _apply(tx: spi.Transaction, spec: spi.TableSpec, writes: list[Write]) -> None:
    """Apply ``writes`` in order in ``tx``: runs of the same kind as one load."""
    table = tx.table(spec.name)
    run: list[Write] = []

    def kind(w: Write) -> int:
        return 0 if w.delete else 1 if w.version is None else 2

    def flush() -> None:
        if not run:
            return
        if run[0].delete:
            for w in run:
                table.delete({k: w.values[k] for k in spec.primary_key})
        elif run[0].version is None:
            table.load([w.values for w in run], mode="upsert")
        else:
            kept = [spi.Row(w.values, w.version) for w in run if w.version is not None]
            table.load(kept, mode="upsert", keep_versions=True)
        run.clear()

    for w in writes:
        if run and kind(w) != kind(run[0]):
            flush()
        run.append(w)
    flush()


def _apply_from(
    tx: spi.Transaction, spec: spi.TableSpec, source: str, first: int, rows: list[Write]
) -> tuple[int, int]:
    """Apply the task's ``rows`` numbered from position ``first`` that its recorded
    position does not cover yet, and record the position of the last; (rows applied,
    rows skipped as applied before)."""
    skip = min(len(rows), max(0, (applied.position(tx, spec.name, source) or 0) - first + 1))
    if skip < len(rows):
        _apply(tx, spec, rows[skip:])
        applied.record(tx, spec.name, source, first + len(rows) - 1)
    return len(rows) - skip, skip


class KvctlStreamWriter(DataSourceStreamArrowWriter):
    """Applies each micro-batch's rows to the table, exactly once (see the module)."""

    def __init__(self, url: str, spec_json: str, batch_rows: int) -> None:
        self.url = url
        self.spec_json = spec_json
        self.batch_rows = batch_rows

    def write(self, iterator: Iterator[pa.RecordBatch]) -> AppliedRows:
        """Apply this task's rows in transactions of ``batch_rows``, each with its position."""
        from pyspark import TaskContext

        context = TaskContext.get()
        if context is None:
            raise RuntimeError("the kvctl streaming sink runs in Spark tasks only")
        query = context.getLocalProperty(QUERY_ID)
        batch = context.getLocalProperty(BATCH_ID)
        if not query or batch is None:
            raise RuntimeError("the kvctl streaming sink needs Spark's streaming query and batch ids")
        partition = context.partitionId()
        source = f"spark:{query}:{partition}"
        first = int(batch) * ROWS_PER_BATCH + 1
        done = list(guard(self._write(iterator, source, first), lambda: f"writing partition {partition}: "))
        return AppliedRows(sum(n for n, _ in done), sum(s for _, s in done))

    def _write(self, iterator: Iterator[pa.RecordBatch], source: str, first: int) -> Iterator[tuple[int, int]]:
        spec = spi.TableSpec.from_json(self.spec_json)
        writes = [w for batch in iterator for w in _writes(spec, batch)]
        if any(w.revision is not None for w in writes):
            writes.sort(key=lambda w: -1 if w.revision is None else w.revision)  # stable: input order within one
        if not writes:
            return
        with spi.connect(self.url) as p:
            freeze_loaded_modules()
            applied.ensure_table(p)

            def piece(start: int, stop: int) -> tuple[int, int]:
                return p.run(
                    partial(_apply_from, spec=spec, source=source, first=first + start, rows=writes[start:stop])
                )

            for _, done in Fitting(self.batch_rows).pieces(len(writes), piece):
                yield done

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing left to do: every task committed its rows with their positions."""

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Nothing to undo: committed chunks are recorded, so the batch's rerun skips them."""


__all__ = ["META_COLUMNS", "AppliedRows", "KvctlStreamWriter", "check_input"]
