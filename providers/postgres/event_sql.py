"""A change-fed write that records its own events: the SQL a single-statement write
(:mod:`providers.postgres.write_sql`) appends so that the write, the feed's next revision,
its events and the NOTIFY are one statement, one round trip, one implicit transaction.

After the write's CTE ``kv_w`` (and ``kv_o``, the row before, for puts)::

    kv_r AS (UPDATE kv_revision SET revision = revision + 1
             WHERE id = 1 AND EXISTS (SELECT FROM kv_w) RETURNING revision, clock_timestamp() AS at),
    kv_n AS (SELECT pg_notify(channel, kv_r.revision::text) FROM kv_r),
    kv_e AS (INSERT INTO kv_changes ... SELECT ... FROM kv_r, kv_n, kv_w ...)

A write that matched nothing takes no revision. The events are exactly those
:class:`~providers.postgres.table_writes.NativeWrites` records from the rows the statement
returns (see :mod:`providers.postgres.feed`): a put over an expired row is an
``expire`` of that row and then a put that created it (seq 1 and 2); any other put is
one event with ``created`` and ``prev``; a delete is a ``delete`` (an ``expire`` when
the row had expired). Their ``row`` bytes are the msgpack the Python side packs, built
in SQL from the rows' columns: integers as int64, ``float``/``double`` as float64,
strings as str32, bytes as bin32, timestamps as the timestamp extension (96-bit), so
a reader decodes the same values (only the byte lengths chosen may differ).
"""

from __future__ import annotations

import msgspec
from sqlalchemy.engine import Dialect

from providers.postgres.feed import CHANGES, OP_DELETE, OP_EXPIRE, OP_SET, REVISION, channel
from providers.postgres.schema import qualified
from spi.spec import TableSpec
from spi.types import FieldType

NIL, TRUE, FALSE = "'\\xc0'::bytea", "'\\xc3'::bytea", "'\\xc2'::bytea"


def _bytes(data: bytes) -> str:
    return f"'\\x{data.hex()}'::bytea"


def micros_sql(expr: str) -> str:
    """Microseconds since the epoch of the timestamptz ``expr`` (an int8)."""
    return (
        f"(floor(extract(epoch FROM {expr}))::int8 * 1000000 + mod(extract(microseconds FROM {expr})::int8, 1000000))"
    )


def _packed(ftype: FieldType, x: str) -> str:
    """The msgpack of the non-null value ``x`` of type ``ftype``."""
    if ftype in (FieldType.INT, FieldType.LONG):
        return f"'\\xd3'::bytea || int8send({x}::int8)"
    if ftype in (FieldType.FLOAT, FieldType.DOUBLE):
        return f"'\\xcb'::bytea || float8send({x}::float8)"
    if ftype is FieldType.BOOL:
        return f"CASE WHEN {x} THEN {TRUE} ELSE {FALSE} END"
    if ftype is FieldType.STRING:
        return f"'\\xdb'::bytea || int4send(length(convert_to({x}, 'UTF8'))) || convert_to({x}, 'UTF8')"
    if ftype is FieldType.BYTES:
        return f"'\\xc6'::bytea || int4send(length({x})) || {x}"
    micros = micros_sql(x)  # the timestamp extension, 96-bit: nanoseconds (uint32), seconds (int64)
    return (
        f"'\\xc70cff'::bytea || int4send((mod(mod({micros}, 1000000) + 1000000, 1000000) * 1000)::int4)"
        f" || int8send(floor({micros} / 1000000.0)::int8)"
    )


def packed_or_nil(ftype: FieldType, x: str) -> str:
    """The msgpack of ``x`` (nil when null)."""
    return f"CASE WHEN {x} IS NULL THEN {NIL} ELSE {_packed(ftype, x)} END"


def packed_row(spec: TableSpec, columns: list[str]) -> str:
    """The msgpack map ``{column: value}`` of a row whose values are the SQL
    expressions ``columns`` (in the spec's order), as :func:`msgspec.msgpack.encode`
    of the dict packs it."""
    n = len(spec.columns)
    head = bytes([0x80 | n]) if n < 16 else b"\xde" + n.to_bytes(2, "big")
    parts = [_bytes(head)]
    for name, expr in zip(spec.columns, columns):
        parts += [_bytes(msgspec.msgpack.encode(name)), packed_or_nil(spec.type_of(name), expr)]
    return " || ".join(parts)


class EventSql:
    """The event CTEs of one spec's single-statement writes (see the module docs)."""

    def __init__(self, spec: TableSpec, schema: str, dialect: Dialect) -> None:
        self.spec = spec
        self._revision = qualified(dialect, schema, REVISION)
        self._changes = qualified(dialect, schema, CHANGES)
        self._channel = "'" + channel(schema).replace("'", "''") + "'"

    def _ctes(self, select: str) -> str:
        return (
            f"kv_r AS (UPDATE {self._revision} SET revision = revision + 1 WHERE id = 1 AND EXISTS (SELECT FROM kv_w)"
            " RETURNING revision, clock_timestamp() AS at),"
            f" kv_n AS (SELECT pg_notify({self._channel}, kv_r.revision::text) FROM kv_r),"
            f" kv_e AS (INSERT INTO {self._changes} (revision, seq, table_name, op, key, row, version, time) {select})"
        )

    def puts(self, new: list[str], version: str, expires: str, fresh: str, old: list[str]) -> str:
        """The CTEs recording a put: the row written (``new``: its columns, ``version``,
        ``expires``, ``fresh`` whether it was inserted, all on ``kv_w``) over the row
        before (``old``: its columns on ``kv_o``; nulls where there was none)."""
        swept = f"(NOT {fresh} AND {version} = 1)"  # over an expired row: it is swept first
        created = f"({fresh} OR {version} = 1)"
        row = (
            f"'\\x94'::bytea || {packed_row(self.spec, new)}"
            f" || CASE WHEN {expires} IS NULL THEN {NIL} ELSE '\\xd3'::bytea || int8send({micros_sql(expires)}) END"
            f" || CASE WHEN {created} THEN {TRUE} || {NIL} ELSE {FALSE} || {packed_row(self.spec, old)} END"
        )
        select = (
            "SELECT kv_r.revision, kv_ev.seq, %(kv_name)s, kv_ev.op, %(kv_key)s, kv_ev.row, kv_ev.version, kv_r.at"
            " FROM kv_r CROSS JOIN kv_n CROSS JOIN kv_w LEFT JOIN kv_o ON true CROSS JOIN LATERAL (VALUES"
            f" (1, {OP_EXPIRE}::int2, {packed_row(self.spec, old)}, NULL::int8, {swept}),"
            f" (CASE WHEN {swept} THEN 2 ELSE 1 END, {OP_SET}::int2, {row}, {version}::int8, true)"
            ") AS kv_ev(seq, op, row, version, keep) WHERE kv_ev.keep"
        )
        return self._ctes(select)

    def delete(self, old: list[str], live: str) -> str:
        """The CTEs recording a delete of the row ``old`` (its columns on ``kv_w``),
        ``live`` whether it had not expired."""
        select = (
            f"SELECT kv_r.revision, 1, %(kv_name)s, CASE WHEN {live} THEN {OP_DELETE} ELSE {OP_EXPIRE} END::int2,"
            f" %(kv_key)s, {packed_row(self.spec, old)}, NULL::int8, kv_r.at FROM kv_r CROSS JOIN kv_n CROSS JOIN kv_w"
        )
        return self._ctes(select)
