"""Checksums computed in the server: the canonical row hash of :mod:`spi.checksum` in SQL.

Each column's canonical bytes are built with PostgreSQL's binary send functions, which
write exactly what the Python side packs: ``int8send`` (8-byte big-endian signed) for
``int``/``long`` (an ``integer`` cast to ``bigint``), ``float8send`` of the value as a
``double precision`` (a ``real`` widens exactly) plus 0.0 (so -0.0 is 0.0) with every
NaN replaced by one encoding, ``int4send`` lengths before ``convert_to(text, 'UTF8')``
and ``bytea`` values, one byte for a bool, and ``int8send`` of the microseconds since
the epoch (``extract(epoch ...)`` is exact ``numeric`` since PostgreSQL 14) for a
``timestamptz``. The row hash is ``('x' || substr(md5(bytes), 1, 16))::bit(64)::bigint``:
the digest's first 8 bytes as a signed 64-bit integer, which sums modulo 2^64 to the same
checksum as the unsigned value Python takes. Only live rows count (:func:`live_rows`).

A checksum is one aggregate statement over a key range; the segments of a range are
one statement too: the rows numbered in key order by ``row_number()``, grouped into
runs of ``size`` rows, each run's count, hash sum, first and last keys (of the rows
whose numbers start and end the run), so an equal table sends only its segments to
the client.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from providers.postgres.scan_sql import live_rows
from providers.postgres.schema import VERSION, value_converter
from spi.checksum import MASK, NAN, Checksum, Segment
from spi.filters import Expr
from spi.keys import ResolvedRange
from spi.spec import TableSpec
from spi.types import FieldType


def _bytea(data: bytes) -> Any:
    """A bytea constant (literal SQL: no parameter per use)."""
    return sa.literal_column(f"'\\x{data.hex()}'::bytea", pg.BYTEA)


def _cat(*parts: Any) -> Any:
    """``a || b || ...`` of bytea expressions."""
    return reduce(lambda a, b: a.op("||", return_type=pg.BYTEA)(b), parts)


def _int8send(value: Any) -> Any:
    return sa.func.int8send(sa.cast(value, sa.BigInteger), type_=pg.BYTEA)


def _sized(tag: int, data: Any) -> Any:
    length = sa.func.int4send(sa.func.octet_length(data), type_=pg.BYTEA)
    return _cat(_bytea(bytes([tag])), length, data)


def _value_bytes(ftype: FieldType, column: Any) -> Any:
    """The canonical bytes (tag included) of a non-null value of ``column``."""
    tag = ftype.impl.checksum_tag
    if ftype.is_integer:
        return _cat(_bytea(bytes([tag])), _int8send(column))
    if ftype in (FieldType.FLOAT, FieldType.DOUBLE):
        as_double = sa.cast(column, pg.DOUBLE_PRECISION)
        number = sa.func.float8send(as_double + sa.literal_column("0.0::float8"), type_=pg.BYTEA)
        nan = as_double == sa.literal_column("'NaN'::float8")
        return _cat(_bytea(bytes([tag])), sa.case((nan, _bytea(NAN)), else_=number))
    if ftype is FieldType.STRING:
        return _sized(tag, sa.func.convert_to(column, sa.literal_column("'UTF8'"), type_=pg.BYTEA))
    if ftype is FieldType.BYTES:
        return _sized(tag, column)
    if ftype is FieldType.BOOL:
        return sa.case((column, _bytea(bytes([tag, 1]))), else_=_bytea(bytes([tag, 0])))
    micros = sa.extract("epoch", column) * sa.literal_column("1000000")
    return _cat(_bytea(bytes([tag])), _int8send(micros))


def row_hash(table: sa.Table, spec: TableSpec, columns: Sequence[str], versions: bool) -> Any:
    """The bigint hash of a row of ``table``: its key, ``columns`` and with ``versions``
    its version, encoded as :mod:`spi.checksum` does."""
    parts = []
    for name in (*spec.primary_key, *columns):
        column = table.c[name]
        value = _value_bytes(spec.type_of(name), column)
        parts.append(value if spec.is_key(name) else sa.case((column.is_(None), _bytea(b"\x00")), else_=value))
    if versions:
        parts.append(_cat(_bytea(bytes([FieldType.LONG.impl.checksum_tag])), _int8send(table.c[VERSION])))
    digest = sa.func.substr(sa.func.md5(_cat(*parts), type_=sa.Text), 1, 16)
    hex_text = sa.literal_column("'x'", sa.Text).op("||", return_type=sa.Text)(digest)
    return sa.cast(sa.cast(hex_text, pg.BIT(64)), sa.BigInteger)


def checksum_select(
    table: sa.Table,
    spec: TableSpec,
    key_range: ResolvedRange,
    where: Expr | None,
    columns: Sequence[str],
    versions: bool,
) -> sa.Select[Any]:
    """SELECT the count and the sum of the row hashes of the live rows in range matching ``where``."""
    hashed = row_hash(table, spec, columns, versions)
    return (
        sa.select(sa.func.count(), sa.func.sum(hashed))
        .select_from(table)
        .where(*live_rows(table, spec, key_range, where))
    )


def read_checksum(row: Sequence[Any]) -> Checksum:
    """The :class:`Checksum` of the row :func:`checksum_select` returned."""
    count, total = row
    return Checksum(int(count), int(total or 0) & MASK)


def segments_select(
    table: sa.Table,
    spec: TableSpec,
    key_range: ResolvedRange,
    where: Expr | None,
    columns: Sequence[str],
    versions: bool,
    size: int,
    limit: int | None,
) -> sa.Select[Any]:
    """SELECT per run of ``size`` live rows in key order (in range, matching ``where``;
    at most ``limit`` runs): the run's count, hash sum, and the key columns of its first
    and of its last row (one-element arrays). With a limit the rows are read in key order up to it (the
    primary key's index), so a run costs its rows, not the range's."""
    keys = [table.c[k] for k in spec.primary_key]
    selected: Any = sa.select(*keys, row_hash(table, spec, columns, versions).label("kv_hash"))
    selected = selected.where(*live_rows(table, spec, key_range, where))
    if limit is not None:
        selected = selected.order_by(*keys).limit(size * limit)
    rows = selected.subquery("kv_rows")
    ordered = [rows.c[k] for k in spec.primary_key]
    n = sa.func.row_number().over(order_by=ordered) - 1
    last = sa.or_(n % size == size - 1, sa.func.lead(sa.literal_column("1")).over(order_by=ordered).is_(None))
    numbered = sa.select(
        *ordered,
        (n // size).label("kv_run"),
        (n % size == 0).label("kv_first"),
        last.label("kv_last"),
        rows.c.kv_hash,
    ).subquery("kv_numbered")
    run = numbered.c.kv_run
    out: list[Any] = [sa.func.count(), sa.func.sum(numbered.c.kv_hash)]
    for flag in (numbered.c.kv_first, numbered.c.kv_last):
        out += [sa.func.array_agg(numbered.c[k]).filter(flag) for k in spec.primary_key]
    return sa.select(*out).group_by(run).order_by(run)


def read_segments(spec: TableSpec, rows: Sequence[Sequence[Any]]) -> list[Segment]:
    """The :class:`Segment` of each row :func:`segments_select` returned."""
    converters = [value_converter(spec.type_of(k)) for k in spec.primary_key] * 2
    segments = []
    for row in rows:
        count, total, *ends = row
        keys = [v[0] if convert is None else convert(v[0]) for v, convert in zip(ends, converters)]
        n = len(spec.primary_key)
        segments.append(Segment(tuple(keys[:n]), tuple(keys[n:]), Checksum(int(count), int(total) & MASK)))
    return segments
