"""The write side of PostgreSQL change feeds: the feed's two tables, the events a
transaction collects, and recording them in the writing transaction.

- ``kv_revision``: one row, the schema's revision counter and the revision the feed
  is compacted through;
- ``kv_changes``: one row per event, keyed by (revision, seq): the table, the op,
  the key (the order-preserving key encoding of :mod:`spi.codec`, so a key or prefix
  filter is a byte range), the row after the write (msgpack ``{column: value}``) and
  its version, the commit time. A bulk load's batch is stored as runs
  (:data:`OP_PUTS`): one row holds up to :data:`RUN` puts of one table, so a change-fed
  load writes a few large rows instead of one per event.

A transaction that wrote a change-fed table updates the counter row just before it
commits, inserts its events with the new revision (COPY) and sends a NOTIFY, all in
itself. The counter's row lock is held until the commit, so a second writer's update
waits for the first to commit (and, at SERIALIZABLE, fails as a conflict and is
retried): revisions follow commit order, and a reader that has seen revision R sees
every transaction up to R. The cost: change-fed writers of one schema commit one at a
time (they still run their statements concurrently until the commit).
"""

from __future__ import annotations

import datetime as dt
import functools
import struct
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, chain, repeat, starmap
from operator import itemgetter
from typing import Any, cast

import msgspec
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from providers.postgres.schema import derived_name, qualified, quoted
from providers.postgres.session import PgSession
from spi.codec import column_encoder, encode_key, key_column_encoder, to_micros
from spi.spec import TableSpec

CHANGES = "kv_changes"
REVISION = "kv_revision"
OP_PUT, OP_DELETE, OP_EXPIRE, OP_DROP, OP_PUTS, OP_SET, OP_SETS = 0, 1, 2, 3, 4, 5, 6
"""Stored ops: positions in :data:`spi.changes.OPS`, a dropped table's marker (which
ends its watchers; ``changes`` skips it), and a run of puts: its row is msgpack
``[[key, {column: value}, version], ...]`` (keys encoded), its key the first one's, its
seq the last one's (the run numbers ``seq - len + 1`` .. ``seq``), its version null.

:data:`OP_SET` is a put whose row is ``[{column: value}, expiry µs or null,
created (true, false or null: unknown), the row before or null]``, :data:`OP_SETS` a run of puts
that found no row, ``[[key, {column: value}, version, expiry µs or null], ...]``;
deletes and expiries store the removed row in ``row``. Puts and runs written before
those existed (:data:`OP_PUT`, :data:`OP_PUTS`, deletes with a null row) read with
``created``, ``prev`` and ``expires_at`` None."""
PUT_OPS = frozenset({OP_PUT, OP_PUTS, OP_SET, OP_SETS})
"""The stored ops of puts."""
RUN = 1000
"""Puts per run row (bounds what a reader decodes to resume inside a run)."""

Event = tuple[str, int, bytes, bytes | None, int | None]
"""A collected event: (table, op, encoded key, packed row or None, version or None);
for a run (:data:`OP_PUTS`): (table, op, first key, packed run, how many puts)."""

_pack = msgspec.msgpack.Encoder().encode


@functools.lru_cache(maxsize=16)
def feed_tables(schema: str) -> tuple[sa.Table, sa.Table]:
    """The ``kv_changes`` and ``kv_revision`` tables of ``schema``."""
    metadata = sa.MetaData(schema=quoted(schema))
    changes = sa.Table(
        CHANGES,
        metadata,
        sa.Column("revision", sa.BigInteger, primary_key=True),
        sa.Column("seq", sa.Integer, primary_key=True),
        sa.Column("table_name", sa.Text(collation="C"), nullable=False),
        sa.Column("op", sa.SmallInteger, nullable=False),
        sa.Column("key", pg.BYTEA, nullable=False),
        sa.Column("row", pg.BYTEA),
        sa.Column("version", sa.BigInteger),
        sa.Column("time", pg.TIMESTAMP(timezone=True), nullable=False),
    )
    revision = sa.Table(
        REVISION,
        metadata,
        sa.Column("id", sa.SmallInteger, primary_key=True),
        sa.Column("revision", sa.BigInteger, nullable=False),
        sa.Column("compacted", sa.BigInteger, nullable=False),
    )
    return changes, revision


def channel(schema: str) -> str:
    """The NOTIFY channel of ``schema``'s feed."""
    return derived_name("kvctl_changes", schema)


def ensure_feed(tx: PgSession, schema: str) -> None:
    """Create the feed's tables if missing (the caller holds the DDL lock)."""
    changes, revision = feed_tables(schema)
    if not tx.relation_exists(schema, CHANGES):
        tx.execute(sa.schema.CreateTable(changes))
        # A run's row is a large value: stored out of line without pglz, which made
        # a change-fed load cost twice as much (msgpack rows compress little anyway).
        table = qualified(tx.dialect, schema, CHANGES)
        tx.execute(sa.text(f"ALTER TABLE {table} ALTER COLUMN row SET STORAGE EXTERNAL"))
    tx.execute(sa.schema.CreateTable(revision, if_not_exists=True))
    tx.execute(pg.insert(revision).values(id=1, revision=0, compacted=0).on_conflict_do_nothing())
    # Retention finds the newest event older than its cutoff with one probe of this index.
    index = qualified(tx.dialect, derived_name("kv_changes_time", schema))
    tx.execute(sa.text(f"CREATE INDEX IF NOT EXISTS {index} ON {qualified(tx.dialect, schema, CHANGES)} (time)"))


def put_event(
    spec: TableSpec,
    key: tuple[Any, ...],
    values: dict[str, Any],
    version: int,
    expires: int | None,
    prev: dict[str, Any] | None,
    created: bool | None = None,
) -> Event:
    """The event of a write that left ``values`` at ``version`` under ``key``, expiring
    at ``expires`` (µs; None: never), over the live row ``prev`` (None: none);
    ``created``: whether it found no live row (None: ``prev`` is None)."""
    made = prev is None if created is None else created
    return (spec.name, OP_SET, encode_key(spec.key_types, key), _pack((values, expires, made, prev)), version)


def put_runs(spec: TableSpec, keys: list[Any], rows: list[Sequence[Any]]) -> list[Event]:
    """The events of inserts that left ``rows`` (validated values of every column in
    spec order, the version, then maybe the expiry) under ``keys`` (a value each for a
    one-column key, else tuples), as runs of :data:`RUN` (see :data:`OP_SETS`): a
    batch's events in a few C-level passes and one msgpack call per run."""
    n = len(spec.columns)
    if len(spec.primary_key) == 1:
        encoded = column_encoder(spec.key_types[0])(keys)
    else:
        encoded = key_column_encoder(spec.key_types)(list(zip(*keys)))
    expiries: Iterable[int | None] = repeat(None)
    if rows and len(rows[0]) > n + 1:
        expiries = [None if e is None else to_micros(e) for e in map(itemgetter(n + 1), rows)]
    puts = list(
        zip(
            encoded,
            starmap(_row_struct(spec.columns), map(itemgetter(slice(0, n)), rows)),
            map(itemgetter(n), rows),
            expiries,
        )
    )
    return [
        (spec.name, OP_SETS, encoded[at], _pack(puts[at : at + RUN]), len(puts[at : at + RUN]))
        for at in range(0, len(puts), RUN)
    ]


@functools.lru_cache(maxsize=64)
def _row_struct(columns: tuple[str, ...]) -> type[msgspec.Struct]:
    """A struct that packs exactly as the dict ``{column: value}`` does (fields renamed
    to the column names, which need not be identifiers), in half the time."""
    fields = [f"f{i}" for i in range(len(columns))]
    return msgspec.defstruct("PackedRow", fields, rename=dict(zip(fields, columns)), gc=False)


def delete_event(spec: TableSpec, key: tuple[Any, ...], prev: dict[str, Any] | None, op: int = OP_DELETE) -> Event:
    """The event of the removal of the row ``prev`` under ``key`` (``op``: a delete or an expiry)."""
    return (spec.name, op, encode_key(spec.key_types, key), None if prev is None else _pack(prev), None)


def next_revision(tx: PgSession, schema: str) -> tuple[int, Any]:
    """Take the next revision (row-locking the counter until the commit); it and the
    server's clock."""
    _, revision = feed_tables(schema)
    stmt = (
        sa.update(revision)
        .where(revision.c.id == 1)
        .values(revision=revision.c.revision + 1)
        .returning(revision.c.revision, sa.func.clock_timestamp())
    )
    number, now = tx.execute(stmt).one()
    return int(number), now


SMALL = 64
"""Up to this many events are recorded by one statement; more (or a load's) by a COPY."""


def record(tx: PgSession, schema: str, events: list[Event]) -> int:
    """Record ``events`` under the next revision, in ``tx``; the revision."""
    if len(events) > SMALL or events[0][1] == OP_SETS:  # a load's runs: large values, binary COPY
        return _record_many(tx, schema, events)
    return _record_few(tx, schema, events)


def _numbered(events: list[Event]) -> tuple[list[int], list[int | None]]:
    """Each stored row's seq (a run's is its last put's) and version (a run's null)."""
    if OP_SETS not in map(itemgetter(1), events):
        return list(range(1, len(events) + 1)), [e[4] for e in events]
    sizes = [e[4] if e[1] == OP_SETS else 1 for e in events]
    return list(accumulate(cast(list[int], sizes))), [None if e[1] == OP_SETS else e[4] for e in events]


def _record_many(tx: PgSession, schema: str, events: list[Event]) -> int:
    """Take the revision, COPY the events, notify (a bulk load's batch)."""
    from psycopg import sql

    number, now = next_revision(tx, schema)
    statement = sql.SQL(
        "COPY {} (revision, seq, table_name, op, key, row, version, time) FROM STDIN (FORMAT BINARY)"
    ).format(sql.Identifier(schema, CHANGES))
    with tx.errors(), tx.driver_connection().cursor() as cursor, cursor.copy(statement) as copy:
        copy.write(_binary_copy(number, now, events))
    notify(tx, schema, number)
    return number


_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # the signature, no flags, no header extension
_COPY_END = b"\xff\xff"
_NULL = b"\xff\xff\xff\xff"
_INT4 = struct.Struct(">i").pack
_PG_EPOCH = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)


def _binary_copy(number: int, now: dt.datetime, events: list[Event]) -> bytes:
    """``events`` under revision ``number`` at ``now`` in PostgreSQL's binary COPY
    format, built column by column in C-level loops (psycopg's per-row writer costs
    several times more)."""
    head = struct.pack(">hiqi", 8, 8, number, 4)  # 8 fields; the revision; the seq's length
    micros = (now - _PG_EPOCH) // dt.timedelta(microseconds=1)
    tables, ops, keys, rows = (tuple(map(itemgetter(i), events)) for i in range(4))
    seqs, versions = _numbered(events)
    names = {t: _INT4(len(t.encode())) + t.encode() for t in set(tables)}
    op_fields = {op: struct.pack(">ih", 2, op) for op in set(ops)}
    fields = (
        repeat(head),
        map(_INT4, seqs),
        map(names.__getitem__, tables),
        map(op_fields.__getitem__, ops),
        *_bytea(keys),
        *_bytea(rows),
        map(_VERSION, repeat(8), versions) if None not in versions else map(_nullable_version, versions),
        repeat(struct.pack(">iq", 8, micros)),
    )
    # A join per row then one of the rows: twice as fast as one join of every field.
    return b"".join(chain((_COPY_SIGNATURE,), map(b"".join, zip(*fields)), (_COPY_END,)))


_VERSION = struct.Struct(">iq").pack


def _nullable_version(version: int | None) -> bytes:
    return _NULL if version is None else _VERSION(8, version)


def _nullable_bytea(value: bytes | None) -> bytes:
    return _NULL if value is None else _INT4(len(value)) + value


def _bytea(values: tuple[bytes | None, ...]) -> tuple[Iterator[bytes], Iterable[bytes]]:
    """A bytea column's fields as two parts each (its length, its bytes)."""
    if None in values:
        return map(_nullable_bytea, values), repeat(b"")
    present = cast(tuple[bytes, ...], values)
    return map(_INT4, map(len, present)), present


def _record_few(tx: PgSession, schema: str, events: list[Event]) -> int:
    """One statement, one round trip: take the revision, insert the events from
    arrays, notify."""
    from psycopg import sql

    statement = sql.SQL(
        "WITH r AS (UPDATE {revision} SET revision = revision + 1 WHERE id = 1"
        " RETURNING revision, clock_timestamp() AS at),"
        " n AS (SELECT pg_notify({channel}, r.revision::text) FROM r)"
        " INSERT INTO {changes} (revision, seq, table_name, op, key, row, version, time)"
        " SELECT r.revision, e.seq, e.name, e.op, e.key, e.row, e.version, r.at FROM r, n,"
        " unnest(%s::int4[], %s::text[], %s::int2[], %s::bytea[], %s::bytea[], %s::int8[])"
        " AS e(seq, name, op, key, row, version) RETURNING revision"
    ).format(
        revision=sql.Identifier(schema, REVISION),
        channel=sql.Literal(channel(schema)),
        changes=sql.Identifier(schema, CHANGES),
    )
    tables, ops, keys, rows = (list(map(itemgetter(i), events)) for i in range(4))
    seqs, versions = _numbered(events)
    with tx.errors():
        found = tx.driver_connection().execute(statement, (seqs, tables, ops, keys, rows, versions)).fetchone()
    assert found is not None  # a row per event
    return int(found[0])


def notify(tx: PgSession, schema: str, number: int) -> None:
    """Wake the schema's watchers when ``tx`` commits."""
    tx.execute(sa.select(sa.func.pg_notify(channel(schema), str(number))))


def touch(tx: PgSession, schema: str, dropped: str | None = None) -> None:
    """Take a revision without events, so watchers look again (a change-fed table
    altered); for a ``dropped`` table, forget its events and leave its marker."""
    number, now = next_revision(tx, schema)
    if dropped is not None:
        changes, _ = feed_tables(schema)
        tx.execute(sa.delete(changes).where(changes.c.table_name == dropped))
        values = {"revision": number, "seq": 1, "table_name": dropped, "op": OP_DROP, "key": b"", "time": now}
        tx.execute(sa.insert(changes).values(**values))
    notify(tx, schema, number)


__all__ = [
    "OP_DELETE",
    "OP_DROP",
    "OP_EXPIRE",
    "OP_PUT",
    "OP_PUTS",
    "OP_SET",
    "OP_SETS",
    "PUT_OPS",
    "Event",
    "channel",
    "delete_event",
    "ensure_feed",
    "feed_tables",
    "put_event",
    "put_runs",
    "record",
    "touch",
]
