"""How a :class:`TableSpec` maps onto PostgreSQL: column types, names, indexes, the catalog."""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg
from sqlalchemy.engine import Dialect
from sqlalchemy.sql import quoted_name

from spi.clock import Clock, now_micros
from spi.codec import from_micros
from spi.spec import TableSpec
from spi.types import FieldType, to_float32

VERSION = "kv_version"
"""The row version column (user columns cannot start with ``kv_``)."""
EXPIRES = "kv_expires"
"""The row expiry column (timestamptz, null: never), with a partial index on the rows
that expire (the sweep's work list)."""
CATALOG = "kv_catalog"
"""The catalog table: one row per logical table with its spec as JSON."""
MAX_IDENTIFIER = 63

SQL_TYPES: dict[str, Callable[[], Any]] = {
    "int4": sa.Integer,
    "int8": sa.BigInteger,
    "float4": pg.REAL,
    "float8": pg.DOUBLE_PRECISION,
    "text": lambda: sa.Text(collation="C"),
    "bytea": pg.BYTEA,
    "bool": sa.Boolean,
    "timestamptz": lambda: pg.TIMESTAMP(timezone=True),
}
"""The SQLAlchemy type of each PostgreSQL type a field type names
(:attr:`spi.types.ColumnType.postgres`): this dialect's side of the type objects.
Strings compare by code point: COLLATE "C"."""


def type_name(ftype: FieldType) -> str:
    """PostgreSQL's name of a field's type: binary COPY's types, the casts of the values
    a single-statement write binds (so a prepared statement's types never depend on the
    first call's values)."""
    return ftype.impl.postgres


def sql_type(ftype: FieldType) -> Any:
    """A fresh SQLAlchemy type object for ``ftype``."""
    return SQL_TYPES[ftype.impl.postgres]()


def quoted(name: str) -> quoted_name:
    """An identifier SQLAlchemy always quotes (names are case-sensitive)."""
    return quoted_name(name, True)


def qualified(dialect: Dialect, *parts: str) -> str:
    """A quoted (schema-qualified) identifier as SQL text; names are validated, quoting
    is belt and braces."""
    quote = dialect.identifier_preparer.quote_identifier
    return ".".join(quote(p) for p in parts)


def derived_name(prefix: str, *parts: str) -> str:
    """A deterministic identifier of at most 63 bytes (long ones end in a hash)."""
    name = "_".join((prefix, *parts))
    if len(name.encode()) <= MAX_IDENTIFIER:
        return name
    digest = hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:12]
    return f"{name[: MAX_IDENTIFIER - len(digest) - 1]}_{digest}"


def index_name(table: str, column: str) -> str:
    """Name of the secondary index on ``table.column``."""
    return derived_name("kv_idx", table, column)


def expiry_index_name(table: str) -> str:
    """Name of the partial index on the expiry of the rows of ``table`` that expire."""
    return derived_name("kv_exp", table)


def pkey_name(table: str) -> str:
    """Name of the primary key constraint (explicit, so it never clashes with a table)."""
    return derived_name("kv_pk", table)


def build_table(spec: TableSpec, schema: str, clock: Clock | None = None) -> sa.Table:
    """The SQLAlchemy table for ``spec``: typed columns, primary key, version, expiry,
    indexes; with a test ``clock`` (:mod:`spi.clock`), the statements built on it
    decide expiry on that clock instead of the server's (see :func:`expiry_now`).

    An index on column c covers (c NULLS FIRST, key...), so scans ordered by c
    (nulls first, key as tie-break) read it in order in both directions.
    """
    metadata = sa.MetaData(schema=quoted(schema))
    # autoincrement=False: SQLAlchemy would make a lone integer key a serial column.
    columns = [
        sa.Column(quoted(f.name), sql_type(f.type), nullable=not spec.is_key(f.name), autoincrement=False)
        for f in spec.fields
    ]
    table = sa.Table(
        quoted(spec.name),
        metadata,
        *columns,
        sa.Column(VERSION, sa.BigInteger, nullable=False),
        sa.Column(EXPIRES, pg.TIMESTAMP(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint(*(quoted(k) for k in spec.primary_key), name=quoted(pkey_name(spec.name))),
    )
    for column in spec.indexes:
        index_columns = [table.c[column].nulls_first(), *(table.c[k] for k in spec.primary_key if k != column)]
        sa.Index(quoted(index_name(spec.name, column)), *index_columns)
    sa.Index(quoted(expiry_index_name(spec.name)), table.c[EXPIRES], postgresql_where=table.c[EXPIRES].isnot(None))
    if clock is not None:
        table.info[_NOW] = clock_now(clock)
    return table


# The factor is literal SQL: statements compiled to text once (the one-statement read)
# carry no bound parameters of their own.
SERVER_MICROS = sa.cast(sa.extract("epoch", sa.func.clock_timestamp()) * sa.literal_column("1000000"), sa.BigInteger)
"""The server's clock in microseconds since the epoch (the clock of expiry)."""


_NOW = "kv_now"
"""The key in a table's ``info`` of the expression of now on its test clock."""


def clock_now(clock: Clock) -> sa.BindParameter[dt.datetime]:
    """Now on a test ``clock``, as the statement's parameter ``kv_now`` (a timestamptz,
    read from the clock each time the statement runs, or is rendered with literals)."""
    return sa.bindparam(_NOW, callable_=lambda: from_micros(now_micros(clock)), type_=pg.TIMESTAMP(timezone=True))


def expiry_now(table: sa.FromClause) -> Any:
    """Now on the clock of expiry, for a statement on ``table`` (or an alias of it):
    the server's ``statement_timestamp()``, or on a table built with a test clock
    (:func:`build_table`) that clock's now as a bound parameter (only then: the
    statements of a provider without a test clock are the same as ever)."""
    source: Any = table.element if isinstance(table, sa.Alias) else table
    now = source.info.get(_NOW)
    return sa.func.statement_timestamp() if now is None else now


def live(table: sa.FromClause) -> Any:
    """The condition of the rows of ``table`` that have not expired (on the server's
    clock, or a test clock: :func:`expiry_now`)."""
    expires = table.c[EXPIRES]
    return sa.or_(expires.is_(None), expires > expiry_now(table))


def catalog_table(schema: str) -> sa.Table:
    """The catalog: ``name`` (text COLLATE "C") → ``spec`` (jsonb) and its fingerprint."""
    return sa.Table(
        CATALOG,
        sa.MetaData(schema=quoted(schema)),
        sa.Column("name", sa.Text(collation="C"), primary_key=True),
        sa.Column("spec", pg.JSONB, nullable=False),
        sa.Column("fingerprint", sa.Text, nullable=False),
    )


def catalog_fingerprint(spec: TableSpec) -> str:
    """The catalog row's fingerprint of a table: its spec's, marked while the table is
    frozen, so that every single-statement write built for the spec (each checks the
    fingerprint it was built with) stops matching the moment a freeze commits."""
    return f"{spec.fingerprint()}:frozen" if spec.frozen else spec.fingerprint()


def _timestamp(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is dt.UTC else value.astimezone(dt.UTC)


_CONVERTERS: dict[FieldType, Callable[[Any], Any]] = {
    FieldType.FLOAT: to_float32,  # real arrives as its shortest decimal text
    FieldType.TIMESTAMP: _timestamp,
    FieldType.BYTES: bytes,
}


def value_converter(ftype: FieldType) -> Callable[[Any], Any] | None:
    """The function turning a fetched non-null value of ``ftype`` into its canonical
    SPI value (None: it arrives as one)."""
    return _CONVERTERS.get(ftype)


def row_converters(spec: TableSpec) -> list[tuple[int, Callable[[Any], Any]]]:
    """(position, function) pairs turning fetched values into canonical SPI values."""
    return [(i, _CONVERTERS[f.type]) for i, f in enumerate(spec.fields) if f.type in _CONVERTERS]
