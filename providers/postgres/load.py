"""The bulk load path: COPY (binary) straight into the table, or into a temporary
table followed by one ``INSERT ... SELECT ... ON CONFLICT`` with the same version
arithmetic as one upsert/insert/replace per row.

A batch whose key range holds no rows yet is copied straight into the table (every
row is new: version 1). Otherwise it goes through a temporary table. A batch with a
key twice keeps the sequential per-row path, so later rows see earlier ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as pg_insert

from providers.postgres.schema import VERSION
from providers.postgres.session import PgSession
from providers.postgres.sql import range_condition
from spi.errors import RowExistsError
from spi.keys import ResolvedRange, key_of
from spi.spec import TableSpec
from spi.textvalues import key_words
from spi.types import FieldType

COPY_TYPES = {
    FieldType.INT: "int4",
    FieldType.LONG: "int8",
    FieldType.FLOAT: "float4",
    FieldType.DOUBLE: "float8",
    FieldType.STRING: "text",
    FieldType.BYTES: "bytea",
    FieldType.BOOL: "bool",
    FieldType.TIMESTAMP: "timestamptz",
}
"""PostgreSQL type of each field type for binary COPY."""
POSITION = "kv_pos"


def load_batch(
    tx: PgSession,
    spec: TableSpec,
    target: sa.Table,
    rows: list[dict[str, Any]],
    mode: str,
    sequential: Callable[[list[dict[str, Any]], str], None],
) -> None:
    """Write a batch of validated rows into ``target`` exactly like one write per row,
    in bulk (``sequential`` writes a batch that repeats a key row by row)."""
    keys = [key_of(spec, r) for r in rows]
    if len(set(keys)) < len(keys):
        sequential(rows, mode)
        return
    every = spec.columns
    groups: dict[tuple[str, ...], list[int]] = {}
    if mode == "upsert":
        for i, r in enumerate(rows):
            given = every if len(r) == len(every) else tuple(c for c in every if c in r)
            groups.setdefault(given, []).append(i)
    else:
        groups[every] = list(range(len(rows)))
    for columns, positions in groups.items():
        _load_group(tx, spec, target, columns, [rows[i] for i in positions], [keys[i] for i in positions], mode)


def _load_group(
    tx: PgSession,
    spec: TableSpec,
    target: sa.Table,
    columns: tuple[str, ...],
    rows: list[dict[str, Any]],
    keys: list[tuple[Any, ...]],
    mode: str,
) -> None:
    span = ResolvedRange(min(keys), True, max(keys), True)
    occupied = tx.execute(
        sa.select(sa.literal(1)).select_from(target).where(*range_condition(target, spec, span)).limit(1)
    )
    if occupied.first() is None:
        # No row in the batch's key range: every row is an insert at version 1.
        _copy(
            tx,
            target.schema,
            target.name,
            [*columns, VERSION],
            [*(COPY_TYPES[spec.type_of(c)] for c in columns), "int8"],
            ((*map(r.get, columns), 1) for r in rows),
        )
        return
    temp = _temp_table(tx, target, columns)
    _copy(
        tx,
        None,
        temp.name,
        [POSITION, *columns],
        ["int8", *(COPY_TYPES[spec.type_of(c)] for c in columns)],
        ((i, *map(r.get, columns)) for i, r in enumerate(rows)),
    )
    if mode == "insert":
        clash = tx.execute(
            sa.select(temp.c[POSITION])
            .join(target, sa.and_(*(temp.c[k] == target.c[k] for k in spec.primary_key)))
            .order_by(temp.c[POSITION])
            .limit(1)
        ).first()
        if clash is not None:
            key = keys[clash[0]]
            raise RowExistsError(f"a row with key {key_words(spec, key)} already exists in {spec.name!r}", key=key)
    select = sa.select(*(temp.c[c] for c in columns), sa.literal(1, sa.BigInteger))
    stmt = pg_insert(target).from_select([*columns, VERSION], select)
    if mode != "insert":
        changed = columns if mode == "upsert" else spec.columns
        values: dict[str, Any] = {c: stmt.excluded[c] for c in changed if not spec.is_key(c)}
        values[VERSION] = target.c[VERSION] + 1
        stmt = stmt.on_conflict_do_update(index_elements=[target.c[k] for k in spec.primary_key], set_=values)
    tx.execute(stmt)


def _temp_table(tx: PgSession, target: sa.Table, columns: tuple[str, ...]) -> sa.Table:
    temp = sa.Table(
        tx.temp_name(),
        sa.MetaData(),
        sa.Column(POSITION, sa.BigInteger),
        *(sa.Column(target.c[c].name, target.c[c].type) for c in columns),
        prefixes=["TEMPORARY"],
        postgresql_on_commit="DROP",
    )
    tx.execute(sa.schema.CreateTable(temp))
    return temp


def _copy(tx: PgSession, schema: str | None, name: str, columns: list[str], types: list[str], rows: Any) -> None:
    from psycopg import sql

    target = sql.Identifier(name) if schema is None else sql.Identifier(schema, name)
    statement = sql.SQL("COPY {} ({}) FROM STDIN (FORMAT BINARY)").format(
        target, sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    )
    with tx.errors(), tx.driver_connection().cursor() as cursor, cursor.copy(statement) as copy:
        copy.set_types(types)
        for row in rows:
            copy.write_row(row)
