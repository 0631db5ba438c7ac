"""Arrow record batches ↔ spi rows, with the exact types of a table spec."""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import pyarrow as pa

from spi import FieldType, InvalidFieldError, KvError, TableSpec
from spi.textvalues import from_json_value, key_words, parse_field
from spi.validate import validate_row

Converter = Callable[[Any], Any]


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
    text columns convert by ``text_rules`` (see :data:`TEXT_RULES`). A value that
    does not convert raises the spi error, naming the column, the value and the row's key."""
    names = batch.schema.names
    raw = [column.to_pylist() for column in batch.columns]
    converters = [_converter(spec, name, field.type, text_rules) for name, field in zip(names, batch.schema)]

    def key_note(row: int) -> str:
        key = []
        for k in spec.primary_key:
            i = names.index(k)
            value, convert = raw[i][row], converters[i]
            with contextlib.suppress(KvError):
                value = value if convert is None else convert(value)
            key.append(value)
        return f" (row with key {key_words(spec, key)})"

    columns: list[list[Any]] = []
    for values, convert in zip(raw, converters):
        if convert is not None:
            values = _convert_column(values, convert, key_note)
        columns.append(values)
    for values in zip(*columns):
        yield dict(zip(names, values))


def _convert_column(values: list[Any], convert: Converter, key_note: Callable[[int], str]) -> list[Any]:
    out = []
    for row, value in enumerate(values):
        try:
            out.append(convert(value))
        except KvError as exc:
            exc.args = (f"{exc}{key_note(row)}",)
            raise
    return out


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
                exc.args = (f"{exc} (row with key {key_words(spec, [row.get(k) for k in spec.primary_key])})",)
                raise
            n += 1
    return n
