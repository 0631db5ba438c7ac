"""Rows a load need not validate again (:class:`ValidatedRows`), taken by a load a
batch at a time (:class:`ColumnFeed`) and held as columns (:class:`ColumnRows`) or
as one Arrow record batch (:class:`ArrowRows`) by the preparers that encode them so
(:mod:`spi.load`)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, repeat
from typing import Any, overload

from spi.arrow import arrow_columns
from spi.spec import TableSpec


class ValidatedRows:
    """Rows a load need not validate again, given column by column: ``batches`` yields
    lists of columns, one list per column of ``spec`` in declaration order (all of one
    length), holding exactly the values :func:`spi.validate.validate_row` returns
    for the rows (canonical: timestamps aware in UTC, floats rounded to float32,
    ``-0.0`` as ``0.0``, NaN as ``math.nan``); with ``arrow``, Arrow record batches
    of :func:`spi.arrow.arrow_schema` holding those values instead.

    A front end that has validated its input column by column (``kvctl put --file``)
    passes them to ``load`` wrapped in this, and a provider may encode them column by
    column too (from Arrow, without a Python object per value). Iterated, they are
    rows as dicts; a load into a table whose spec is not ``spec`` (it changed since)
    validates them as any rows, and so does a load that keeps versions. With
    ``distinct_keys`` the caller has counted the keys and vouches that no two rows
    share one (then no batch's keys need checking against another's).
    """

    def __init__(
        self, spec: TableSpec, batches: Iterable[Any], *, arrow: bool = False, distinct_keys: bool = False
    ) -> None:
        self.spec = spec
        self.batches = batches
        self.arrow = arrow
        self.distinct_keys = distinct_keys

    def __iter__(self) -> Iterator[dict[str, Any]]:
        names = self.spec.columns
        for batch in self.batches:
            columns = arrow_columns(batch) if self.arrow else batch
            yield from map(dict, map(zip, repeat(names), zip(*columns)))


class ColumnFeed:
    """The batches of a :class:`ValidatedRows`, taken ``n`` rows at a time whatever the
    batches' own lengths: as lists of columns (:meth:`take`; slices of lists, in C) or,
    when they are Arrow's (:attr:`arrow`), as one record batch (:meth:`take_arrow`)."""

    def __init__(self, spec: TableSpec, batches: Iterable[Any], *, arrow: bool = False) -> None:
        self._width = len(spec.columns)
        self._batches = iter(batches)
        self._current: Any = None
        self._at = 0
        self.arrow = arrow
        """Whether the rows are Arrow record batches."""

    def take(self, n: int) -> list[list[Any]]:
        """The columns of the next ``n`` rows (fewer at the end; none once it is reached)."""
        if self.arrow:
            batch = self.take_arrow(n)
            return [[] for _ in range(self._width)] if batch is None else arrow_columns(batch)
        parts = self._parts(n)
        if not parts:
            return [[] for _ in range(self._width)]
        if len(parts) == 1:
            return parts[0]  # type: ignore[no-any-return]
        return [list(chain.from_iterable(part[i] for part in parts)) for i in range(self._width)]

    def take_arrow(self, n: int) -> Any:
        """The next ``n`` rows (fewer at the end) as one Arrow record batch, or None once
        the end is reached (:attr:`arrow` feeds only)."""
        import pyarrow as pa

        parts = self._parts(n)
        if not parts:
            return None
        return parts[0] if len(parts) == 1 else pa.concat_batches(parts)

    def _length(self) -> int:
        if self._current is None:
            return 0
        return int(self._current.num_rows) if self.arrow else len(self._current[0])

    def _parts(self, n: int) -> list[Any]:
        """Whole batches and slices of batches holding the next ``n`` rows."""
        parts: list[Any] = []
        need = n
        while need:
            left = self._length() - self._at
            if left <= 0:
                self._current = next(self._batches, None)
                self._at = 0
                if self._current is None:
                    break
                continue
            step = min(need, left)
            start, self._at = self._at, self._at + step
            if start == 0 and step == self._length():
                parts.append(self._current)
            elif self.arrow:
                parts.append(self._current.slice(start, step))
            else:
                parts.append([c[start : self._at] for c in self._current])
            need -= step
        return parts


class ColumnRows(Sequence[tuple[Any, ...]]):
    """Rows held as their columns (one list per column): what a preparer that encodes
    column by column takes of a :class:`ValidatedRows`. Indexed or iterated, rows are
    tuples; sliced, a :class:`ColumnRows` again."""

    __slots__ = ("columns",)

    def __init__(self, columns: list[list[Any]] | ColumnRows) -> None:
        self.columns: list[list[Any]] = columns.columns if isinstance(columns, ColumnRows) else columns

    def __len__(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    @overload
    def __getitem__(self, index: int) -> tuple[Any, ...]: ...

    @overload
    def __getitem__(self, index: slice) -> ColumnRows: ...

    def __getitem__(self, index: int | slice) -> tuple[Any, ...] | ColumnRows:
        if isinstance(index, slice):
            return ColumnRows([c[index] for c in self.columns])
        return tuple(c[index] for c in self.columns)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return zip(*self.columns)


class ArrowRows(Sequence[tuple[Any, ...]]):
    """Rows held as one Arrow record batch (:attr:`batch`, every column of the spec in
    declaration order): what a preparer that writes Arrow as it is takes of an Arrow
    :class:`ValidatedRows`. Indexed or iterated, rows are tuples of spi values (the
    batch is converted once, when first needed); sliced, an :class:`ArrowRows` again."""

    __slots__ = ("_columns", "batch")

    def __init__(self, batch: Any) -> None:
        self.batch = batch
        self._columns: list[list[Any]] | None = None

    @property
    def columns(self) -> list[list[Any]]:
        """The columns as lists of spi values."""
        if self._columns is None:
            self._columns = arrow_columns(self.batch)
        return self._columns

    def __len__(self) -> int:
        return int(self.batch.num_rows)

    @overload
    def __getitem__(self, index: int) -> tuple[Any, ...]: ...

    @overload
    def __getitem__(self, index: slice) -> ArrowRows: ...

    def __getitem__(self, index: int | slice) -> tuple[Any, ...] | ArrowRows:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            assert step == 1, "ArrowRows slices are contiguous"
            return ArrowRows(self.batch.slice(start, max(0, stop - start)))
        return tuple(c[index] for c in self.columns)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return zip(*self.columns)

    def key_set(self, key: Sequence[str]) -> set[tuple[Any, ...]]:
        """The distinct tuples of the ``key`` columns (only those are converted)."""
        if self._columns is None:
            return set(zip(*arrow_columns(self.batch.select(list(key)))))
        names = self.batch.schema.names
        return set(zip(*(self._columns[names.index(k)] for k in key)))
