"""Scans ordered by any column, indexed or not (CLI.md, "Sorting without an index").

``Table.scan(order_by=...)`` reads a key or an index in order and refuses any other
column (SPI.md). :func:`sorted_scan` orders by any column and says how many rows
matched. A store that sorts by itself (:class:`StoreSort`: PostgreSQL, ORDER BY in the
server) does the work; for every other store the rows are read in key order and sorted
here by an external merge sort in bounded memory:

- runs of ``run_rows`` rows are sorted in memory and spilled to temporary files
  (msgpack chunks of :data:`CHUNK_ROWS` rows, values, version and expiry as scanned);
- :data:`FAN_IN` runs of one level are merged into one run of the next as they fill,
  so the final merge (:func:`heapq.merge`) reads a bounded number of files;
- rows that fit one run never touch a file, and with a ``limit`` of at most half a
  run only the first ``limit + 1`` rows are kept (a bounded top-k): nothing spills.

The order is an indexed scan's: the column's value (nulls first, then the contract's
order of the type), then the key; ``descending`` reverses the whole order, tie-break
included. Rows compare by their encoded sort position
(:func:`spi.primitives.sort_position`): the bytes an index entry orders by and a scan
token holds, so the order is exactly an indexed scan's and a token resumes a sorted
scan (``after``) as it resumes an indexed one.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from typing import IO, TYPE_CHECKING, Protocol, runtime_checkable

import msgspec

from spi.blockfile import read_blocks, temp_file, write_block
from spi.filters import Expr, bind
from spi.keys import Range, resolve_range
from spi.primitives import ScanRequest, position_encoder, sort_position
from spi.row import Row
from spi.scanning import project
from spi.spec import TableSpec
from spi.tokens import ScanPosition, decode_token, encode_token
from spi.validate import check_limit, check_projection

if TYPE_CHECKING:
    from spi.protocols import Table

RUN_ROWS = 50_000
"""Rows sorted in memory at a time (the memory bound of a sort): a scan with more
matching rows spills runs of this many rows to temporary files."""
FAN_IN = 32
"""Runs merged at once: the most files a merge reads."""
CHUNK_ROWS = 256
"""Rows per record of a run file: what a merge holds of each run."""

_POSITION = itemgetter(0)
_ROW = itemgetter(1)

Entry = tuple[bytes, Row]
"""A row with its encoded sort position."""


@dataclass(frozen=True)
class SortPlan:
    """A validated sorted scan, what a :class:`StoreSort` runs.

    ``range`` and ``where`` are as given (checked); ``request`` holds them resolved and
    bound, the order, the position to start after (from the ``after`` token) and the
    rows to read: ``limit + 1``, to know whether more follow (None: all). ``columns``
    is the projection (key columns included; None: every column)."""

    spec: TableSpec
    range: Range | None
    where: Expr | None
    request: ScanRequest
    limit: int | None
    columns: tuple[str, ...] | None

    @classmethod
    def of(
        cls,
        spec: TableSpec,
        range: Range | None,
        where: Expr | None,
        order_by: str,
        descending: bool,
        limit: int | None,
        after: str | None,
        columns: Iterable[str] | None,
    ) -> SortPlan:
        """Check the arguments of :func:`sorted_scan` against ``spec``
        (:class:`~spi.errors.InvalidFieldError` for a bad one)."""
        spec.type_of(order_by)
        n = check_limit(limit)
        proj = check_projection(spec, columns)
        start = None if after is None else decode_token(spec, after, order_by=order_by, descending=descending).last
        request = ScanRequest(
            resolve_range(spec, range),
            None if where is None else bind(where, spec),
            order_by,
            bool(descending),
            start,
            None if n is None else n + 1,
        )
        return cls(spec, range, where, request, n, proj)

    @property
    def order_by(self) -> str:
        """The column the rows are sorted by."""
        assert self.request.order_by is not None
        return self.request.order_by

    @property
    def read_columns(self) -> tuple[str, ...]:
        """The columns the rows to sort need: the projection and ``order_by``."""
        spec, columns = self.spec, self.columns
        return spec.columns if columns is None else tuple(c for c in spec.columns if c in columns or c == self.order_by)


class SortedRows(Iterator[Row]):
    """The rows of a sorted scan, read lazily, and how many rows matched.

    ``count`` is every row in the range matching the filter, whatever ``limit`` and
    ``after`` leave out (known before the first row). Once the rows are exhausted,
    ``next_token`` resumes after the last one when the limit left rows out (None:
    none follow). ``spilled`` is the number of runs written to temporary files (0:
    sorted in memory, or by the store). Exhausting or closing it releases the files
    or the store's cursor."""

    def __init__(self, plan: SortPlan, rows: Iterator[Row], count: int, spilled: int = 0) -> None:
        self.count = count
        self.spilled = spilled
        self.next_token: str | None = None
        self._plan = plan
        self._source = rows
        self._rows = self._emit()

    def __next__(self) -> Row:
        return next(self._rows)

    def close(self) -> None:
        """Stop reading: release the temporary files or the store's cursor."""
        self._rows.close()
        _close(self._source)

    def _emit(self) -> Generator[Row, None, None]:
        """The rows up to the limit, projected; a token when more follow."""
        plan = self._plan
        last: Row | None = None
        given = 0
        try:
            for row in self._source:
                if given == plan.limit:
                    request = plan.request
                    at = request.after if last is None else sort_position(plan.spec, last, plan.order_by)
                    self.next_token = encode_token(plan.spec, ScanPosition(plan.order_by, request.descending, at))
                    return
                yield row if plan.columns is None else project(row, plan.columns)
                last = row
                given += 1
        finally:
            _close(self._source)


@runtime_checkable
class StoreSort(Protocol):
    """A table or auto-commit handle whose store sorts rows itself (PostgreSQL):
    :func:`sorted_scan` and :func:`explain_sorted` hand it the checked plan."""

    def sort_rows(self, plan: SortPlan) -> tuple[Iterator[Row], int]:
        """The rows ``plan.request`` asks for in its order (unprojected, at most
        ``request.limit``), and how many rows in its range match its filter."""
        ...

    def explain_sort(self, plan: SortPlan) -> str:
        """How the store runs ``plan``, reading nothing."""
        ...


def sorted_scan(
    table: Table,
    range: Range | None = None,
    *,
    where: Expr | None = None,
    order_by: str,
    descending: bool = False,
    limit: int | None = None,
    after: str | None = None,
    columns: Iterable[str] | None = None,
    run_rows: int = RUN_ROWS,
) -> SortedRows:
    """The matching rows of ``table`` (a transaction's table or an auto-commit handle)
    ordered by any column ``order_by`` as an indexed scan orders (nulls first, the key
    as tie-break, ``descending`` reversing both), at most ``limit`` of them, after the
    ``after`` token of an earlier sorted scan; ``columns`` projects as in ``scan``.

    All matching rows are read (and counted: :attr:`SortedRows.count`) before the
    first is returned, so errors raise here. The store sorts when it can
    (:class:`StoreSort`); otherwise an external merge sort holds at most ``run_rows``
    (positive) rows in memory and spills the rest to temporary files. On a key or
    indexed column ``table.scan`` gives the same order without sorting."""
    plan = SortPlan.of(table.spec, range, where, order_by, descending, limit, after, columns)
    if isinstance(table, StoreSort):
        rows, count = table.sort_rows(plan)
        return SortedRows(plan, rows, count)
    return _merge_sort(table, plan, run_rows)


def explain_sorted(
    table: Table, range: Range | None = None, *, where: Expr | None = None, order_by: str, descending: bool = False
) -> str:
    """How :func:`sorted_scan` runs such a scan, reading nothing: the store's plan
    (:class:`StoreSort`) or the key-order scan's, then a line on the sort."""
    plan = SortPlan.of(table.spec, range, where, order_by, descending, None, None, None)
    sort = f"sort: every matching row by {order_by} (nulls first), then key, {'de' if descending else 'a'}scending"
    if isinstance(table, StoreSort):
        return f"{table.explain_sort(plan)}\n{sort}, in the store"
    return (
        f"{table.explain(range, where=where)}\n{sort}: in memory up to {RUN_ROWS} rows, "
        "else an external merge sort of runs spilled to temporary files"
    )


def _merge_sort(table: Table, plan: SortPlan, run_rows: int) -> SortedRows:
    """:func:`sorted_scan` over a key-order scan of ``table`` (see the module docs)."""
    request, position = plan.request, position_encoder(plan.spec, plan.order_by)
    names = plan.read_columns
    rows = table.scan(plan.range, where=plan.where, columns=None if plan.columns is None else names)
    start, descending, keep = request.after, request.descending, request.limit
    top = keep if keep is not None and keep * 2 <= run_rows else None  # keep the first rows only: nothing spills
    runs = _Runs(names, descending)
    buffer: list[Entry] = []
    count = 0
    try:
        for row in rows:
            count += 1
            at = position(row)
            if start is not None and (at >= start if descending else at <= start):
                continue
            if len(buffer) >= run_rows:  # full, and one more row: a run is done
                buffer.sort(key=_POSITION, reverse=descending)
                if top is not None:
                    del buffer[top:]
                else:
                    runs.add(buffer)
                    buffer = []
            buffer.append((at, row))
        buffer.sort(key=_POSITION, reverse=descending)
        if top is not None:
            del buffer[top:]
    except BaseException:
        runs.close()
        raise
    finally:
        _close(rows)
    return SortedRows(plan, runs.merged(buffer), count, runs.spilled)


class _Runs:
    """Sorted runs of rows of ``names`` spilled to temporary files, merged level by
    level as :data:`FAN_IN` of a level gather."""

    def __init__(self, names: tuple[str, ...], descending: bool) -> None:
        self._names = names
        self._descending = descending
        self._levels: list[list[IO[bytes]]] = []
        self.spilled = 0

    def add(self, entries: list[Entry]) -> None:
        """Spill one sorted run."""
        run = self._write(entries)
        self.spilled += 1
        level = 0
        while True:
            if level == len(self._levels):
                self._levels.append([])
            files = self._levels[level]
            files.append(run)
            if len(files) < FAN_IN:
                return
            self._levels[level] = []
            try:
                run = self._write(self._merge(files))
            finally:
                _close_all(files)
            level += 1

    def merged(self, rest: list[Entry]) -> Iterator[Row]:
        """Every spilled row and those of ``rest`` (sorted, in memory), in order."""
        files = [f for level in self._levels for f in level]
        self._levels = []
        if not files:
            return map(_ROW, rest)
        return _Merged(files, map(_ROW, self._merge(files, rest)))

    def _merge(self, files: list[IO[bytes]], rest: list[Entry] | None = None) -> Iterator[Entry]:
        streams = [self._read(f) for f in files]
        if rest:
            streams.append(iter(rest))
        return heapq.merge(*streams, key=_POSITION, reverse=self._descending)

    def close(self) -> None:
        """Remove every run (a sort that failed)."""
        _close_all([f for level in self._levels for f in level])
        self._levels = []

    def _write(self, entries: Iterable[Entry]) -> IO[bytes]:
        names, encoder = self._names, msgspec.msgpack.Encoder()
        out = temp_file("kvctl-sort-")  # closed by whoever merges it
        try:
            it = iter(entries)
            while chunk := list(itertools.islice(it, CHUNK_ROWS)):
                write_block(
                    out, encoder, [(at, [row[c] for c in names], row.version, row.expires) for at, row in chunk]
                )
        except BaseException:
            out.close()
            raise
        return out

    def _read(self, source: IO[bytes]) -> Iterator[Entry]:
        names = self._names
        for block in read_blocks(source):
            for at, values, version, expires in block:
                yield at, Row(dict(zip(names, values)), version, expires)


class _Merged(Iterator[Row]):
    """The merged rows of spilled runs; closing it removes the runs' files."""

    def __init__(self, files: list[IO[bytes]], rows: Iterator[Row]) -> None:
        self._files = files
        self._rows = rows

    def __next__(self) -> Row:
        return next(self._rows)

    def close(self) -> None:
        """Remove the runs."""
        _close_all(self._files)


def _close(rows: Iterator[Row]) -> None:
    """Close ``rows`` if it can be (a generator, a store cursor)."""
    close = getattr(rows, "close", None)
    if close is not None:
        close()


def _close_all(files: list[IO[bytes]]) -> None:
    for f in files:
        f.close()


__all__ = ["RUN_ROWS", "SortPlan", "SortedRows", "StoreSort", "explain_sorted", "sorted_scan"]
