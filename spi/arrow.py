"""spi values as Apache Arrow: the type of each field type and record batches from
column batches. pyarrow is imported inside the functions, so spi stays importable
without it."""

from __future__ import annotations

import datetime as dt
import functools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spi.spec import TableSpec
from spi.types import FieldType

if TYPE_CHECKING:
    import pyarrow as pa

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECONDS = functools.partial(dt.timedelta, 0, 0)


def arrow_type(ftype: FieldType) -> pa.DataType:
    """The Arrow type of an spi field type (:meth:`spi.types.ColumnType.arrow_type`)."""
    return ftype.impl.arrow_type()


def arrow_schema(spec: TableSpec, columns: Sequence[str] | None = None) -> pa.Schema:
    """The Arrow schema of ``columns`` of a table (default: all, in declaration order);
    key columns are non-nullable."""
    import pyarrow as pa

    names = spec.columns if columns is None else columns
    return pa.schema([pa.field(c, arrow_type(spec.type_of(c)), nullable=not spec.is_key(c)) for c in names])


def columns_to_batch(columns: Mapping[str, Sequence[Any]], schema: pa.Schema) -> pa.RecordBatch:
    """One Arrow record batch with exactly ``schema`` from an spi column batch (every column present)."""
    import pyarrow as pa

    arrays = [pa.array(columns[field.name], type=field.type) for field in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def record_batches(
    spec_batches: Iterable[tuple[TableSpec, Mapping[str, Sequence[Any]]]],
) -> Iterator[pa.RecordBatch]:
    """Record batches of (spec, column batch) pairs, each typed by its spec."""
    for spec, columns in spec_batches:
        yield columns_to_batch(columns, arrow_schema(spec, list(columns)))


def arrow_columns(batch: pa.RecordBatch) -> list[list[Any]]:
    """The columns of a record batch typed by :func:`arrow_schema` as lists of spi
    values (canonical: timestamps are aware datetimes in ``datetime.UTC``, NaN is
    ``math.nan``), built in C-level passes."""
    import pyarrow as pa
    import pyarrow.compute as pc

    columns: list[list[Any]] = []
    for column in batch.columns:
        if pa.types.is_timestamp(column.type):  # pyarrow's own conversion is per value, in Python
            micros = column.cast(pa.int64()).to_pylist()
            if column.null_count:
                columns.append([None if m is None else _EPOCH + _MICROSECONDS(m) for m in micros])
            else:
                columns.append(list(map(_EPOCH.__add__, map(_MICROSECONDS, micros))))
        elif pa.types.is_floating(column.type) and pc.any(pc.is_nan(column)).as_py():
            columns.append([math.nan if v != v else v for v in column.to_pylist()])  # the one NaN of spi.types
        else:
            columns.append(column.to_pylist())
    return columns
