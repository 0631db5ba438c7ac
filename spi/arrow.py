"""spi values as Apache Arrow: the type of each field type and record batches from
column batches. pyarrow is imported inside the functions, so spi stays importable
without it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spi.spec import TableSpec
from spi.types import FieldType

if TYPE_CHECKING:
    import pyarrow as pa


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
