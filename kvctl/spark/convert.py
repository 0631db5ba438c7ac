"""Arrow record batches ↔ spi rows, with the exact types of a table spec."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from spi import FieldType, InvalidFieldError, KvError, TableSpec
from spi.textvalues import from_json_value, parse_field
from spi.validate import validate_row

Converter = Callable[[Any], Any]


def rows_to_batches(rows: Iterable[Mapping[str, Any]], schema: pa.Schema, batch_rows: int) -> Iterator[pa.RecordBatch]:
    """Record batches of at most ``batch_rows`` rows with exactly ``schema`` (bounded memory)."""
    names = schema.names
    batch: list[Mapping[str, Any]] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= batch_rows:
            yield _batch(batch, names, schema)
            batch = []
    if batch:
        yield _batch(batch, names, schema)


def _batch(rows: list[Mapping[str, Any]], names: list[str], schema: pa.Schema) -> pa.RecordBatch:
    arrays = [pa.array([row[name] for row in rows], type=schema.field(name).type) for name in names]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def check_columns(spec: TableSpec, columns: Iterable[str]) -> None:
    """Every input column must be a column of the table, and every key column present."""
    given = list(columns)
    unknown = [c for c in given if not spec.has_column(c)]
    if unknown:
        raise InvalidFieldError(
            f"input column(s) {', '.join(unknown)} are not in table {spec.name!r} (columns: {', '.join(spec.columns)})",
            column=unknown[0],
        )
    missing = [k for k in spec.primary_key if k not in given]
    if missing:
        raise InvalidFieldError(f"the input has no key column(s) {', '.join(missing)}", column=missing[0])


TEXT_RULES = ("json", "csv")
"""How text converts to other types: ``json`` (bytes: base64, ``""`` is empty bytes) or
``csv`` (CLI.md's CSV rule: an empty field is null in every non-string column)."""


def _converter(spec: TableSpec, column: str, source: pa.DataType, text_rules: str) -> Converter | None:
    """How to turn one Arrow value of type ``source`` into the column's spi value
    (None: pass it as is and let the table validate it)."""
    target = spec.type_of(column)
    if (pa.types.is_string(source) or pa.types.is_large_string(source)) and target is not FieldType.STRING:
        if text_rules == "json" and target in (FieldType.BYTES, FieldType.TIMESTAMP):
            return lambda v: None if v is None else from_json_value(spec, column, v)
        # Numbers and true/false as text, ISO 8601, base64; an empty field is null.
        return lambda v: None if v is None else parse_field(spec, column, v)
    if pa.types.is_floating(source) and target.is_integer:
        return lambda v: None if v is None else from_json_value(spec, column, v)
    if pa.types.is_timestamp(source) and source.tz is None:
        return lambda v: None if v is None else v.replace(tzinfo=dt.UTC)
    return None


def batch_rows(spec: TableSpec, batch: pa.RecordBatch, text_rules: str = "json") -> Iterator[dict[str, Any]]:
    """The rows of an Arrow batch as spi values for ``spec`` (not yet validated);
    text columns convert by ``text_rules`` (see :data:`TEXT_RULES`)."""
    names = batch.schema.names
    columns: list[list[Any]] = []
    for i, name in enumerate(names):
        values = batch.column(i).to_pylist()
        convert = _converter(spec, name, batch.schema.field(i).type, text_rules)
        if convert is not None:
            values = [_with_key(spec, names, batch, i, j, convert, v) for j, v in enumerate(values)]
        columns.append(values)
    for values in zip(*columns):
        yield dict(zip(names, values))


def _with_key(
    spec: TableSpec, names: list[str], batch: pa.RecordBatch, col: int, row: int, convert: Converter, value: Any
) -> Any:
    try:
        return convert(value)
    except KvError as exc:
        exc.args = (f"{exc}{_key_note(spec, names, batch, row)}",)
        raise


def _key_note(spec: TableSpec, names: list[str], batch: pa.RecordBatch, row: int) -> str:
    """`` (row with key id=5)`` for error messages, or '' if the key is not readable."""
    try:
        parts = [f"{k}={batch.column(names.index(k))[row].as_py()!r}" for k in spec.primary_key]
    except (ValueError, IndexError):
        return ""
    return f" (row with key {', '.join(parts)})"


def check_batches(spec: TableSpec, batches: Iterable[pa.RecordBatch], text_rules: str = "json") -> int:
    """Convert and validate every row of ``batches`` without writing; the row count.

    A bad value raises the spi error, naming the column, the value and the row's key.
    """
    n = 0
    for batch in batches:
        for row in batch_rows(spec, batch, text_rules):
            try:
                validate_row(spec, row)
            except KvError as exc:
                keys = ", ".join(f"{k}={row.get(k)!r}" for k in spec.primary_key)
                exc.args = (f"{exc} (row with key {keys})",)
                raise
            n += 1
    return n
